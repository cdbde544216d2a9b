package mounts

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"path"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/moby/sys/mountinfo"
)

const (
	// maxLine is the longest line Parse reads whole; longer lines are
	// skipped (see [FSTypeUnreadable]).
	maxLine = 1 << 20
	// maxMountinfoLine keeps a line within the 64 KiB token limit of the
	// bufio.Scanner inside mountinfo.GetMountsFromReader. Longer mountinfo
	// lines are passed to it with their long fields set aside.
	maxMountinfoLine = 60 << 10
	// maxField is the longest field of a long mountinfo line that is
	// passed to the library as it is; longer ones (overlay lowerdir lists,
	// NFS option strings) are set aside and put back after parsing.
	maxField = 4 << 10
	// headBytes is how much of a skipped overlong line is kept to name
	// its mountpoint.
	headBytes = 64 << 10
)

// FSTypeUnreadable is the FSType of a mount whose table line could not be
// read (longer than 1 MiB, or a mountinfo line the parser rejected) but
// whose mountpoint could: the entry stays in the table, so that a path
// under that mountpoint is never classified from a shorter prefix.
// [Classify] gives it [ClassUnknown].
const FSTypeUnreadable = ""

type parser struct {
	mounts  []*mountinfo.Info // nil where a mountinfo line waits for the batch
	batch   []byte            // pending mountinfo lines, each ending in '\n'
	miIdx   []int             // their slots in mounts
	counts  map[Format]int
	order   []Format
	skipped int
	header  *findmntHeader
	// keep, when set, drops mountinfo lines whose raw (still escaped)
	// mountpoint field it rejects, before they are parsed.
	keep func(mountpoint []byte) bool
}

func newParser() *parser {
	return &parser{counts: make(map[Format]int, 4)}
}

func (p *parser) run(r io.Reader) error {
	br := bufio.NewReaderSize(r, 64<<10)
	var long []byte
	for {
		line, tooLong, err := readLine(br, &long)
		if err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("read mount table: %w", err)
		}
		if tooLong {
			p.unreadable(line)
		} else if err := p.line(line); err != nil {
			return err
		}
		if err != nil {
			return p.flushMountinfo()
		}
	}
}

// readLine returns the next line without its line ending. The line may
// point into br's buffer or into *long, and is valid until the next call.
// Lines longer than maxLine are consumed and reported as tooLong, with
// line holding their first headBytes bytes. err is io.EOF after the last
// line.
func readLine(br *bufio.Reader, long *[]byte) (line []byte, tooLong bool, err error) {
	line, err = br.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		buf := append((*long)[:0], line...)
		for errors.Is(err, bufio.ErrBufferFull) {
			line, err = br.ReadSlice('\n')
			if !tooLong && len(buf)+len(line) > maxLine+2 {
				tooLong = true
			}
			if !tooLong {
				buf = append(buf, line...)
			}
		}
		*long = buf[:0]
		if tooLong {
			return buf[:min(len(buf), headBytes)], true, err
		}
		line = buf
	}
	return bytes.TrimRight(line, "\r\n"), false, err
}

func (p *parser) line(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) == 0 || b[0] == '#' {
		return nil
	}
	if looksLikeMountinfo(b) {
		if p.keep != nil && !p.keep(mountinfoField(b, 4)) {
			return nil
		}
		if mp := mountinfoField(b, 4); needsClean(mp) {
			b = replaceField(b, 4, path.Clean(string(mp)))
		}
		if len(b) > maxMountinfoLine {
			return p.longMountinfo(b)
		}
		p.miIdx = append(p.miIdx, len(p.mounts))
		p.batch = append(append(p.batch, b...), '\n')
		p.mounts = append(p.mounts, nil)
		p.count(FormatMountinfo)
		if len(p.miIdx) >= batchLines || len(p.batch) >= batchBytes {
			return p.flushMountinfo()
		}
		return nil
	}
	line := string(b)
	if h := parseFindmntHeader(line); h != nil {
		p.header = h
		return nil
	}
	if m, cands := parseMountLine(line); m != nil {
		p.add(m, FormatMount)
		return nil
	} else if cands != nil {
		p.skipped++
		p.addUnreadable(cands, FormatMount)
		return nil
	}
	if m := parseProcMountsLine(line); m != nil {
		p.add(m, FormatProcMounts)
		return nil
	}
	if p.header != nil {
		if m := p.header.parseRow(line); m != nil {
			p.add(m, FormatFindmnt)
			return nil
		}
	}
	p.skip(b)
	return nil
}

