//go:build linux

package sqlitefile_test

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/preflight-sqlite/preflight/probe/sqlitefile"
)

// found is the part of a Database that the Discover tests compare.
type found struct {
	Path      string // relative to the test directory
	New       bool
	NotSQLite bool
	Mode      sqlitefile.JournalMode
	Err       bool
	Sidecars  string // which of w(al), s(hm), j(ournal) exist
}

func summarize(t *testing.T, base string, dbs []sqlitefile.Database) []found {
	t.Helper()
	out := []found{}
	for _, db := range dbs {
		rel, err := filepath.Rel(base, db.Path)
		if err != nil {
			t.Fatal(err)
		}
		var sc string
		for _, s := range []struct {
			c  string
			sc sqlitefile.Sidecar
		}{{"w", db.WAL}, {"s", db.SHM}, {"j", db.Journal}} {
			if s.sc.Exists {
				sc += s.c
			}
		}
		out = append(out, found{rel, db.New, db.NotSQLite, db.JournalMode, db.Err != "", sc})
	}
	return out
}

// realDB returns the bytes of a small real database made by the driver in
// the given journal mode.
func realDB(t *testing.T, mode string) []byte {
	t.Helper()
	path := filepath.Join(t.TempDir(), "src.db")
	createDB(t, path, "pragma journal_mode="+mode, "create table t(a)")
	return readFile(t, path)
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

func TestDiscover(t *testing.T) {
	rollback, wal := realDB(t, "delete"), realDB(t, "wal")
	dir := t.TempDir()
	files := map[string][]byte{
		"app.db":               rollback,
		"app.db-journal":       make([]byte, 1024),
		"cache.sqlite":         wal,
		"cache.sqlite-wal":     rollback, // sidecars are never read, whatever they hold
		"cache.sqlite-shm":     make([]byte, 32768),
		"UPPER.SQLITE3":        rollback,
		"data.bin":             wal,           // found by header string
		"short.bin":            rollback[:50], // under MinSniffSize, no database name: not read
		"empty.bin":            nil,
		"empty.db3":            nil,
		"notes.txt":            []byte("not a database\n"),
		"broken.db":            []byte("this file has a database name but no SQLite header\n"),
		"trunc.db":             rollback[:50],
		"sub/one.db":           wal,
		"sub/other.txt":        []byte("x"),
		"sub/deeper/two.db":    rollback,
		"sub/deeper/three.bin": rollback,
	}
	for name, b := range files {
		writeFile(t, filepath.Join(dir, name), b)
	}
	symlink(t, "app.db", filepath.Join(dir, "link.db"))          // same inode as app.db
	symlink(t, ".", filepath.Join(dir, "loop"))                  // loop to the root
	symlink(t, "missing", filepath.Join(dir, "dangling.txt"))    // ignored
	symlink(t, "missing.db", filepath.Join(dir, "dangling2.db")) // reported in Errors
	if err := os.Link(filepath.Join(dir, "cache.sqlite"), filepath.Join(dir, "sub", "hardlink.db")); err != nil {
		t.Fatal(err)
	}

	depth1 := []found{
		{Path: "UPPER.SQLITE3", Mode: sqlitefile.JournalRollback},
		{Path: "app.db", Mode: sqlitefile.JournalRollback, Sidecars: "j"},
		{Path: "broken.db", NotSQLite: true, Err: true},
		{Path: "cache.sqlite", Mode: sqlitefile.JournalWAL, Sidecars: "ws"},
		{Path: "data.bin", Mode: sqlitefile.JournalWAL},
		{Path: "empty.db3", New: true},
		{Path: "trunc.db", NotSQLite: true, Err: true},
	}
	depth2 := append(depth1[:len(depth1):len(depth1)], found{Path: "sub/one.db", Mode: sqlitefile.JournalWAL})
	depth3 := append(depth2[:len(depth2):len(depth2)],
		found{Path: "sub/deeper/three.bin", Mode: sqlitefile.JournalRollback},
		found{Path: "sub/deeper/two.db", Mode: sqlitefile.JournalRollback})
	dangling := "stat " + filepath.Join(dir, "dangling2.db") + ": no such file or directory"

	tests := []struct {
		maxDepth int
		want     []found
	}{
		{0, depth2},
		{-1, depth2},
		{1, depth1},
		{2, depth2},
		{3, depth3},
		{100, depth3},
	}
	for _, tt := range tests {
		res, err := sqlitefile.Discover([]string{dir}, sqlitefile.DiscoverOptions{MaxDepth: tt.maxDepth})
		if err != nil {
			t.Fatalf("Discover(MaxDepth %d): %v", tt.maxDepth, err)
		}
		if diff := cmp.Diff(tt.want, summarize(t, dir, res.Databases)); diff != "" {
			t.Errorf("Discover(MaxDepth %d) databases mismatch (-want +got):\n%s", tt.maxDepth, diff)
		}
		if diff := cmp.Diff([]string{dangling}, res.Errors); diff != "" {
			t.Errorf("Discover(MaxDepth %d) errors mismatch (-want +got):\n%s", tt.maxDepth, diff)
		}
	}
}

func TestDiscoverSymlinkedAndRepeatedDirs(t *testing.T) {
	root := t.TempDir()
	data := filepath.Join(root, "data")
	writeFile(t, filepath.Join(data, "a.db"), realDB(t, "wal"))
	writeFile(t, filepath.Join(data, "sub", "b.db"), realDB(t, "delete"))
	symlink(t, "data", filepath.Join(root, "link"))

	tests := []struct {
		dirs []string
		want []string
	}{
		{[]string{"data", "link", "data/", "link/sub", "data/sub/b.db"}, []string{"data/a.db", "data/sub/b.db"}},
		{[]string{"link", "data"}, []string{"link/a.db", "link/sub/b.db"}},
		{[]string{"link/sub", "data"}, []string{"link/sub/b.db", "data/a.db"}},
		{[]string{"data/sub/b.db", "link"}, []string{"data/sub/b.db", "link/a.db"}},
	}
	for _, tt := range tests {
		var dirs []string
		for _, d := range tt.dirs {
			dirs = append(dirs, root+"/"+d) // unclean on purpose: "data/"
		}
		res, err := sqlitefile.Discover(dirs, sqlitefile.DiscoverOptions{})
		if err != nil {
			t.Fatalf("Discover(%q): %v", tt.dirs, err)
		}
		var got []string
		for _, f := range summarize(t, root, res.Databases) {
			got = append(got, f.Path)
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("Discover(%q) mismatch (-want +got):\n%s", tt.dirs, diff)
		}
	}
}

func TestDiscoverSymlinkLoop(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "a", "x.db"), realDB(t, "delete"))
	// Two loops: without loop detection a walk of depth 1000 would visit
	// 2^1000 directories.
	symlink(t, "..", filepath.Join(dir, "a", "up"))
	symlink(t, ".", filepath.Join(dir, "a", "self"))
	symlink(t, "../a", filepath.Join(dir, "a", "again"))

	done := make(chan struct{})
	var res sqlitefile.Result
	var err error
	go func() {
		defer close(done)
		res, err = sqlitefile.Discover([]string{dir}, sqlitefile.DiscoverOptions{MaxDepth: 1000})
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("Discover on a symlink loop did not return within 30s")
	}
	if err != nil {
		t.Fatalf("Discover: %v", err)
	}
	want := []found{{Path: "a/x.db", Mode: sqlitefile.JournalRollback}}
	if diff := cmp.Diff(want, summarize(t, dir, res.Databases)); diff != "" {
		t.Errorf("Discover(symlink loop) mismatch (-want +got):\n%s", diff)
	}
}

