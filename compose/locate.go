//go:build !nocompose

package compose

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/compose-spec/compose-go/v2/format"
	"github.com/compose-spec/compose-go/v2/template"
	"github.com/sirupsen/logrus"
	"go.yaml.in/yaml/v4"
)

// doc is one compose file as bytes and as a YAML node tree. The tree is
// used only to find positions; edits splice the bytes.
type doc struct {
	path  string
	src   []byte
	root  *yaml.Node // the document's top-level mapping; nil for an empty file
	lines []int      // byte offset of each line start
}

// parseDoc parses src as one YAML document (the first, as Compose reads
// it).
func parseDoc(name string, src []byte) (*doc, error) {
	d := &doc{path: name, src: src, lines: lineStarts(src)}
	var n yaml.Node
	if err := yaml.Unmarshal(src, &n); err != nil {
		return nil, fmt.Errorf("parse %s: %w", name, err)
	}
	if n.Kind == yaml.DocumentNode && len(n.Content) == 1 {
		r := deref(n.Content[0])
		if r.Kind == yaml.MappingNode {
			d.root = r
		} else if !(r.Kind == yaml.ScalarNode && r.Tag == "!!null") {
			return nil, fmt.Errorf("parse %s: the top level is not a mapping", name)
		}
	}
	return d, nil
}

func lineStarts(src []byte) []int {
	out := []int{0}
	for i, c := range src {
		if c == '\n' {
			out = append(out, i+1)
		}
	}
	return out
}

// offset converts a node's 1-based line and column (in characters) to a
// byte offset; -1 when out of range.
func (d *doc) offset(line, col int) int {
	if line < 1 || line > len(d.lines) {
		return -1
	}
	off := d.lines[line-1]
	for c := 1; c < col; c++ {
		if off >= len(d.src) || d.src[off] == '\n' {
			return -1
		}
		_, w := utf8.DecodeRune(d.src[off:])
		off += w
	}
	return off
}

// deref follows alias nodes to the node they name.
func deref(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode && i < 100; i++ {
		n = n.Alias
	}
	return n
}

// mapGet returns the key and value nodes for key in mapping m, following
// aliases and merge keys (<<: *anchor, or a sequence of them) as YAML 1.1
// and Compose do: an explicit key wins over a merged one. aliased reports
// that the value was reached through an alias or merge.
func mapGet(m *yaml.Node, key string) (k, v *yaml.Node, aliased bool) {
	return mapGetDepth(deref(m), key, 0)
}

func mapGetDepth(m *yaml.Node, key string, depth int) (k, v *yaml.Node, aliased bool) {
	if m == nil || m.Kind != yaml.MappingNode || depth > 20 {
		return nil, nil, false
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if kn := m.Content[i]; kn.Kind == yaml.ScalarNode && kn.Value == key && kn.Tag != "!!merge" {
			v := m.Content[i+1]
			return kn, deref(v), v.Kind == yaml.AliasNode
		}
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		kn := m.Content[i]
		if kn.Tag != "!!merge" && kn.Value != "<<" {
			continue
		}
		vals := []*yaml.Node{m.Content[i+1]}
		if s := deref(m.Content[i+1]); s.Kind == yaml.SequenceNode {
			vals = s.Content
		}
		for _, mv := range vals {
			if k, v, _ := mapGetDepth(deref(mv), key, depth+1); v != nil {
				return k, v, true
			}
		}
	}
	return nil, nil, false
}

// scalar returns n's value when n is a scalar, else "".
func scalar(n *yaml.Node) string {
	n = deref(n)
	if n == nil || n.Kind != yaml.ScalarNode {
		return ""
	}
	return n.Value
}

// itemDecl is one entry of a service's volumes list as written.
type itemDecl struct {
	node *yaml.Node // the item (a scalar for short syntax, a mapping for long)
	// aliased is set when the item, or the list holding it, was reached
	// through an alias or merge key.
	aliased bool
	long    bool
	target  string // interpolated
	// rawSource is the source as written (${VAR:-./data}); source is it
	// interpolated.
	rawSource string
	source    string
	typ       string
}

// serviceDecl is a service as one file declares it.
type serviceDecl struct {
	doc     *doc
	name    string
	node    *yaml.Node
	items   []itemDecl
	extends struct{ service, file string }
}

// locator finds where a service's mount is declared among the project's
// files, the files they include and the files services extend.
type locator struct {
	env      template.Mapping
	workDir  string
	top      []string // top-level files in merge order, then included files
	docs     map[string]*doc
	errs     map[string]error
	included map[string]bool
}

