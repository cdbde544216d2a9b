// Package bundle writes what an application's maintainers ask for in a
// bug report about a SQLite database in a container, as one tar.gz
// archive: the preflight version and platform, the engine, the mount
// table, the check --deep report (JSON and text), each database's header
// and WAL header with the frame summary, the lock holders and the compose
// labels of the container preflight runs in.
//
// It never adds row data or file contents beyond the headers: the
// 100-byte database header, the 32-byte WAL header, and a frame summary
// computed from the frame headers and checksums (probe/wal), never page
// contents. With Redact, host names, user names and paths outside the
// data directories are replaced with stable placeholders in every file.
package bundle

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"runtime"
	"time"

	"github.com/preflight-sqlite/preflight/internal/rawfile"
	"github.com/preflight-sqlite/preflight/probe/docker"
	"github.com/preflight-sqlite/preflight/probe/sqlitefile"
	"github.com/preflight-sqlite/preflight/probe/wal"
	"github.com/preflight-sqlite/preflight/report"
)

// Dir is the directory every file of the archive is under.
const Dir = "preflight-bundle"

// Input is what goes into a bundle besides what Write reads itself (the
// mount table, the headers).
type Input struct {
	// Version is preflight's version.
	Version string
	// Report is the check --deep report for the paths; ReportJSON and
	// ReportText are it as check --format json and the text render it.
	Report     *report.Report
	ReportJSON []byte
	ReportText []byte
	// Redact replaces host names, user names and paths outside the data
	// directories with placeholders.
	Redact bool
	// Now is the archive's time (the files' mtime and version.json's
	// created_at); zero is time.Now().
	Now time.Time
	// MountInfo is the mount table file to include; "" is
	// /proc/self/mountinfo.
	MountInfo string
}

// File is one file of the archive, in Manifest.
type File struct {
	Name string `json:"name"`
	Size int    `json:"size"`
}

// Manifest says what Write put in the archive.
type Manifest struct {
	Files []File `json:"files"`
	// Redacted counts the placeholders by kind ("host", "user", "path").
	Redacted map[string]int `json:"redacted,omitempty"`
}

// Version is version.json.
type Version struct {
	Preflight string         `json:"preflight"`
	Go        string         `json:"go"`
	OS        string         `json:"os"`
	Arch      string         `json:"arch"`
	Kernel    string         `json:"kernel,omitempty"`
	Engine    *docker.Engine `json:"engine,omitempty"`
	CreatedAt time.Time      `json:"created_at"`
	Redacted  bool           `json:"redacted"`
	Paths     []string       `json:"paths"`
}

// DatabaseHeaders is databases/N.json: the headers of one database.
type DatabaseHeaders struct {
	Path string `json:"path"`
	// HeaderHex is the 100-byte database header in hex; Header it
	// parsed. Empty when it could not be read (Err says why).
	HeaderHex string             `json:"header_hex,omitempty"`
	Header    *sqlitefile.Header `json:"header,omitempty"`
	// LibraryVersion is the SQLite that last wrote the file ("3.40.1").
	LibraryVersion string `json:"sqlite_version,omitempty"`
	// WALHeaderHex is the 32-byte header of the -wal, WAL its frame
	// summary (no page contents); absent without a -wal.
	WALHeaderHex string      `json:"wal_header_hex,omitempty"`
	WAL          *wal.Report `json:"wal,omitempty"`
	Err          string      `json:"error,omitempty"`
}

// Container is container.json: the container preflight ran in, as the
// Engine API describes it (its compose labels), when it could tell.
type Container struct {
	InContainer bool              `json:"in_container"`
	Self        *docker.Container `json:"self,omitempty"`
	Note        string            `json:"note,omitempty"`
}

// Write writes the bundle for in to w as a tar.gz archive and returns its
// manifest. It reads the mount table and each database's headers; a file
// it cannot read is said in the archive (its error), not fatal. Errors
// are those of writing w.
func Write(w io.Writer, in Input) (Manifest, error) {
	if in.Report == nil {
		return Manifest{}, errors.New("write bundle: no report")
	}
	now := in.Now
	if now.IsZero() {
		now = time.Now()
	}
	files := collect(in, now)
	var red *redactor
	if in.Redact {
		red = newRedactor(in.Report, files[mountsFile].data)
	}
	gz := gzip.NewWriter(w)
	tw := tar.NewWriter(gz)
	var m Manifest
	for _, f := range files {
		b := f.data
		if red != nil {
			b = red.apply(b)
		}
		hdr := &tar.Header{Name: Dir + "/" + f.name, Mode: 0o644, Size: int64(len(b)), ModTime: now, Typeflag: tar.TypeReg, Format: tar.FormatPAX}
		if err := tw.WriteHeader(hdr); err != nil {
			return m, fmt.Errorf("write bundle: %w", err)
		}
		if _, err := tw.Write(b); err != nil {
			return m, fmt.Errorf("write bundle: %w", err)
		}
		m.Files = append(m.Files, File{Name: hdr.Name, Size: len(b)})
	}
	if err := tw.Close(); err != nil {
		return m, fmt.Errorf("write bundle: %w", err)
	}
	if err := gz.Close(); err != nil {
		return m, fmt.Errorf("write bundle: %w", err)
	}
	if red != nil {
		m.Redacted = red.counts()
	}
	return m, nil
}

