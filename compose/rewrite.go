//go:build !nocompose

package compose

import (
	"bytes"
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/preflight-sqlite/preflight/internal/shell"

	"github.com/compose-spec/compose-go/v2/types"
	"github.com/pmezard/go-difflib/difflib"
	"go.yaml.in/yaml/v4"
)

// splice replaces src[start:end] with text.
type splice struct {
	start, end int
	text       string
}

// Plan proposes a named volume for each mount in which (indexes into
// a.Mounts, bind mounts of data directories) and computes the edited
// files: the declaring file's mount source replaced, and the top-level
// volumes: entry added, splicing the original bytes. findings maps a mount
// index to the finding IDs that made it risky. Every touched file is
// returned, changed or not, in a stable order. a.Rewrites is set.
func (a *Analysis) Plan(which []int, findings map[int][]string, opts PlanOptions) ([]FileEdit, error) {
	p := &plan{taken: a.takenVolumes(), byHost: map[string]planned{}, edits: map[string][]splice{},
		adds: map[string][]string{}, seen: map[string]bool{}}
	a.Rewrites = nil
	for _, i := range which {
		a.Rewrites = append(a.Rewrites, a.planMount(p, i, findings[i], opts))
	}
	a.leftBehind()
	a.declareVolumes(p)
	return a.applyEdits(p.edits)
}

// plan is what Plan builds up over the mounts it rewrites.
type plan struct {
	taken  map[string]bool     // volume keys in use
	byHost map[string]planned  // cleaned host directory: its volume
	edits  map[string][]splice // file: its splices
	adds   map[string][]string // file: the volume keys to declare in it
	seen   map[string]bool     // FILE@OFFSET of the splices made
}

// planned is the volume chosen for a host directory, and the first mount
// (SERVICE:TARGET) moved into it.
type planned struct{ name, first string }

// takenVolumes returns the volume keys the project and its files already
// use.
func (a *Analysis) takenVolumes() map[string]bool {
	taken := map[string]bool{}
	if a.loaded != nil {
		for k := range a.loaded.Project.Volumes {
			taken[k] = true
		}
	}
	for _, d := range a.locator.docs {
		if d.root == nil {
			continue
		}
		if _, v, _ := mapGet(d.root, "volumes"); v != nil && v.Kind == yaml.MappingNode {
			for i := 0; i+1 < len(v.Content); i += 2 {
				taken[v.Content[i].Value] = true
			}
		}
	}
	return taken
}

// planMount returns the rewrite of mount a.Mounts[i] (risky for findings)
// and records its splices in p.
func (a *Analysis) planMount(p *plan, i int, findings []string, opts PlanOptions) Rewrite {
	m := &a.Mounts[i]
	rw := Rewrite{Service: m.Service, Target: m.Target, From: m.RawSource, Default: m.Default, HostPath: m.Source, Findings: findings}
	if rw.Findings == nil {
		rw.Findings = []string{} // moved with another mount of its host directory
	}
	if rw.From == "" {
		rw.From = m.Source
	}
	if m.Declared != nil {
		rw.File, rw.Line, rw.Syntax = m.Declared.File, m.Declared.Line, m.Declared.Syntax
	}
	pl, again := p.volumeFor(m)
	rw.Volume = pl.name
	rw.VolumeName = a.Project + "_" + pl.name
	f, err := a.locator.locate(m.Service, m.Target)
	p.spliceMount(m, f, err, &rw)
	switch {
	case again && !m.ReadWrite:
		rw.SameAs = fmt.Sprintf("a read-only mount of the same host directory as %s: it moves to the same volume, read-only, and is migrated with it", pl.first)
	case again:
		rw.SameAs = fmt.Sprintf("the same host directory as %s: migrate once", pl.first)
	default:
		if opts.MigrateImage == "" && preflightIn(a, m.Service) == "" {
			rw.MigrateNeedsImage = true
		} else {
			rw.Migrate = migration(a, m, rw, opts)
		}
		if m.SourceMissing {
			rw.Note = fmt.Sprintf("%s does not exist on this machine, so there is no data here to move: run the migration where the project's data is, or skip it for a new project", m.Source)
		}
	}
	return rw
}

// volumeFor returns the volume for m's host directory, and whether an
// earlier mount of the same directory chose it; else it chooses a key
// not taken (SERVICE-data, SERVICE-data-2, ...).
func (p *plan) volumeFor(m *Mount) (planned, bool) {
	host := filepath.Clean(m.Source)
	if pl, ok := p.byHost[host]; ok {
		return pl, true
	}
	name := m.Service + "-data"
	for n := 2; p.taken[name]; n++ {
		name = fmt.Sprintf("%s-data-%d", m.Service, n)
	}
	p.taken[name] = true
	p.byHost[host] = planned{name, m.Key()}
	return p.byHost[host], false
}