func newLocator(files []string, workDir string, env map[string]string) *locator {
	l := &locator{
		env: func(k string) (string, bool) {
			v, ok := env[k]
			return v, ok
		},
		workDir: workDir, docs: map[string]*doc{}, errs: map[string]error{}, included: map[string]bool{},
	}
	l.top = append(l.top, files...)
	// include: entries, recursively: paths relative to the including
	// project's directory.
	for i := 0; i < len(l.top) && i < 200; i++ {
		d := l.doc(l.top[i])
		if d == nil || d.root == nil {
			continue
		}
		base := workDir
		if l.included[l.top[i]] {
			base = filepath.Dir(l.top[i])
		}
		_, inc, _ := mapGet(d.root, "include")
		if inc == nil || inc.Kind != yaml.SequenceNode {
			continue
		}
		for _, e := range inc.Content {
			e = deref(e)
			var paths []string
			dir := base
			switch e.Kind {
			case yaml.ScalarNode:
				paths = append(paths, e.Value)
			case yaml.MappingNode:
				_, p, _ := mapGet(e, "path")
				if p != nil && p.Kind == yaml.SequenceNode {
					for _, x := range p.Content {
						paths = append(paths, scalar(x))
					}
				} else {
					paths = append(paths, scalar(p))
				}
			}
			for _, p := range paths {
				if p = l.interpolate(p); p == "" {
					continue
				}
				if !filepath.IsAbs(p) {
					p = filepath.Join(dir, p)
				}
				if !l.included[p] {
					l.included[p] = true
					l.top = append(l.top, p)
				}
			}
		}
	}
	return l
}

// interpolate substitutes variables in s as Compose does, or returns s
// when it cannot. It does not log: an unset variable was already reported
// by the loader (Loaded.Warnings), as preflight's own line.
func (l *locator) interpolate(s string) string {
	out, err := quietSubstitute(s, l.env)
	if err != nil {
		return s
	}
	return out
}

// logMu serialises the uses of logrus's standard logger, a process-wide
// value that compose-go warns through and that loaderWarnings and
// quietSubstitute swap.
var logMu sync.Mutex

// quietSubstitute is template.Substitute without logrus's lines on
// stderr: WithoutLogging does not reach a nested default (${A:-${B}}), so
// logrus's standard logger is silenced around the call too.
func quietSubstitute(s string, env template.Mapping) (string, error) {
	logMu.Lock()
	defer logMu.Unlock()
	l := logrus.StandardLogger()
	out := l.Out
	hooks := l.ReplaceHooks(logrus.LevelHooks{})
	l.SetOutput(io.Discard)
	defer func() {
		l.SetOutput(out)
		l.ReplaceHooks(hooks)
	}()
	return template.SubstituteWithOptions(s, env, template.WithoutLogging)
}

// doc reads and parses a file once.
func (l *locator) doc(name string) *doc {
	if d, ok := l.docs[name]; ok {
		return d
	}
	if err, ok := l.errs[name]; ok && err != nil {
		return nil
	}
	src, err := readFile(name)
	if err != nil {
		l.errs[name] = err
		return nil
	}
	d, err := parseDoc(name, src)
	if err != nil {
		l.errs[name] = err
		return nil
	}
	l.docs[name] = d
	return d
}

// service returns the declaration of service name in file, or nil.
func (l *locator) service(file, name string) *serviceDecl {
	d := l.doc(file)
	if d == nil || d.root == nil {
		return nil
	}
	_, svcs, _ := mapGet(d.root, "services")
	_, sn, _ := mapGet(svcs, name)
	if sn == nil || sn.Kind != yaml.MappingNode {
		return nil
	}
	sd := &serviceDecl{doc: d, name: name, node: sn}
	_, ext, _ := mapGet(sn, "extends")
	switch {
	case ext == nil:
	case ext.Kind == yaml.ScalarNode:
		sd.extends.service = l.interpolate(ext.Value)
	case ext.Kind == yaml.MappingNode:
		_, s, _ := mapGet(ext, "service")
		_, f, _ := mapGet(ext, "file")
		sd.extends.service = l.interpolate(scalar(s))
		if fv := l.interpolate(scalar(f)); fv != "" {
			if !filepath.IsAbs(fv) {
				fv = filepath.Join(filepath.Dir(file), fv)
			}
			sd.extends.file = fv
		}
	}
	_, vols, aliasedList := mapGet(sn, "volumes")
	if vols == nil || vols.Kind != yaml.SequenceNode {
		return sd
	}
	for _, raw := range vols.Content {
		it := itemDecl{node: deref(raw), aliased: aliasedList || raw.Kind == yaml.AliasNode}
		switch it.node.Kind {
		case yaml.ScalarNode:
			spec := l.interpolate(it.node.Value)
			v, err := format.ParseVolume(spec)
			if err != nil {
				continue
			}
			it.target, it.source, it.typ = v.Target, v.Source, v.Type
			if end := shortSourceEnd(it.node.Value); end > 0 {
				it.rawSource = it.node.Value[:end]
			}
		case yaml.MappingNode:
			it.long = true
			_, t, _ := mapGet(it.node, "target")
			_, s, _ := mapGet(it.node, "source")
			_, ty, _ := mapGet(it.node, "type")
			it.target = l.interpolate(scalar(t))
			it.rawSource = scalar(s)
			it.source = l.interpolate(it.rawSource)
			it.typ = l.interpolate(scalar(ty))
		default:
			continue
		}
		sd.items = append(sd.items, it)
	}
	return sd
}