func TestDiscoverFileArgument(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "state"), realDB(t, "wal"))
	writeFile(t, filepath.Join(dir, "state-wal"), make([]byte, 100))
	writeFile(t, filepath.Join(dir, "notes"), []byte("plain text, given explicitly\n"))

	res, err := sqlitefile.Discover([]string{filepath.Join(dir, "state"), filepath.Join(dir, "notes")}, sqlitefile.DiscoverOptions{})
	if err != nil {
		t.Fatalf("Discover(files): %v", err)
	}
	want := []found{
		{Path: "state", Mode: sqlitefile.JournalWAL, Sidecars: "w"},
		{Path: "notes", NotSQLite: true, Err: true},
	}
	if diff := cmp.Diff(want, summarize(t, dir, res.Databases)); diff != "" {
		t.Errorf("Discover(files) mismatch (-want +got):\n%s", diff)
	}
}

func TestDiscoverBadDirs(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "ok", "a.db"), realDB(t, "delete"))
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing")

	res, err := sqlitefile.Discover([]string{missing, filepath.Join(dir, "ok"), filepath.Join(dir, "fifo"), ""}, sqlitefile.DiscoverOptions{})
	if !errors.Is(err, sqlitefile.ErrDirMissing) {
		t.Errorf("Discover(missing dir) error = %v, want errors.Is ErrDirMissing", err)
	}
	wantErr := "discover " + missing + ": data directory does not exist\n" +
		"discover " + filepath.Join(dir, "fifo") + ": not a directory or regular file (mode p---------)\n" +
		"discover: empty path"
	if err == nil || err.Error() != wantErr {
		t.Errorf("Discover(bad dirs) error = %v, want %q", err, wantErr)
	}
	want := []found{{Path: "ok/a.db", Mode: sqlitefile.JournalRollback}}
	if diff := cmp.Diff(want, summarize(t, dir, res.Databases)); diff != "" {
		t.Errorf("Discover(bad dirs) still walks the good one: mismatch (-want +got):\n%s", diff)
	}

	res, err = sqlitefile.Discover(nil, sqlitefile.DiscoverOptions{})
	if err != nil || res.Databases == nil || len(res.Databases) != 0 {
		t.Errorf("Discover(nil) = %#v, %v; want empty non-nil Databases, nil", res, err)
	}
}