// spliceMount records the splices that turn bind mount m, declared at f
// (err when it was not found), into volume rw.Volume, or sets rw.Refused
// to say why it is not edited.
func (p *plan) spliceMount(m *Mount, f found, err error, rw *Rewrite) {
	switch {
	case m.Type != types.VolumeTypeBind:
		rw.Refused = "not a bind mount"
	case err != nil:
		rw.Refused = fmt.Sprintf("cannot find where %s is declared: %v", m.Key(), err)
	default:
		rw.VolumeFile = f.owner
		sp, why := mountSplices(f, rw.Volume)
		if why != "" {
			rw.Refused = why
			return
		}
		for _, s := range sp {
			k := fmt.Sprintf("%s@%d", f.decl.doc.path, s.start)
			if !p.seen[k] {
				p.seen[k] = true
				p.edits[f.decl.doc.path] = append(p.edits[f.decl.doc.path], s)
			}
		}
		p.adds[f.owner] = append(p.adds[f.owner], rw.Volume)
	}
}

// declareVolumes adds to p.edits the top-level volumes: entries of each
// file in p.adds; a file where that cannot be done is not edited, and its
// rewrites say why.
func (a *Analysis) declareVolumes(p *plan) {
	for file, names := range p.adds {
		d := a.locator.doc(file)
		if d == nil {
			continue
		}
		s, err := volumeSplice(d, uniq(names), indentUnit(d))
		if err != nil {
			for i := range a.Rewrites {
				if a.Rewrites[i].VolumeFile == file && a.Rewrites[i].Refused == "" {
					a.Rewrites[i].Refused = err.Error()
				}
			}
			delete(p.edits, file)
			continue
		}
		if s != nil {
			p.edits[file] = append(p.edits[file], *s)
		}
	}
}

// applyEdits splices each file's edits into its bytes, in file name order,
// and checks that the result still parses as YAML.
func (a *Analysis) applyEdits(edits map[string][]splice) ([]FileEdit, error) {
	var out []FileEdit
	files := make([]string, 0, len(edits))
	for f := range edits {
		files = append(files, f)
	}
	sort.Strings(files)
	for _, f := range files {
		d := a.locator.doc(f)
		after, err := apply(d.src, edits[f])
		if err != nil {
			return nil, fmt.Errorf("rewrite %s: %w", f, err)
		}
		var n yaml.Node
		if err := yaml.Unmarshal(after, &n); err != nil {
			return nil, fmt.Errorf("rewrite %s: the result does not parse: %w", f, err)
		}
		out = append(out, FileEdit{File: f, Before: d.src, After: after})
	}
	return out, nil
}

// mountSplices returns the edits that turn the declared bind into named
// volume name, or why it cannot be done safely.
func mountSplices(f found, name string) ([]splice, string) {
	d, it := f.decl.doc, f.item
	if !it.long {
		start, end, ok := d.rawScalar(it.node)
		if !ok {
			return nil, fmt.Sprintf("%s:%d: the volume entry is written in a form this rewrite does not edit (escapes or a multi-line scalar)", d.path, it.node.Line)
		}
		vs := start
		if it.node.Style == yaml.DoubleQuotedStyle || it.node.Style == yaml.SingleQuotedStyle {
			vs++
		}
		n := len(it.rawSource)
		if n == 0 || vs+n > end || string(d.src[vs:vs+n]) != it.rawSource {
			return nil, fmt.Sprintf("%s:%d: cannot find the source %q in the entry", d.path, it.node.Line, it.rawSource)
		}
		return []splice{{vs, vs + n, name}}, ""
	}
	var out []splice
	_, ty, _ := mapGet(it.node, "type")
	_, src, _ := mapGet(it.node, "source")
	if ty == nil || src == nil || ty.Kind != yaml.ScalarNode || src.Kind != yaml.ScalarNode {
		return nil, fmt.Sprintf("%s:%d: a long-syntax entry without a plain type and source", d.path, it.node.Line)
	}
	for _, x := range []struct {
		n    *yaml.Node
		text string
	}{{ty, "volume"}, {src, name}} {
		s, e, ok := d.rawScalar(x.n)
		if !ok {
			return nil, fmt.Sprintf("%s:%d: the %s value is written in a form this rewrite does not edit", d.path, x.n.Line, x.n.Value)
		}
		q := ""
		if x.n.Style == yaml.DoubleQuotedStyle {
			q = `"`
		} else if x.n.Style == yaml.SingleQuotedStyle {
			q = "'"
		}
		out = append(out, splice{s, e, q + x.text + q})
	}
	// bind: options mean nothing for a volume: remove the key's lines.
	if bk, bv, aliased := mapGet(it.node, "bind"); bk != nil {
		if aliased || it.node.Style == yaml.FlowStyle || bv == nil {
			return nil, fmt.Sprintf("%s:%d: the entry's bind: options are not on their own lines; remove them by hand", d.path, bk.Line)
		}
		ls := d.lines[bk.Line-1]
		if strings.TrimSpace(string(d.src[ls:d.offset(bk.Line, bk.Column)])) != "" {
			return nil, fmt.Sprintf("%s:%d: the entry's bind: key is not on its own line; remove it by hand", d.path, bk.Line)
		}
		out = append(out, splice{ls, d.blockEnd(bk.Line, bk.Column), ""})
	}
	return out, ""
}