// skip records a line that fits no format. A mountinfo line mangled
// after its mountpoint (no separator, too few fields) still says which
// path it covers; any other line stays in the table as unreadable
// entries for every mountpoint it might name (see [mightName]).
func (p *parser) skip(b []byte) {
	p.skipped++
	if m := unreadableMount(b); m != nil {
		if p.keep == nil || p.keep(mountinfoField(b, 4)) {
			p.add(m, FormatMountinfo)
		}
		return
	}
	line := string(b)
	p.addUnreadable(mightName(line), FormatMount)
	if p.header != nil {
		p.addUnreadable(p.header.mightName(line), FormatFindmnt)
	}
}

// addUnreadable adds an unreadable entry (see [FSTypeUnreadable]) at each
// raw mountpoint in mps.
func (p *parser) addUnreadable(mps []string, f Format) {
	for _, mp := range mps {
		p.add(&mountinfo.Info{Mountpoint: unescapeOctal(cleanRaw(mp)), FSType: FSTypeUnreadable}, f)
	}
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

// Mountinfo lines are parsed in batches of at most batchLines lines or
// about batchBytes bytes.
const (
	batchLines = 512
	batchBytes = 256 << 10
)

// flushMountinfo parses the pending mountinfo lines in one call and, if
// that fails, line by line, so that one bad line costs only itself.
func (p *parser) flushMountinfo() error {
	if len(p.miIdx) == 0 {
		return nil
	}
	infos, err := parseMountinfo(p.batch)
	if errors.Is(err, ErrNotSupported) {
		return fmt.Errorf("parse %d mountinfo lines: %w", len(p.miIdx), err)
	}
	if err != nil || len(infos) != len(p.miIdx) {
		infos = make([]*mountinfo.Info, len(p.miIdx))
		lines := bytes.Split(bytes.TrimSuffix(p.batch, []byte("\n")), []byte("\n"))
		for i := 0; i < len(lines) && i < len(infos); i++ {
			one, err := parseMountinfo(lines[i])
			if err == nil && len(one) == 1 {
				infos[i] = one[0]
			}
		}
	}
	var lines [][]byte // split only when a line failed
	for i, idx := range p.miIdx {
		m := infos[i]
		if m == nil {
			if lines == nil {
				lines = bytes.Split(bytes.TrimSuffix(p.batch, []byte("\n")), []byte("\n"))
			}
			if i < len(lines) {
				m = unreadableMount(lines[i])
			}
		}
		if m == nil || !strings.HasPrefix(m.Mountpoint, "/") {
			p.skipped++
			p.counts[FormatMountinfo]--
			continue
		}
		if m.FSType == FSTypeUnreadable {
			p.skipped++
		}
		p.mounts[idx] = m
	}
	p.batch, p.miIdx = p.batch[:0], p.miIdx[:0]
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
		lines := "lines"
		if p.skipped == 1 {
			lines = "line"
		}
		return nil, fmt.Errorf("parse mount table (%d %s skipped): %w", p.skipped, lines, ErrNoMounts)
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
func looksLikeMountinfo(line []byte) bool {
	var (
		field, start int
		dashes       [4]int // the last four "-" fields at index 6 or later
		nd           int
	)
	for i := 0; i <= len(line); i++ {
		if i < len(line) && line[i] != ' ' {
			continue
		}
		f := line[start:i]
		switch field {
		case 0, 1:
			if !isDigits(string(f)) {
				return false
			}
		case 2:
			maj, min, ok := bytes.Cut(f, []byte(":"))
			if !ok || !isDigits(string(maj)) || !isDigits(string(min)) {
				return false
			}
		case 4:
			if len(f) == 0 || f[0] != '/' {
				return false
			}
		}
		if field >= 6 && len(f) == 1 && f[0] == '-' {
			dashes[nd%len(dashes)] = field
			nd++
		}
		field++
		start = i + 1
	}
	// field is now the number of fields. The library looks for the
	// separator from the fourth field from the end back to the seventh.
	if field < 10 {
		return false
	}
	for _, d := range dashes[:min(nd, len(dashes))] {
		if d <= field-4 {
			return true
		}
	}
	return false
}

// parseMountLine parses a line of mount(8) output:
// "SOURCE on MOUNTPOINT type FSTYPE (OPTIONS)" with an optional " [LABEL]".
// mount(8) prints the source and the mountpoint unescaped, so both may
// hold spaces, and the mountpoint may hold " type " or " (": OPTIONS are
// in the last " (...)", FSTYPE follows the last " type " before it, and
// the mountpoint starts after the one " on /" in what precedes. A line
// with several " on /" there names one of several mountpoints: it
// returns nil and those raw mountpoints (never nil then). A line of
// another shape returns nil, nil.
func parseMountLine(line string) (*mountinfo.Info, []string) {
	if strings.HasSuffix(line, "]") {
		if i := strings.LastIndex(line, " ["); i > 0 {
			line = line[:i]
		}
	}
	if !strings.HasSuffix(line, ")") {
		return nil, nil
	}
	paren := strings.LastIndex(line, " (")
	if paren < 0 {
		return nil, nil
	}
	opts := line[paren+2 : len(line)-1]
	head := line[:paren]
	ti := strings.LastIndex(head, " type ")
	if ti < 0 {
		return nil, nil
	}
	fstype := head[ti+len(" type "):]
	if !validFSType(fstype) {
		return nil, nil
	}
	head = head[:ti]
	oi := strings.Index(head, " on /")
	if oi < 0 {
		if !strings.HasPrefix(head, "on /") {
			return nil, nil
		}
		oi = -1 // empty source
	}
	src, mp := "", head[oi+len(" on "):]
	if oi >= 0 {
		src = head[:oi]
	}
	if strings.Contains(mp, " on /") {
		var cands []string
		for i := oi; i < len(head); {
			cands = append(cands, head[i+len(" on "):])
			j := strings.Index(head[i+1:], " on /")
			if j < 0 {
				break
			}
			i += 1 + j
		}
		return nil, cands
	}
	return &mountinfo.Info{
		Mountpoint: unescapeOctal(cleanRaw(mp)),
		FSType:     unescapeOctal(fstype),
		Source:     unescapeOctal(src),
		Options:    opts,
	}, nil
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
		Mountpoint: unescapeOctal(cleanRaw(f[1])),
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
	m := &mountinfo.Info{Mountpoint: unescapeFindmnt(cleanRaw(target)), FSType: unescapeFindmnt(fstype)}
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

// mountinfoField returns the i-th (0-based) space-separated field of a
// mountinfo line, or nil. Used only to pre-select lines; the line itself is
// parsed by the mountinfo library.
func mountinfoField(b []byte, i int) []byte {
	for ; i > 0; i-- {
		j := bytes.IndexByte(b, ' ')
		if j < 0 {
			return nil
		}
		b = b[j+1:]
	}
	if j := bytes.IndexByte(b, ' '); j >= 0 {
		return b[:j]
	}
	return b
}

// maxMightName is how many mountpoints [mightName] names for one line
// before it names their parent directory instead.
const maxMightName = 64

// mightName returns the raw mountpoints a line that fits no format might
// name in mount(8) style: for each " on /" (or a leading "on /"), the
// text after "on " up to each space or tab, and to the end of the line.
// mount(8) prints mountpoints unescaped, so "/mnt/a b" is as likely as
// "/mnt/a". Past maxMightName candidates it returns the one directory
// that holds them all (path.Dir of the shortest), so that nothing under
// a mountpoint the line might name is classified from a shorter prefix.
func mightName(line string) []string {
	var out []string
	for i := 0; i < len(line); i++ {
		var rest string
		switch {
		case i == 0 && strings.HasPrefix(line, "on /"):
			rest = line[len("on "):]
		case strings.HasPrefix(line[i:], " on /"):
			rest = line[i+len(" on "):]
		default:
			continue
		}
		cands := prefixesAtSpaces(rest)
		if len(out)+len(cands) > maxMightName {
			return []string{path.Dir(path.Clean(cands[0]))}
		}
		out = append(out, cands...)
	}
	return out
}

// prefixesAtSpaces returns s cut before each space or tab, and s itself.
func prefixesAtSpaces(s string) []string {
	var out []string
	for i := 0; i < len(s); i++ {
		if s[i] == ' ' || s[i] == '\t' {
			out = append(out, s[:i])
			if len(out) > maxMightName {
				return out
			}
		}
	}
	return append(out, s)
}

// mightName returns the raw mountpoints a findmnt row that did not parse
// might name: the text of the TARGET column (from its offset in the
// header, after the tree) when it starts with "/", cut before each space
// or tab and whole, as for [mightName].
func (h *findmntHeader) mightName(line string) []string {
	runes := []rune(line)
	start := h.starts[h.target]
	if start >= len(runes) {
		return nil
	}
	rest := strings.TrimLeft(string(runes[start:]), treeRunes+" ")
	if !strings.HasPrefix(rest, "/") {
		return nil
	}
	cands := prefixesAtSpaces(rest)
	if len(cands) > maxMightName {
		return []string{path.Dir(path.Clean(cands[0]))}
	}
	return cands
}