// TestDiscoverUnreadable checks that unreadable subdirectories and files are
// recorded and do not stop the walk. Root reads everything, so as root the
// check runs in a copy of the test binary as uid/gid 65534 (nobody).
func TestDiscoverUnreadable(t *testing.T) {
	dir, err := os.MkdirTemp("", "sqlitefile-unreadable-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			os.Chmod(p, 0o755)
			return nil
		})
		os.RemoveAll(dir)
	})
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "data")
	db := realDB(t, "delete")
	writeFile(t, filepath.Join(data, "a.db"), db)
	writeFile(t, filepath.Join(data, "locked", "b.db"), db)
	writeFile(t, filepath.Join(data, "secret.db"), db)
	writeFile(t, filepath.Join(data, "secret.bin"), db)
	writeFile(t, filepath.Join(data, "z", "c.db"), db)
	for _, p := range []string{"locked", "secret.db", "secret.bin"} {
		if err := os.Chmod(filepath.Join(data, p), 0); err != nil {
			t.Fatal(err)
		}
	}

	var res sqlitefile.Result
	if os.Geteuid() != 0 {
		res, err = sqlitefile.Discover([]string{data}, sqlitefile.DiscoverOptions{})
		if err != nil {
			t.Fatalf("Discover: %v", err)
		}
	} else {
		res = discoverAsNobody(t, dir, data)
	}

	want := []found{
		{Path: "a.db", Mode: sqlitefile.JournalRollback},
		{Path: "secret.db", Err: true},
		{Path: "z/c.db", Mode: sqlitefile.JournalRollback},
	}
	if diff := cmp.Diff(want, summarize(t, data, res.Databases)); diff != "" {
		t.Errorf("Discover(unreadable) databases mismatch (-want +got):\n%s", diff)
	}
	if got, want := res.Databases[1].Err, "open "+filepath.Join(data, "secret.db")+": permission denied"; got != want {
		t.Errorf("Discover(unreadable) secret.db Err = %q, want %q", got, want)
	}
	wantErrs := []string{
		"open " + filepath.Join(data, "secret.bin") + ": permission denied",
		"open " + filepath.Join(data, "locked") + ": permission denied",
	}
	if diff := cmp.Diff(wantErrs, res.Errors); diff != "" {
		t.Errorf("Discover(unreadable) errors mismatch (-want +got):\n%s", diff)
	}
}