// leftBehind fills Rewrite.LeftBehind: bind mounts of a directory inside a
// rewritten host directory, or containing it, that no rewrite moves.
func (a *Analysis) leftBehind() {
	moved := map[string]bool{}
	for _, rw := range a.Rewrites {
		moved[rw.Service+":"+rw.Target] = true
	}
	for i := range a.Rewrites {
		rw := &a.Rewrites[i]
		if rw.SameAs != "" {
			continue
		}
		host := filepath.Clean(rw.HostPath)
		for _, m := range a.Mounts {
			if m.Type != types.VolumeTypeBind || moved[m.Key()] {
				continue
			}
			src := filepath.Clean(m.Source)
			switch {
			case src == host:
				rw.LeftBehind = append(rw.LeftBehind, fmt.Sprintf("%s (%s, the same directory)", m.Key(), src))
			case within(src, host):
				rw.LeftBehind = append(rw.LeftBehind, fmt.Sprintf("%s (%s, inside it)", m.Key(), src))
			case within(host, src):
				rw.LeftBehind = append(rw.LeftBehind, fmt.Sprintf("%s (%s, which contains it)", m.Key(), src))
			}
		}
	}
}

// indentUnit guesses the file's indentation step from its services.
func indentUnit(d *doc) int {
	if d.root != nil {
		for i := 0; i+1 < len(d.root.Content); i += 2 {
			v := d.root.Content[i+1]
			if v.Kind == yaml.MappingNode && v.Style != yaml.FlowStyle && len(v.Content) > 0 {
				if c := v.Content[0].Column - d.root.Content[i].Column; c > 0 && c <= 8 {
					return c
				}
			}
		}
	}
	return 2
}

