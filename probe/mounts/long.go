package mounts

import (
	"bytes"
	"errors"
	"fmt"
	"path"
	"strconv"
	"strings"

	"github.com/moby/sys/mountinfo"
)

// longMountinfo parses a mountinfo line longer than the library's token
// limit (overlay lowerdir= lists, NFS and CIFS option strings): fields
// longer than maxField are set aside behind a placeholder that cannot
// occur in a mountinfo line (a NUL byte and an index), the short line is
// parsed by the library, and the fields are put back, unescaped where the
// library unescapes (root, mountpoint, fstype, source). A line that still
// does not parse becomes an unreadable entry (see [FSTypeUnreadable]).
func (p *parser) longMountinfo(b []byte) error {
	fields := bytes.Split(b, []byte(" "))
	var aside []string
	for i, f := range fields {
		if len(f) > maxField {
			fields[i] = []byte("\x00" + strconv.Itoa(len(aside)))
			aside = append(aside, string(f))
		}
	}
	var m *mountinfo.Info
	if short := bytes.Join(fields, []byte(" ")); len(short) <= maxMountinfoLine {
		infos, err := parseMountinfo(short)
		if errors.Is(err, ErrNotSupported) {
			return fmt.Errorf("parse a mountinfo line: %w", err)
		}
		if err == nil && len(infos) == 1 {
			m = infos[0]
			putBack(m, aside)
		}
	}
	if m == nil {
		m = unreadableMount(b)
	}
	if m == nil || !strings.HasPrefix(m.Mountpoint, "/") {
		p.skipped++
		return nil
	}
	if m.FSType == FSTypeUnreadable {
		p.skipped++
	}
	p.add(m, FormatMountinfo)
	return nil
}

// putBack replaces the placeholders longMountinfo left in m's fields.
func putBack(m *mountinfo.Info, aside []string) {
	one := func(s string, unescape bool) string {
		if len(s) < 2 || s[0] != 0 {
			return s
		}
		n, err := strconv.Atoi(s[1:])
		if err != nil || n < 0 || n >= len(aside) {
			return s
		}
		if unescape {
			return unescapeOctal(aside[n])
		}
		return aside[n]
	}
	m.Root, m.Mountpoint = one(m.Root, true), one(m.Mountpoint, true)
	m.FSType, m.Source = one(m.FSType, true), one(m.Source, true)
	m.Options, m.VFSOptions = one(m.Options, false), one(m.VFSOptions, false)
	if strings.IndexByte(m.Optional, 0) >= 0 {
		opt := strings.Split(m.Optional, " ")
		for i := range opt {
			opt[i] = one(opt[i], false)
		}
		m.Optional = strings.Join(opt, " ")
	}
}

// unreadable records a line longer than maxLine, of which head is the
// start: it is counted in Skipped, and when head shows a mountpoint it
// stays in the table as an unreadable entry.
func (p *parser) unreadable(head []byte) {
	p.skipped++
	head = bytes.TrimSpace(head)
	m, f := unreadableMount(head), FormatMountinfo
	if m == nil {
		m, f = unreadableOther(string(head))
	}
	if m == nil {
		p.addUnreadable(mightName(string(head)), FormatMount)
		if p.header != nil {
			p.addUnreadable(p.header.mightName(string(head)), FormatFindmnt)
		}
		return
	}
	if p.keep != nil && f == FormatMountinfo && !p.keep(mountinfoField(head, 4)) {
		return
	}
	p.add(m, f)
}

// unreadableMount is the entry for a mountinfo line that could not be
// parsed, from its first five fields (ID, parent, major:minor, root,
// mountpoint), or nil when those do not have mountinfo's shape.
func unreadableMount(line []byte) *mountinfo.Info {
	var f [5][]byte
	rest := line
	for i := range f {
		j := bytes.IndexByte(rest, ' ')
		if j < 0 {
			return nil // a mountinfo line goes on after its mountpoint
		}
		f[i], rest = rest[:j], rest[j+1:]
	}
	maj, min, ok := bytes.Cut(f[2], []byte(":"))
	if !isDigits(string(f[0])) || !isDigits(string(f[1])) || !ok || !isDigits(string(maj)) || !isDigits(string(min)) ||
		len(f[4]) == 0 || f[4][0] != '/' {
		return nil
	}
	m := &mountinfo.Info{Root: unescapeOctal(string(f[3])), Mountpoint: unescapeOctal(cleanRaw(string(f[4]))), FSType: FSTypeUnreadable}
	m.ID, _ = strconv.Atoi(string(f[0]))
	m.Parent, _ = strconv.Atoi(string(f[1]))
	m.Major, _ = strconv.Atoi(string(maj))
	m.Minor, _ = strconv.Atoi(string(min))
	return m
}

// unreadableOther is the entry for the start of an overlong /proc/mounts
// or mount(8) line ("SOURCE MOUNTPOINT FSTYPE ..." or "SOURCE on
// MOUNTPOINT type FSTYPE ..."), or nil when it has neither shape.
func unreadableOther(head string) (*mountinfo.Info, Format) {
	if f := strings.Fields(head); len(f) > 3 && strings.HasPrefix(f[1], "/") && validFSType(f[2]) {
		return &mountinfo.Info{Source: unescapeOctal(f[0]), Mountpoint: unescapeOctal(cleanRaw(f[1])), FSType: FSTypeUnreadable}, FormatProcMounts
	}
	if i := strings.Index(head, " on /"); i >= 0 {
		rest := head[i+len(" on "):]
		if j := strings.Index(rest, " type "); j > 0 && !strings.ContainsAny(rest[:j], " \t") {
			return &mountinfo.Info{Source: unescapeOctal(head[:i]), Mountpoint: unescapeOctal(cleanRaw(rest[:j])), FSType: FSTypeUnreadable}, FormatMount
		}
	}
	return nil, ""
}

// needsClean reports whether a raw (still escaped) mountpoint has a
// trailing slash, "//", or a "." or ".." component as written. Escaped
// characters are not looked at: "\056\056" is a directory named "..",
// not the parent.
func needsClean(mp []byte) bool {
	return len(mp) > 1 && (mp[len(mp)-1] == '/' || bytes.Contains(mp, []byte("//")) || bytes.Contains(mp, []byte("/.")))
}

// cleanRaw cleans a raw mountpoint with path.Clean before its escapes are
// undone (see needsClean).
func cleanRaw(mp string) string {
	if needsClean([]byte(mp)) {
		return path.Clean(mp)
	}
	return mp
}

// replaceField returns line with its i-th space-separated field replaced.
func replaceField(line []byte, i int, v string) []byte {
	fields := bytes.Split(line, []byte(" "))
	if i >= len(fields) {
		return line
	}
	fields[i] = []byte(v)
	return bytes.Join(fields, []byte(" "))
}
