package mounts

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/moby/sys/mountinfo"
)

const (
	// maxLine is the longest line Parse looks at; longer lines are skipped.
	maxLine = 1 << 20
	// maxMountinfoLine keeps a line within the 64 KiB token limit of the
	// bufio.Scanner inside mountinfo.GetMountsFromReader.
	maxMountinfoLine = 60 << 10
	// maxOption is the longest single option kept in an overlong
	// mountinfo line (lowerdir=... lists are what make lines long).
	maxOption = 4 << 10
)

type parser struct {
	mounts  []*mountinfo.Info // nil where a mountinfo line waits for the batch
	miLines []string          // pending mountinfo lines
	miIdx   []int             // their slots in mounts
	counts  map[Format]int
	order   []Format
	skipped int
	header  *findmntHeader
}

func newParser() *parser {
	return &parser{counts: make(map[Format]int, 4)}
}

func (p *parser) run(r io.Reader) error {
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		line, tooLong, err := readLine(br)
		if err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("read mount table: %w", err)
		}
		if tooLong {
			p.skipped++
		} else if line != "" || err == nil {
			p.line(line)
		}
		if err != nil {
			return p.flushMountinfo()
		}
	}
}

// readLine returns the next line without its line ending. Lines longer
// than maxLine are consumed and reported as tooLong. err is io.EOF after
// the last line.
func readLine(br *bufio.Reader) (line string, tooLong bool, err error) {
	var buf []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if !tooLong {
			if len(buf)+len(chunk) > maxLine+2 {
				tooLong, buf = true, nil
			} else {
				buf = append(buf, chunk...)
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if tooLong {
			return "", true, err
		}
		return strings.TrimRight(string(buf), "\r\n"), false, err
	}
}

func (p *parser) line(line string) {
	line = strings.TrimSpace(line)
	if line == "" || line[0] == '#' {
		return
	}
	if h := parseFindmntHeader(line); h != nil {
		p.header = h
		return
	}
	if looksLikeMountinfo(line) {
		if len(line) > maxMountinfoLine {
			line = shortenOptions(line)
			if len(line) > maxMountinfoLine {
				p.skipped++
				return
			}
		}
		p.miIdx = append(p.miIdx, len(p.mounts))
		p.miLines = append(p.miLines, line)
		p.mounts = append(p.mounts, nil)
		p.count(FormatMountinfo)
		return
	}
	if m := parseMountLine(line); m != nil {
		p.add(m, FormatMount)
		return
	}
	if m := parseProcMountsLine(line); m != nil {
		p.add(m, FormatProcMounts)
		return
	}
	if p.header != nil {
		if m := p.header.parseRow(line); m != nil {
			p.add(m, FormatFindmnt)
			return
		}
	}
	p.skipped++
}

func (p *parser) add(m *mountinfo.Info, f Format) {
	p.mounts = append(p.mounts, m)
	p.count(f)
}

func (p *parser) count(f Format) {
	if p.counts[f] == 0 {
		p.order = append(p.order, f)
	}
	p.counts[f]++
}

// flushMountinfo parses the pending mountinfo lines in one call and, if
// that fails, line by line, so that one bad line costs only itself.
func (p *parser) flushMountinfo() error {
	if len(p.miLines) == 0 {
		return nil
	}
	infos, err := parseMountinfo(strings.Join(p.miLines, "\n"))
	if errors.Is(err, ErrNotSupported) {
		return fmt.Errorf("parse %d mountinfo lines: %w", len(p.miLines), err)
	}
	if err != nil || len(infos) != len(p.miLines) {
		infos = make([]*mountinfo.Info, len(p.miLines))
		for i, l := range p.miLines {
			one, err := parseMountinfo(l)
			if err == nil && len(one) == 1 {
				infos[i] = one[0]
			}
		}
	}
	for i, idx := range p.miIdx {
		m := infos[i]
		if m == nil || !strings.HasPrefix(m.Mountpoint, "/") {
			p.skipped++
			p.counts[FormatMountinfo]--
			continue
		}
		p.mounts[idx] = m
	}
	return nil
}

func (p *parser) table() (*Table, error) {
	t := &Table{Skipped: p.skipped, Mounts: make([]*mountinfo.Info, 0, len(p.mounts))}
	for _, m := range p.mounts {
		if m != nil {
			t.Mounts = append(t.Mounts, m)
		}
	}
	if len(t.Mounts) == 0 {
		return nil, fmt.Errorf("parse mount table (%d lines skipped): %w", p.skipped, ErrNoMounts)
	}
	best := 0
	for _, f := range p.order {
		if n := p.counts[f]; n > best {
			t.Format, best = f, n
		}
	}
	return t, nil
}

// looksLikeMountinfo reports whether mountinfo.GetMountsFromReader would
// accept line: at least 10 space-separated fields, numeric IDs, a
// "maj:min" pair, an absolute mountpoint and a lone "-" separator between
// field 7 and the fourth field from the end. It checks the shape only.
func looksLikeMountinfo(line string) bool {
	if strings.Count(line, " ") < 9 || !strings.Contains(line, " - ") {
		return false
	}
	f := strings.SplitN(line, " ", 6)
	if len(f) < 6 || !isDigits(f[0]) || !isDigits(f[1]) || !strings.HasPrefix(f[4], "/") {
		return false
	}
	maj, min, ok := strings.Cut(f[2], ":")
	if !ok || !isDigits(maj) || !isDigits(min) {
		return false
	}
	fields := strings.Split(line, " ")
	for i := len(fields) - 4; i > 5; i-- {
		if fields[i] == "-" {
			return true
		}
	}
	return false
}

// shortenOptions drops comma-separated options longer than maxOption
// (overlay lowerdir=, upperdir=, workdir=) from an overlong line.
func shortenOptions(line string) string {
	fields := strings.Split(line, " ")
	for i, f := range fields {
		if len(f) <= maxOption || !strings.Contains(f, "=") {
			continue
		}
		opts := strings.Split(f, ",")
		kept := opts[:0]
		for _, o := range opts {
			if len(o) <= maxOption {
				kept = append(kept, o)
			}
		}
		if len(kept) == 0 {
			kept = append(kept, "rw")
		}
		fields[i] = strings.Join(kept, ",")
	}
	return strings.Join(fields, " ")
}

// parseMountLine parses a line of mount(8) output:
// "SOURCE on MOUNTPOINT type FSTYPE (OPTIONS)" with an optional " [LABEL]".
func parseMountLine(line string) *mountinfo.Info {
	if strings.HasSuffix(line, "]") {
		if i := strings.LastIndex(line, " ["); i > 0 {
			line = line[:i]
		}
	}
	if !strings.HasSuffix(line, ")") {
		return nil
	}
	paren := strings.LastIndex(line, " (")
	if paren < 0 {
		return nil
	}
	opts := line[paren+2 : len(line)-1]
	head := line[:paren]
	ti := strings.LastIndex(head, " type ")
	if ti < 0 {
		return nil
	}
	fstype := head[ti+len(" type "):]
	if !validFSType(fstype) {
		return nil
	}
	head = head[:ti]
	// The mountpoint is escaped (no spaces); the source may not be.
	oi := strings.LastIndex(head, " on /")
	if oi < 0 {
		if !strings.HasPrefix(head, "on /") {
			return nil
		}
		oi = -1 // empty source
	}
	src, mp := "", head[oi+len(" on "):]
	if oi >= 0 {
		src = head[:oi]
	}
	if strings.ContainsAny(mp, " \t") {
		return nil
	}
	return &mountinfo.Info{
		Mountpoint: unescapeOctal(mp),
		FSType:     unescapeOctal(fstype),
		Source:     unescapeOctal(src),
		Options:    opts,
	}
}

// parseProcMountsLine parses a /proc/mounts or fstab-like line:
// "SOURCE MOUNTPOINT FSTYPE OPTIONS DUMP PASS".
func parseProcMountsLine(line string) *mountinfo.Info {
	f := strings.Fields(line)
	if len(f) != 6 || !isDigits(f[4]) || !isDigits(f[5]) {
		return nil
	}
	if !strings.HasPrefix(f[1], "/") || !validFSType(f[2]) {
		return nil
	}
	return &mountinfo.Info{
		Source:     unescapeOctal(f[0]),
		Mountpoint: unescapeOctal(f[1]),
		FSType:     unescapeOctal(f[2]),
		Options:    f[3],
	}
}

// findmntHeader is the column layout of a findmnt table.
type findmntHeader struct {
	names  []string
	starts []int // rune offset of each column name in the header line
	target int   // index of TARGET
	fstype int   // index of FSTYPE
}

// parseFindmntHeader recognises findmnt's header line: upper-case column
// names including TARGET and FSTYPE.
func parseFindmntHeader(line string) *findmntHeader {
	if !strings.Contains(line, "TARGET") || !strings.Contains(line, "FSTYPE") {
		return nil
	}
	h := &findmntHeader{target: -1, fstype: -1}
	col, inWord := 0, false
	for _, r := range line {
		switch {
		case unicode.IsSpace(r):
			inWord = false
		case !inWord:
			h.starts = append(h.starts, col)
			inWord = true
		}
		col++
	}
	h.names = strings.Fields(line)
	for i, n := range h.names {
		for _, r := range n {
			if !(r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune(":%_.-", r)) {
				return nil
			}
		}
		switch n {
		case "TARGET":
			h.target = i
		case "FSTYPE":
			h.fstype = i
		}
	}
	if h.target < 0 || h.fstype < 0 {
		return nil
	}
	return h
}

// treeRunes are the characters findmnt draws its tree with.
const treeRunes = "├└│─|`-"

func isTree(s string) bool {
	for _, r := range s {
		if !strings.ContainsRune(treeRunes, r) {
			return false
		}
	}
	return s != ""
}

// parseRow parses one findmnt row. Cells are split on white space; if
// that gives the wrong number of cells (an empty SOURCE, say), they are
// cut at the header's column offsets instead.
func (h *findmntHeader) parseRow(line string) *mountinfo.Info {
	var cells []string
	for _, f := range strings.Fields(line) {
		if !isTree(f) {
			cells = append(cells, f)
		}
	}
	if len(cells) != len(h.names) {
		cells = h.cutColumns(line)
	}
	target := strings.TrimLeft(cells[h.target], treeRunes+" ")
	fstype := cells[h.fstype]
	if !strings.HasPrefix(target, "/") || strings.ContainsAny(target, " \t") || !validFSType(fstype) {
		return nil
	}
	m := &mountinfo.Info{Mountpoint: unescapeFindmnt(target), FSType: unescapeFindmnt(fstype)}
	var opts []string
	for i, name := range h.names {
		c := cells[i]
		switch name {
		case "SOURCE":
			m.Source = c
			if strings.HasSuffix(c, "]") {
				if j := strings.LastIndex(c, "["); j >= 0 && strings.HasPrefix(c[j+1:], "/") {
					m.Source, m.Root = c[:j], unescapeFindmnt(c[j+1:len(c)-1])
				}
			}
			m.Source = unescapeFindmnt(m.Source)
		case "FSROOT":
			m.Root = unescapeFindmnt(c)
		case "OPTIONS", "VFS-OPTIONS":
			if c != "" {
				opts = append(opts, c)
			}
		case "FS-OPTIONS":
			m.VFSOptions = c
		case "ID":
			m.ID, _ = strconv.Atoi(c)
		case "PARENT":
			m.Parent, _ = strconv.Atoi(c)
		case "MAJ:MIN":
			maj, min, _ := strings.Cut(c, ":")
			m.Major, _ = strconv.Atoi(maj)
			m.Minor, _ = strconv.Atoi(min)
		}
	}
	m.Options = strings.Join(opts, ",")
	return m
}

// cutColumns splits line at the header's column offsets (in runes).
func (h *findmntHeader) cutColumns(line string) []string {
	n := utf8.RuneCountInString(line)
	runes := make([]rune, 0, n)
	for _, r := range line {
		runes = append(runes, r)
	}
	cells := make([]string, len(h.starts))
	for i, start := range h.starts {
		end := n
		if i+1 < len(h.starts) {
			end = min(h.starts[i+1], n)
		}
		if start < end {
			cells[i] = strings.TrimSpace(string(runes[start:end]))
		}
	}
	return cells
}

func validFSType(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-' || c == '+') {
			return false
		}
	}
	return true
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// unescapeOctal undoes the kernel's escaping of " \t\n\\" as \NNN
// (proc(5); the same rule as mountinfo.GetMountsFromReader: only \0NN and
// \1NN, so non-ASCII bytes are never produced from escapes).
func unescapeOctal(s string) string {
	if strings.IndexByte(s, '\\') < 0 {
		return s
	}
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '\\' && i+3 < len(s) && (s[i+1] == '0' || s[i+1] == '1') &&
			isOctal(s[i+2]) && isOctal(s[i+3]) {
			c = (s[i+1]-'0')<<6 | (s[i+2]-'0')<<3 | (s[i+3] - '0')
			i += 3
		}
		b = append(b, c)
	}
	return string(b)
}

// unescapeFindmnt undoes findmnt's \xHH escapes (libsmartcols writes
// spaces, backslashes and control characters that way).
func unescapeFindmnt(s string) string {
	if strings.IndexByte(s, '\\') < 0 {
		return s
	}
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '\\' && i+3 < len(s) && s[i+1] == 'x' {
			if v, err := strconv.ParseUint(s[i+2:i+4], 16, 8); err == nil {
				b = append(b, byte(v))
				i += 3
				continue
			}
		}
		b = append(b, c)
	}
	return string(b)
}

func isOctal(c byte) bool { return c >= '0' && c <= '7' }