// volumeSplice adds names (those not declared yet) to the top-level
// volumes: of d. It returns nil when there is nothing to add.
func volumeSplice(d *doc, names []string, unit int) (*splice, error) {
	var have map[string]bool
	var kn, vn *yaml.Node
	if d.root != nil {
		kn, vn, _ = mapGet(d.root, "volumes")
	}
	if vn != nil && vn.Kind == yaml.MappingNode {
		have = map[string]bool{}
		for i := 0; i+1 < len(vn.Content); i += 2 {
			have[vn.Content[i].Value] = true
		}
	}
	var add []string
	for _, n := range names {
		if !have[n] {
			add = append(add, n)
		}
	}
	if len(add) == 0 {
		return nil, nil
	}
	block := func(indent int) string {
		var b strings.Builder
		for _, n := range add {
			fmt.Fprintf(&b, "%s%s: {}\n", strings.Repeat(" ", indent), n)
		}
		return b.String()
	}
	nl := func(at int) string {
		if at > 0 && d.src[at-1] != '\n' {
			return "\n"
		}
		return ""
	}
	switch {
	case kn == nil && d.root != nil && d.root.Style == yaml.FlowStyle:
		return nil, fmt.Errorf("%s: the document is one flow mapping; add volumes: {%s: {}} by hand", d.path, strings.Join(add, ": {}, "))
	case kn == nil:
		at := docEnd(d)
		pre := nl(at)
		if at > 0 && !bytes.HasSuffix(d.src, []byte("\n\n")) && !bytes.HasSuffix(d.src, []byte("\n\r\n")) {
			pre += "\n"
		}
		return &splice{at, at, pre + "volumes:\n" + block(unit)}, nil
	case d.root != nil && kn.Column != 1:
		return nil, fmt.Errorf("%s:%d: the top-level volumes: key is not at the start of its line", d.path, kn.Line)
	case vn.Kind == yaml.ScalarNode && vn.Tag == "!!null":
		if vn.Value == "" {
			at := d.lineEnd(kn.Line)
			return &splice{at, at, nl(at) + block(unit)}, nil
		}
		s, e, ok := d.rawScalar(vn)
		if !ok {
			return nil, fmt.Errorf("%s:%d: the top-level volumes: value cannot be edited", d.path, vn.Line)
		}
		return &splice{s, e, "\n" + strings.TrimSuffix(block(unit), "\n")}, nil
	case vn.Kind == yaml.MappingNode && vn.Style == yaml.FlowStyle:
		open := d.offset(vn.Line, vn.Column)
		closeAt := flowEnd(d.src, open)
		if open < 0 || closeAt < 0 {
			return nil, fmt.Errorf("%s:%d: cannot find the end of the top-level volumes: mapping", d.path, vn.Line)
		}
		var parts []string
		for _, n := range add {
			parts = append(parts, n+": {}")
		}
		text := strings.Join(parts, ", ")
		if len(vn.Content) > 0 {
			text = ", " + text
		}
		return &splice{closeAt, closeAt, text}, nil
	case vn.Kind == yaml.MappingNode && len(vn.Content) > 0:
		last := vn.Content[len(vn.Content)-2]
		at := d.blockEnd(last.Line, last.Column)
		return &splice{at, at, nl(at) + block(last.Column-1)}, nil
	}
	return nil, fmt.Errorf("%s:%d: the top-level volumes: is not a mapping", d.path, kn.Line)
}

// docEnd is where a new top-level key goes: the end of the file, or before
// a document end (...) or next document (---) marker after the first
// document.
func docEnd(d *doc) int {
	if d.root == nil || len(d.root.Content) < 2 || d.root.Style == yaml.FlowStyle {
		return len(d.src)
	}
	last := d.root.Content[len(d.root.Content)-2]
	end := d.blockEnd(last.Line, last.Column)
	for ln := last.Line + 1; ln <= len(d.lines); ln++ {
		s := d.lines[ln-1]
		line := strings.TrimRight(string(d.src[s:d.lineEnd(ln)]), "\r\n")
		if s < end {
			continue
		}
		if line == "..." || strings.HasPrefix(line, "---") || strings.HasPrefix(line, "...") {
			return end
		}
	}
	return len(d.src)
}

// flowEnd returns the offset of the } closing the flow mapping opened at
// src[open], skipping quoted strings; -1 when not found.
func flowEnd(src []byte, open int) int {
	if open < 0 || open >= len(src) || src[open] != '{' {
		return -1
	}
	depth := 0
	for i := open; i < len(src); i++ {
		switch src[i] {
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				return i
			}
		case '"':
			for i++; i < len(src) && src[i] != '"'; i++ {
				if src[i] == '\\' {
					i++
				}
			}
		case '\'':
			for i++; i < len(src); i++ {
				if src[i] == '\'' {
					if i+1 < len(src) && src[i+1] == '\'' {
						i++
						continue
					}
					break
				}
			}
		case '#':
			if i > 0 && (src[i-1] == ' ' || src[i-1] == '\t') {
				for i < len(src) && src[i] != '\n' {
					i++
				}
			}
		}
	}
	return -1
}

// apply performs non-overlapping splices on a copy of src. In a file whose
// lines end in CRLF (written on Windows), the line breaks of the inserted
// text do too.
func apply(src []byte, sp []splice) ([]byte, error) {
	if crlf(src) {
		for i := range sp {
			sp[i].text = strings.ReplaceAll(strings.ReplaceAll(sp[i].text, "\r\n", "\n"), "\n", "\r\n")
		}
	}
	sort.Slice(sp, func(i, j int) bool {
		if sp[i].start != sp[j].start {
			return sp[i].start < sp[j].start
		}
		return sp[i].end < sp[j].end
	})
	var b bytes.Buffer
	pos := 0
	for _, s := range sp {
		if s.start < pos || s.end < s.start || s.end > len(src) {
			return nil, errors.New("overlapping edits")
		}
		b.Write(src[pos:s.start])
		b.WriteString(s.text)
		pos = s.end
	}
	b.Write(src[pos:])
	return b.Bytes(), nil
}