// mountsFile is the index of mounts.txt in collect's files.
const mountsFile = 2

type file struct {
	name string
	data []byte
}

// collect builds the archive's files, in the archive's order.
func collect(in Input, now time.Time) []file {
	r := in.Report
	var paths []string
	for _, d := range r.DataDirs {
		paths = append(paths, d.Path)
	}
	v := Version{Preflight: in.Version, Go: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH,
		Kernel: kernel(), Engine: r.Engine, CreatedAt: now.UTC(), Redacted: in.Redact, Paths: paths}
	files := []file{
		{"README.txt", []byte(readme)},
		{"version.json", jsonOf(v)},
		mountsFile: {"mounts.txt", mountTable(in.MountInfo)},
		{"check.json", in.ReportJSON},
		{"check.txt", in.ReportText},
	}
	n := 0
	var holders []map[string]any
	for _, d := range r.DataDirs {
		for _, db := range d.Databases {
			if db.New || db.NotSQLite {
				continue
			}
			n++
			files = append(files, file{fmt.Sprintf("databases/%02d.json", n), jsonOf(headers(db.Path))})
			holders = append(holders, map[string]any{"path": db.Path, "lock_holders": nonNil(db.LockHolders), "lock_watch": db.LockWatch})
		}
	}
	files = append(files, file{"locks.json", jsonOf(nonNilMaps(holders))})
	c := Container{}
	switch {
	case r.Docker != nil && r.Docker.Self != nil:
		c.InContainer, c.Self = true, r.Docker.Self
	case r.Docker == nil:
		c.Note = "the Docker probe did not run (--docker off, or no engine)"
	default:
		c.Note = "preflight did not find a container of its own: it ran on the host, or the engine did not say"
	}
	return append(files, file{"container.json", jsonOf(c)})
}

// headers reads the database header and the WAL header of path, and the
// WAL's frame summary.
func headers(path string) DatabaseHeaders {
	h := DatabaseHeaders{Path: path}
	b, err := readPrefix(path, sqlitefile.HeaderSize)
	if err != nil {
		h.Err = err.Error()
		return h
	}
	h.HeaderHex = hex.EncodeToString(b)
	if p, err := sqlitefile.ParseHeader(b); err == nil {
		h.Header, h.LibraryVersion = &p, p.LibraryVersion()
	} else {
		h.Err = err.Error()
	}
	wb, err := readPrefix(path+"-wal", wal.HeaderSize)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return h
	case err != nil:
		h.Err = err.Error()
		return h
	}
	h.WALHeaderHex = hex.EncodeToString(wb)
	if rep, err := wal.ValidateFile(path + "-wal"); err == nil {
		h.WAL = &rep
	} else {
		h.Err = err.Error()
	}
	return h
}

// readPrefix reads the first n bytes of the regular file at path (fewer
// when it is shorter), through rawfile (never a blocking open).
func readPrefix(path string, n int) ([]byte, error) {
	f, err := rawfile.Open(path, false)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b := make([]byte, n)
	k, err := io.ReadFull(f, b)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return b[:k], nil
}

// mountTable is the mount table file's content, or why it is missing.
func mountTable(path string) []byte {
	if path == "" {
		path = "/proc/self/mountinfo"
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return []byte(fmt.Sprintf("mount table not read: %v\n", err))
	}
	return b
}

func jsonOf(v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return []byte(fmt.Sprintf("{\"error\": %q}\n", err.Error()))
	}
	return b.Bytes()
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func nonNilMaps(s []map[string]any) []map[string]any { return nonNil(s) }

const readme = `preflight bundle: what maintainers need to tell why SQLite fails in a container.

version.json    preflight, Go, OS and kernel, the container engine
mounts.txt      the mount table preflight saw (/proc/self/mountinfo)
check.json      preflight check --deep for the paths (JSON, schema preflight/v1)
check.txt       the same as text
databases/*.json  each database's 100-byte header and 32-byte WAL header (hex and
                parsed) and the WAL frame summary: no page contents
locks.json      who holds which of SQLite's locks on each database
container.json  the container preflight ran in and its compose labels

It holds no row data and no file contents beyond those headers. With --redact,
host names, user names and paths outside the data directories are replaced
with placeholders (host-1, user-1, /redacted-path-1), the same one for the
same name in every file.
`