// found is where a mount is declared.
type found struct {
	decl *serviceDecl // the declaration holding the item (an extends base may be another service or file)
	item itemDecl
	// owner is the file that declares the service in the project; a named
	// volume the rewrite adds is declared there.
	owner string
}

var errNotDeclared = errors.New("mount not found in any compose file")

// locate finds the declaration of service's mount at target: the last
// top-level file that declares it, then the files services extend.
func (l *locator) locate(service, target string) (found, error) {
	for i := len(l.top) - 1; i >= 0; i-- {
		sd := l.service(l.top[i], service)
		if sd == nil {
			continue
		}
		if f, ok := l.find(sd, target, 0); ok {
			f.owner = l.top[i]
			return f, nil
		}
	}
	for _, name := range l.top {
		if err := l.errs[name]; err != nil {
			return found{}, err
		}
	}
	return found{}, errNotDeclared
}

func (l *locator) find(sd *serviceDecl, target string, depth int) (found, bool) {
	for _, it := range sd.items {
		if cleanTarget(it.target) == cleanTarget(target) {
			return found{decl: sd, item: it}, true
		}
	}
	if sd.extends.service == "" || depth > 20 {
		return found{}, false
	}
	file := sd.extends.file
	if file == "" {
		file = sd.doc.path
	}
	base := l.service(file, sd.extends.service)
	if base == nil {
		return found{}, false
	}
	return l.find(base, target, depth+1)
}

func cleanTarget(t string) string {
	t = strings.TrimSpace(t)
	if len(t) > 1 {
		t = strings.TrimRight(t, "/")
	}
	return t
}

// rawScalar returns the byte range of scalar node n in d.src: for a plain
// scalar its value, for a quoted one the quotes included. ok is false when
// the bytes there do not spell the value simply (escapes, a multi-line
// scalar), so an edit would not be safe.
func (d *doc) rawScalar(n *yaml.Node) (start, end int, ok bool) {
	start = d.offset(n.Line, n.Column)
	if start < 0 {
		return 0, 0, false
	}
	switch n.Style {
	case 0:
		end = start + len(n.Value)
		if end > len(d.src) || string(d.src[start:end]) != n.Value {
			return 0, 0, false
		}
		return start, end, true
	case yaml.DoubleQuotedStyle, yaml.SingleQuotedStyle:
		q := byte('"')
		if n.Style == yaml.SingleQuotedStyle {
			q = '\''
		}
		if start >= len(d.src) || d.src[start] != q {
			return 0, 0, false
		}
		end = start + 1 + len(n.Value)
		if end >= len(d.src) || d.src[end] != q || string(d.src[start+1:end]) != n.Value {
			return 0, 0, false
		}
		return start, end + 1, true
	}
	return 0, 0, false
}

// lineIndent returns the indentation (spaces) of the line holding offset.
func (d *doc) lineIndent(line int) int {
	if line < 1 || line > len(d.lines) {
		return 0
	}
	s := d.lines[line-1]
	n := 0
	for s+n < len(d.src) && d.src[s+n] == ' ' {
		n++
	}
	return n
}

// blockEnd returns the byte offset just after the last line that belongs
// to the block entry whose key starts at line (1-based) and column col:
// following lines that are more indented, skipping blank and comment lines
// but never ending on one.
func (d *doc) blockEnd(line, col int) int {
	end := d.lineEnd(line)
	for ln := line + 1; ln <= len(d.lines); ln++ {
		s := d.lines[ln-1]
		e := d.lineEnd(ln)
		text := d.src[s:e]
		trim := bytes.TrimSpace(text)
		if len(trim) == 0 || trim[0] == '#' {
			continue
		}
		if d.lineIndent(ln) < col {
			break
		}
		end = e
	}
	return end
}

// lineEnd is the offset just after line's newline (or the end of src).
func (d *doc) lineEnd(line int) int {
	if line < len(d.lines) {
		return d.lines[line]
	}
	return len(d.src)
}
