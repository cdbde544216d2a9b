package procfs

import "bytes"

// mapping is one file-backed line of /proc/PID/maps.
type mapping struct {
	Major, Minor uint32 // device of the mapped file
	Ino          uint64 // inode of the mapped file, never 0
	// Path is the pathname field, as printed by the kernel (newlines escaped
	// as \012, possibly ending in " (deleted)"); it aliases the input.
	Path []byte
}

// parseMaps calls fn for each line of a /proc/PID/maps text (proc(5):
// "address perms offset dev inode pathname", dev as hex major:minor, inode
// in decimal) whose inode is not 0, until fn returns false. Anonymous
// mappings, [heap], [stack] and the like have inode 0 and are skipped
// without looking at the rest of the line. Malformed lines are skipped.
func parseMaps(b []byte, fn func(mapping) bool) {
	for len(b) > 0 {
		line := b
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			line, b = b[:i], b[i+1:]
		} else {
			b = nil
		}
		m, ok := parseMapsLine(line)
		if ok && !fn(m) {
			return
		}
	}
}

// parseMapsLine parses one maps line; ok is false for inode 0 or a line that
// does not have the expected fields.
func parseMapsLine(line []byte) (m mapping, ok bool) {
	// Skip address, perms and offset: three fields, each followed by one
	// space.
	for n := 0; n < 3; n++ {
		i := bytes.IndexByte(line, ' ')
		if i < 0 {
			return mapping{}, false
		}
		line = line[i+1:]
	}
	var major, minor uint64
	if major, line, ok = hexUntil(line, ':'); !ok {
		return mapping{}, false
	}
	if minor, line, ok = hexUntil(line, ' '); !ok {
		return mapping{}, false
	}
	var ino uint64
	i := 0
	for ; i < len(line) && line[i] >= '0' && line[i] <= '9'; i++ {
		if ino > (1<<64-1)/10-1 {
			return mapping{}, false
		}
		ino = ino*10 + uint64(line[i]-'0')
	}
	if i == 0 || ino == 0 || major > 1<<32-1 || minor > 1<<32-1 {
		return mapping{}, false
	}
	if i < len(line) && line[i] != ' ' {
		return mapping{}, false
	}
	return mapping{
		Major: uint32(major),
		Minor: uint32(minor),
		Ino:   ino,
		Path:  bytes.TrimLeft(line[i:], " "),
	}, true
}

// hexUntil parses the hex digits of b up to the byte sep and returns the
// value and the rest after sep.
func hexUntil(b []byte, sep byte) (v uint64, rest []byte, ok bool) {
	i := 0
	for ; i < len(b) && b[i] != sep; i++ {
		c := b[i]
		var d byte
		switch {
		case c >= '0' && c <= '9':
			d = c - '0'
		case c >= 'a' && c <= 'f':
			d = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			d = c - 'A' + 10
		default:
			return 0, nil, false
		}
		if v > 1<<32 {
			return 0, nil, false
		}
		v = v<<4 | uint64(d)
	}
	if i == 0 || i == len(b) {
		return 0, nil, false
	}
	return v, b[i+1:], true
}