// discoverAsNobody runs Discover(data) in a copy of the test binary placed
// in dir, as uid and gid 65534.
func discoverAsNobody(t *testing.T, dir, data string) sqlitefile.Result {
	t.Helper()
	bin := filepath.Join(dir, "sqlitefile.test")
	writeFile(t, bin, readFile(t, os.Args[0]))
	if err := os.Chmod(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	dirs, _ := json.Marshal([]string{data})
	cmd := exec.Command(bin)
	cmd.Env = []string{helperEnv + "=discover", dirsEnv + "=" + string(dirs), "PATH=/usr/bin:/bin"}
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("discover helper as uid 65534: %v; stderr: %s", err, stderrOf(err))
	}
	var o discoverOutput
	if err := json.Unmarshal(out, &o); err != nil {
		t.Fatalf("decode discover helper output %q: %v", out, err)
	}
	if o.Err != "" {
		t.Fatalf("Discover as uid 65534: %s", o.Err)
	}
	return o.Result
}

// snapshot records, for every file below dir, everything a write would
// change: type, permissions, size, modification time and content hash.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	snap := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		s := fi.Mode().String() + " " + fi.ModTime().Format(time.RFC3339Nano)
		if fi.Mode().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			s += fmt.Sprintf(" %d %x", len(b), sha256.Sum256(b))
		}
		snap[p] = s
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return snap
}

// TestDiscoverNeverWrites runs Discover and Inspect on a directory holding a
// live WAL database (connection open in another process) and checks that
// nothing in it changed.
func TestDiscoverNeverWrites(t *testing.T) {
	dir := t.TempDir()
	live := filepath.Join(dir, "live.db")
	startLiveWAL(t, live)
	writeFile(t, filepath.Join(dir, "other.db"), realDB(t, "delete"))
	writeFile(t, filepath.Join(dir, "sub", "empty.db"), nil)
	writeFile(t, filepath.Join(dir, "sub", "journal.db-journal"), make([]byte, 600))

	before := snapshot(t, dir)
	time.Sleep(10 * time.Millisecond) // let a write, if any, show in mtime
	res, err := sqlitefile.Discover([]string{dir}, sqlitefile.DiscoverOptions{})
	if err != nil {
		t.Fatalf("Discover: %v", err)
	}
	for _, p := range []string{live, filepath.Join(dir, "missing.db")} {
		if _, err := sqlitefile.Inspect(p); err != nil {
			t.Fatalf("Inspect(%q): %v", p, err)
		}
	}
	after := snapshot(t, dir)
	if diff := cmp.Diff(before, after); diff != "" {
		t.Errorf("Discover and Inspect changed the directory (-before +after):\n%s", diff)
	}

	want := []found{
		{Path: "live.db", Mode: sqlitefile.JournalWAL, Sidecars: "ws"},
		{Path: "other.db", Mode: sqlitefile.JournalRollback},
		{Path: "sub/empty.db", New: true},
	}
	if diff := cmp.Diff(want, summarize(t, dir, res.Databases)); diff != "" {
		t.Errorf("Discover(live WAL dir) mismatch (-want +got):\n%s", diff)
	}
}

