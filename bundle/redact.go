package bundle

import (
	"bufio"
	"fmt"
	"os"
	"os/user"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/preflight-sqlite/preflight/report"
)

// redactor replaces host names, user names and paths outside the data
// directories with placeholders, the same one for the same value across
// every file it is applied to.
type redactor struct {
	keep  []string // data directories: paths at or under these stay
	names *regexp.Regexp
	kind  map[string]string // host or user name -> "host" or "user"
	seen  map[string]string // value -> placeholder
	n     map[string]int    // kind -> placeholders made
}

// systemPrefixes are paths that name no user, host or project: the
// kernel's filesystems. They stay.
var systemPrefixes = []string{"/proc", "/sys", "/dev"}

// pathToken is an absolute path as text holds it; a match counts only at
// the start or after a separator (not inside a URL or "3/4").
var pathToken = regexp.MustCompile(`/[^\s"',;()\[\]{}<>|*]*`)

// remoteSource is a network filesystem's source in a mount table:
// host:/export (NFS, sshfs) or //host/share (SMB).
var remoteSource = regexp.MustCompile(`(?:^|\s)(?://([^/\s]+)/|([A-Za-z0-9][A-Za-z0-9.\-_\[\]]*):/)`)

// remoteAddr is a server address in mount options (addr=, clientaddr=,
// ip=).
var remoteAddr = regexp.MustCompile(`\b(?:addr|clientaddr|ip)=([0-9A-Fa-f.:]+)`)

func newRedactor(r *report.Report, mountTable []byte) *redactor {
	red := &redactor{kind: map[string]string{}, seen: map[string]string{}, n: map[string]int{}}
	for _, d := range r.DataDirs {
		for _, p := range []string{d.Path, d.Resolved, d.ContainerPath} {
			if strings.HasPrefix(p, "/") && p != "/" {
				red.keep = append(red.keep, strings.TrimRight(p, "/"))
			}
		}
	}
	hosts := []string{}
	if h, err := os.Hostname(); err == nil {
		hosts = append(hosts, h)
	}
	if r.Engine != nil {
		hosts = append(hosts, r.Engine.Name)
	}
	for _, m := range remoteSource.FindAllStringSubmatch(string(mountTable), -1) {
		hosts = append(hosts, m[1]+m[2])
	}
	for _, m := range remoteAddr.FindAllStringSubmatch(string(mountTable), -1) {
		hosts = append(hosts, m[1])
	}
	for _, h := range hosts {
		red.name(h, "host")
		if short, _, ok := strings.Cut(h, "."); ok {
			red.name(short, "host")
		}
	}
	for _, u := range userNames(r) {
		red.name(u, "user")
	}
	var names []string
	for v := range red.kind {
		names = append(names, v)
	}
	red.names = mustNames(names...)
	return red
}

// mustNames matches any of names, longest first (so that a name inside
// another is not matched first); nil for none.
func mustNames(names ...string) *regexp.Regexp {
	if len(names) == 0 {
		return nil
	}
	var alts []string
	for _, v := range names {
		alts = append(alts, regexp.QuoteMeta(v))
	}
	slices.SortFunc(alts, func(a, b string) int { return len(b) - len(a) })
	return regexp.MustCompile(strings.Join(alts, "|"))
}

// name adds v as a name of kind, unless it is too short or common to
// replace without mangling the text.
func (red *redactor) name(v, kind string) {
	if len(v) < 2 || v == "root" || v == "localhost" || v == "nobody" {
		return
	}
	if _, ok := red.kind[v]; !ok {
		red.kind[v] = kind
	}
}

// userNames are the names of people that may appear: the current user
// and the login environment's, the users named in the report (writers,
// lock holders), and the accounts of /etc/passwd with a uid of 1000 or
// more (not system accounts).
func userNames(r *report.Report) []string {
	var out []string
	if u, err := user.Current(); err == nil && u.Uid != "0" {
		out = append(out, u.Username)
	}
	for _, k := range []string{"USER", "LOGNAME", "SUDO_USER"} {
		out = append(out, os.Getenv(k))
	}
	for _, d := range r.DataDirs {
		for _, db := range d.Databases {
			for _, w := range db.Writers {
				out = append(out, w.User)
			}
			for _, h := range db.LockHolders {
				out = append(out, h.User)
			}
		}
	}
	if f, err := os.Open("/etc/passwd"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			fields := strings.Split(sc.Text(), ":")
			if len(fields) < 3 {
				continue
			}
			if uid, err := strconv.Atoi(fields[2]); err == nil && uid >= 1000 && uid < 65534 {
				out = append(out, fields[0])
			}
		}
		f.Close()
	}
	return out
}

// apply returns b with every path outside the data directories and every
// host and user name replaced.
func (red *redactor) apply(b []byte) []byte {
	s := string(b)
	var out strings.Builder
	last := 0
	for _, m := range pathToken.FindAllStringIndex(s, -1) {
		i, j := m[0], m[1]
		if i > 0 && !strings.ContainsRune(" \t\n\r\"'=(,[:", rune(s[i-1])) || i > 0 && s[i-1] == ':' && j > i+1 && s[i+1] == '/' {
			continue // inside a word, a URL (https://...) or a fraction
		}
		tok := strings.TrimRight(s[i:j], ".:")
		j = i + len(tok)
		if red.kept(tok) {
			continue
		}
		out.WriteString(s[last:i])
		out.WriteString(red.placeholder(tok, "path"))
		last = j
	}
	out.WriteString(s[last:])
	s = out.String()
	if red.names == nil {
		return []byte(s)
	}
	out.Reset()
	last = 0
	for _, m := range red.names.FindAllStringIndex(s, -1) {
		i, j := m[0], m[1]
		if i > 0 && nameChar(s[i-1], true) || j < len(s) && nameChar(s[j], false) {
			continue // part of a longer word, a path or a class such as cross-vm
		}
		out.WriteString(s[last:i])
		out.WriteString(red.placeholder(s[i:j], red.kind[s[i:j]]))
		last = j
	}
	out.WriteString(s[last:])
	return []byte(out.String())
}

// nameChar reports whether c, next to a name, makes it part of something
// longer: a letter, digit, _ or -, a /, and before it a dot (a domain's
// tail).
func nameChar(c byte, before bool) bool {
	switch {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '_', c == '-', c == '/':
		return true
	case c == '.':
		return before
	}
	return false
}

// kept reports whether path p stays: "/", a kernel filesystem, or at or
// under a data directory.
func (red *redactor) kept(p string) bool {
	if p == "/" || p == "" {
		return true
	}
	for _, pre := range systemPrefixes {
		if p == pre || strings.HasPrefix(p, pre+"/") {
			return true
		}
	}
	for _, k := range red.keep {
		if p == k || strings.HasPrefix(p, k+"/") || strings.HasPrefix(p, k+"-") {
			return true // the directory, what is in it, a database's -wal beside it
		}
	}
	return false
}

func (red *redactor) placeholder(v, kind string) string {
	if p, ok := red.seen[v]; ok {
		return p
	}
	red.n[kind]++
	p := fmt.Sprintf("%s-%d", kind, red.n[kind])
	if kind == "path" {
		p = "/redacted-" + p
	}
	red.seen[v] = p
	return p
}

func (red *redactor) counts() map[string]int { return red.n }
