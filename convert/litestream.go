package convert

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
)

// litestreamConfigs are the configuration files Litestream reads by default.
var litestreamConfigs = []string{"/etc/litestream.yml", "/etc/litestream.yaml"}

// litestreamEvidence lists the signs that Litestream replicates dbPath: its
// shadow directory .<name>-litestream beside the database, a litestream
// process on this kernel, a default configuration file naming the database.
func litestreamEvidence(dbPath string) []string {
	var ev []string
	shadow := filepath.Join(filepath.Dir(dbPath), "."+filepath.Base(dbPath)+"-litestream")
	if fi, err := os.Stat(shadow); err == nil && fi.IsDir() {
		ev = append(ev, "its directory "+shadow+" exists")
	}
	for _, pid := range litestreamProcesses() {
		ev = append(ev, "a litestream process runs (pid "+pid+")")
	}
	abs, err := filepath.Abs(dbPath)
	if err != nil {
		abs = dbPath
	}
	for _, c := range litestreamConfigs {
		f, err := os.Open(c)
		if err != nil {
			continue
		}
		mentions := ConfigMentions(f, abs)
		f.Close()
		if mentions {
			ev = append(ev, c+" names it")
		}
	}
	return ev
}

// ConfigMentions reports whether a Litestream configuration read from r
// names dbPath (as a path: followed by a quote, space or line end).
func ConfigMentions(r io.Reader, dbPath string) bool {
	b, err := io.ReadAll(io.LimitReader(r, 1<<20))
	if err != nil {
		return false
	}
	p := []byte(dbPath)
	for i := 0; ; {
		j := bytes.Index(b[i:], p)
		if j < 0 {
			return false
		}
		end := i + j + len(p)
		if end == len(b) || bytes.IndexByte([]byte("\"' \t\r\n#"), b[end]) >= 0 {
			return true
		}
		i = end
	}
}