// TestDiscoverSniffBudget: files without a database name are read only
// from MinSniffSize bytes up and only within the budget; the rest are
// counted, and files with a database name are inspected whatever is left.
func TestDiscoverSniffBudget(t *testing.T) {
	wal := realDB(t, "wal")
	dir := t.TempDir()
	for i := range 50 {
		writeFile(t, filepath.Join(dir, fmt.Sprintf("a%02d.tiny", i)), []byte("x")) // never counted
	}
	for i := range 10 {
		writeFile(t, filepath.Join(dir, fmt.Sprintf("b%02d.blob", i)), make([]byte, sqlitefile.MinSniffSize))
	}
	writeFile(t, filepath.Join(dir, "c.bin"), wal) // the 11th file to sniff
	writeFile(t, filepath.Join(dir, "z.db"), wal)
	writeFile(t, filepath.Join(dir, "sub", "d.bin"), wal)
	writeFile(t, filepath.Join(dir, "sub", "y.sqlite"), wal)

	for _, tc := range []struct {
		opts       sqlitefile.DiscoverOptions
		want       []string
		notSniffed int
	}{
		{sqlitefile.DiscoverOptions{SniffMax: -1, SniffTime: -1}, []string{"c.bin", "z.db", "sub/d.bin", "sub/y.sqlite"}, 0},
		{sqlitefile.DiscoverOptions{SniffMax: 11, SniffTime: -1}, []string{"c.bin", "z.db", "sub/y.sqlite"}, 1},
		{sqlitefile.DiscoverOptions{SniffMax: 10, SniffTime: -1}, []string{"z.db", "sub/y.sqlite"}, 2},
		// A deadline already past: nothing without a database name is
		// looked at, not even its size.
		{sqlitefile.DiscoverOptions{SniffMax: -1, SniffTime: time.Nanosecond}, []string{"z.db", "sub/y.sqlite"}, 50 + 10 + 2},
	} {
		calls := 0
		tc.opts.Progress = func() { calls++ }
		res, err := sqlitefile.Discover([]string{dir}, tc.opts)
		if err != nil {
			t.Fatalf("Discover(%+v): %v", tc.opts, err)
		}
		var got []string
		for _, f := range summarize(t, dir, res.Databases) {
			got = append(got, f.Path)
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("Discover(SniffMax %d, SniffTime %s) databases mismatch (-want +got):\n%s", tc.opts.SniffMax, tc.opts.SniffTime, diff)
		}
		if res.NotSniffed != tc.notSniffed {
			t.Errorf("Discover(SniffMax %d, SniffTime %s) NotSniffed = %d, want %d", tc.opts.SniffMax, tc.opts.SniffTime, res.NotSniffed, tc.notSniffed)
		}
		if calls < 4 { // at least: open and read of two directories
			t.Errorf("Discover(SniffMax %d, SniffTime %s) called Progress %d times, want at least 4", tc.opts.SniffMax, tc.opts.SniffTime, calls)
		}
	}
}

// TestDiscoverOneFilesystem: with OneFilesystem a directory on another
// device (here a symlink to a directory under /dev/shm, a tmpfs) is not
// walked, as find -xdev; a database beside it on the root's filesystem is
// found either way.
func TestDiscoverOneFilesystem(t *testing.T) {
	root := t.TempDir()
	other, err := os.MkdirTemp("/dev/shm", "discover-onefs-")
	if err != nil {
		t.Skipf("no /dev/shm: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(other) })
	var rs, os2 syscall.Stat_t
	if syscall.Stat(root, &rs) != nil || syscall.Stat(other, &os2) != nil || rs.Dev == os2.Dev {
		t.Skipf("%s and %s are on one device", root, other)
	}
	writeFile(t, filepath.Join(root, "app", "a.db"), realDB(t, "wal"))
	writeFile(t, filepath.Join(other, "b.db"), realDB(t, "wal"))
	symlink(t, other, filepath.Join(root, "shm"))
	for _, tt := range []struct {
		one  bool
		want []string
	}{{false, []string{"app/a.db", "shm/b.db"}}, {true, []string{"app/a.db"}}} {
		res, err := sqlitefile.Discover([]string{root}, sqlitefile.DiscoverOptions{OneFilesystem: tt.one})
		if err != nil {
			t.Fatalf("Discover(OneFilesystem %v): %v", tt.one, err)
		}
		var got []string
		for _, f := range summarize(t, root, res.Databases) {
			got = append(got, f.Path)
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("Discover(OneFilesystem %v) mismatch (-want +got):\n%s", tt.one, diff)
		}
	}
}