// migration returns the commands that move the data of m into the new
// volume once.
func migration(a *Analysis, m *Mount, rw Rewrite, opts PlanOptions) []string {
	dc := "docker compose"
	if opts.ComposeArgs != "" {
		dc += " " + opts.ComposeArgs
	}
	pf := preflightIn(a, m.Service)
	host := shell.Quote(filepath.Clean(m.Source))
	// Every service that mounts the same host directory is stopped first
	// and started after: a writer left running would keep writing the old
	// directory. The one-shot container has no Docker API to check that
	// itself, so the stop is the verification (--allow-unverified); a
	// writer it still sees is refused.
	users := servicesUsing(a, filepath.Clean(m.Source))
	out := []string{fmt.Sprintf("%s stop %s", dc, strings.Join(users, " "))}
	if pf != "" {
		out = append(out, fmt.Sprintf("%s run --rm --no-deps --user 0:0 -v %s:/from -v %s:/to --entrypoint %s %s migrate --allow-unverified --from /from --to /to",
			dc, host, rw.Volume, pf, m.Service))
	} else {
		out = append(out,
			fmt.Sprintf("%s create %s", dc, m.Service),
			fmt.Sprintf("docker run --rm --user 0:0 --entrypoint /preflight -v %s:/from -v %s:/to %s migrate --allow-unverified --from /from --to /to", host, rw.VolumeName, opts.MigrateImage))
	}
	return append(out, fmt.Sprintf("%s up -d %s", dc, strings.Join(users, " ")))
}

// servicesUsing lists, in order, the services that mount host directory
// src (bind source equal to it, inside it or containing it).
func servicesUsing(a *Analysis, src string) []string {
	var out []string
	for _, m := range a.Mounts {
		if m.Type != types.VolumeTypeBind || m.Source == "" || slices.Contains(out, m.Service) {
			continue
		}
		s := filepath.Clean(m.Source)
		if s == src || strings.HasPrefix(s, src+"/") || strings.HasPrefix(src, s+"/") {
			out = append(out, m.Service)
		}
	}
	return out
}

// preflightIn returns the path of the preflight binary the service's image
// runs (from its entrypoint or command), or "".
func preflightIn(a *Analysis, service string) string {
	if a.loaded == nil {
		return ""
	}
	s, ok := a.loaded.Project.Services[service]
	if !ok {
		return ""
	}
	for _, x := range append(append([]string{}, s.Entrypoint...), s.Command...) {
		if path.Base(x) == "preflight" {
			return x
		}
	}
	return ""
}

// UnifiedDiff renders the edits as a unified diff (a/FILE, b/FILE paths
// relative to dir when inside it).
func UnifiedDiff(edits []FileEdit, dir string) (string, error) {
	var b strings.Builder
	for _, e := range edits {
		if !e.Changed() {
			continue
		}
		name := e.File
		if rel, err := filepath.Rel(dir, e.File); err == nil && !strings.HasPrefix(rel, "..") {
			name = rel
		}
		s, err := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
			A: splitLines(e.Before), B: splitLines(e.After),
			FromFile: "a/" + name, ToFile: "b/" + name, Context: 3,
		})
		if err != nil {
			return "", fmt.Errorf("diff %s: %w", name, err)
		}
		b.WriteString(s)
	}
	return b.String(), nil
}

// Verify checks that each rewritten mount is the named volume in p, a
// project loaded again after the edits were written.
func (a *Analysis) Verify(p *types.Project) error {
	for _, rw := range a.Rewrites {
		if rw.Refused != "" {
			continue
		}
		s, ok := p.Services[rw.Service]
		if !ok {
			return fmt.Errorf("verify: service %s is gone after the rewrite", rw.Service)
		}
		ok = false
		for _, v := range s.Volumes {
			if path.Clean(v.Target) == rw.Target && v.Type == types.VolumeTypeVolume && v.Source == rw.Volume {
				ok = true
			}
		}
		if !ok {
			return fmt.Errorf("verify: %s:%s is not volume %s after the rewrite", rw.Service, rw.Target, rw.Volume)
		}
	}
	return nil
}

// splitLines splits b after each newline; a last line without one gets
// one, so it prints as a line (difflib.SplitLines adds an empty line).
func splitLines(b []byte) []string {
	lines := strings.SplitAfter(string(b), "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	} else {
		lines[len(lines)-1] += "\n"
	}
	return lines
}

// crlf reports whether most of src's lines end in CRLF.
func crlf(src []byte) bool {
	n := bytes.Count(src, []byte("\n"))
	return n > 0 && bytes.Count(src, []byte("\r\n"))*2 > n
}
