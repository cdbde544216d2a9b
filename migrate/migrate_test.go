package migrate_test

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/preflight-sqlite/preflight/internal/testdb"
	"github.com/preflight-sqlite/preflight/migrate"
	"github.com/preflight-sqlite/preflight/probe/docker"
)

func TestRunCopiesAndVerifies(t *testing.T) {
	from := t.TempDir()
	// A WAL database with its -wal holding rows not checkpointed yet.
	db := testdb.Open(t, filepath.Join(from, "app.db"), "wal", 50)
	if _, err := db.Exec("PRAGMA wal_autocheckpoint=0; PRAGMA user_version=7"); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if err := os.MkdirAll(filepath.Join(from, "sub", "deeper"), 0o750); err != nil {
		t.Fatal(err)
	}
	testdb.Make(t, filepath.Join(from, "sub", "other.sqlite"), "delete", 3)
	if err := os.WriteFile(filepath.Join(from, "sub", "deeper", "notes.txt"), []byte("hello"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("sub/deeper/notes.txt", filepath.Join(from, "link")); err != nil {
		t.Fatal(err)
	}
	old := time.Date(2020, 1, 2, 3, 4, 5, 0, time.UTC)
	if err := os.Chtimes(filepath.Join(from, "sub", "deeper", "notes.txt"), old, old); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() == 0 {
		if err := os.Lchown(filepath.Join(from, "sub", "deeper", "notes.txt"), 4242, 4343); err != nil {
			t.Fatal(err)
		}
	}
	to := filepath.Join(t.TempDir(), "volume")
	res, err := migrate.Run(context.Background(), migrate.Options{From: from, To: to, Docker: docker.Options{Mode: docker.ModeOff}, AllowUnverified: true})
	if err != nil {
		t.Fatalf("Run: %v (%+v)", err, res)
	}
	if len(res.Databases) != 2 || len(res.Files) != 1 || res.Symlinks != 1 || res.Dirs != 2 {
		t.Fatalf("Run = %d databases, %d files, %d symlinks, %d dirs; want 2, 1, 1, 2: %+v", len(res.Databases), len(res.Files), res.Symlinks, res.Dirs, res)
	}
	for _, d := range res.Databases {
		if !d.Verified || d.QuickCheck != "ok" {
			t.Errorf("database %s not verified: %+v", d.Path, d)
		}
		if d.Path == "app.db" && (d.JournalMode != "wal" || d.UserVersion != 7 || d.Tables[0].To != 50) {
			t.Errorf("app.db copy: %+v", d)
		}
	}
	// The WAL copy is one clean file: WAL in its header (bytes 18/19), no
	// -wal or -shm beside it.
	for _, sc := range []string{"-wal", "-shm"} {
		if _, err := os.Lstat(filepath.Join(to, "app.db"+sc)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the copy has app.db%s beside it (%v), want none", sc, err)
		}
	}
	if h, err := os.ReadFile(filepath.Join(to, "app.db")); err != nil || len(h) < 20 || h[18] != 2 || h[19] != 2 {
		t.Errorf("copy header bytes 18/19: %v, want 2/2 (WAL)", err)
	}
	// The copy opens with the driver and has every row.
	c, err := sql.Open("sqlite", "file:"+filepath.Join(to, "app.db")+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var mode string
	if err := c.QueryRow("PRAGMA journal_mode").Scan(&mode); err != nil || mode != "wal" {
		t.Errorf("copy journal mode %q, %v; want wal", mode, err)
	}
	fi, err := os.Stat(filepath.Join(to, "sub", "deeper", "notes.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 || !fi.ModTime().Equal(old) {
		t.Errorf("notes.txt copy: mode %v, mtime %v; want 0600, %v", fi.Mode().Perm(), fi.ModTime(), old)
	}
	if di, err := os.Stat(filepath.Join(to, "sub")); err != nil || di.Mode().Perm() != 0o750 {
		t.Errorf("sub copy: %v, %v; want mode 0750", di.Mode(), err)
	}
	if l, err := os.Readlink(filepath.Join(to, "link")); err != nil || l != "sub/deeper/notes.txt" {
		t.Errorf("link copy = %q, %v", l, err)
	}
}

func TestRunRefuses(t *testing.T) {
	from := t.TempDir()
	testdb.Make(t, filepath.Join(from, "app.db"), "wal", 3)
	to := t.TempDir()
	if err := os.WriteFile(filepath.Join(to, "x"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := migrate.Run(context.Background(), migrate.Options{From: from, To: to, Docker: docker.Options{Mode: docker.ModeOff}})
	if !errors.Is(err, migrate.ErrRefused) || !errors.Is(err, migrate.ErrNotEmpty) {
		t.Errorf("Run into a non-empty --to = %v, want ErrRefused, ErrNotEmpty", err)
	}
	// A live writer: another process with the database open.
	sqlite3, err := exec.LookPath("sqlite3")
	if err != nil {
		t.Skipf("sqlite3 not installed: %v", err)
	}
	cmd := exec.Command(sqlite3, filepath.Join(from, "app.db"))
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { in.Close(); cmd.Wait() }()
	if _, err := in.Write([]byte("BEGIN; SELECT count(*) FROM t;\n")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	// No flag overrides a writer that was seen.
	res, err := migrate.Run(context.Background(), migrate.Options{From: from, To: filepath.Join(t.TempDir(), "v"), Docker: docker.Options{Mode: docker.ModeOff}, AllowUnverified: true})
	if !errors.Is(err, migrate.ErrRefused) || !strings.Contains(strings.Join(res.Refused, " "), "is open by process") {
		t.Errorf("Run with the database open in sqlite3 = %v (%q), want ErrRefused naming the process", err, res.Refused)
	}
}

// TestRunRefusesUnverified: with the Docker probe off, other containers
// cannot be ruled out, so the copy needs --allow-unverified.
func TestRunRefusesUnverified(t *testing.T) {
	from := t.TempDir()
	testdb.Make(t, filepath.Join(from, "app.db"), "delete", 3)
	to := filepath.Join(t.TempDir(), "v")
	res, err := migrate.Run(context.Background(), migrate.Options{From: from, To: to, Docker: docker.Options{Mode: docker.ModeOff}})
	if !errors.Is(err, migrate.ErrRefused) || !errors.Is(err, migrate.ErrInUse) || !strings.Contains(strings.Join(res.Refused, " "), "could not be ruled out") {
		t.Errorf("Run with Docker off = %v (%q), want ErrRefused, ErrInUse: writers could not be ruled out", err, res.Refused)
	}
	if _, err := os.Lstat(to); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused Run created --to: %v", err)
	}
}

// TestRunRefusesBrokenWAL: valid-looking frames after a broken one would be
// dropped by SQLite on the read; the copy would silently lose them.
func TestRunRefusesBrokenWAL(t *testing.T) {
	src := filepath.Join(t.TempDir(), "src.db")
	db := testdb.Open(t, src, "wal", 0)
	db.Exec(`pragma wal_autocheckpoint=0`)
	for i := 0; i < 20; i++ {
		db.Exec(`insert into t(v) values (?)`, strings.Repeat("x", 500))
	}
	from := t.TempDir()
	for _, s := range []string{"", "-wal"} {
		b, err := os.ReadFile(src + s)
		if err != nil {
			t.Fatal(err)
		}
		if s == "-wal" {
			b[32+2*(24+4096)+24+100] ^= 0xff // frame 3's page
		}
		if err := os.WriteFile(filepath.Join(from, "app.db"+s), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	to := filepath.Join(t.TempDir(), "v")
	res, err := migrate.Run(context.Background(), migrate.Options{From: from, To: to, Docker: docker.Options{Mode: docker.ModeOff}, AllowUnverified: true})
	if !errors.Is(err, migrate.ErrSourceState) || !strings.Contains(strings.Join(res.Refused, " "), "breaks at frame 3") {
		t.Errorf("Run with a broken WAL frame = %v (%q), want ErrSourceState naming frame 3", err, res.Refused)
	}
	if _, err := os.Lstat(to); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused Run created --to: %v", err)
	}
}

// A --from on a filesystem that stops answering is refused within
// FSTimeout, before anything is read or created.
func TestRunRefusesUnresponsiveSource(t *testing.T) {
	backing := t.TempDir()
	testdb.Make(t, filepath.Join(backing, "app.db"), "wal", 1)
	from := testdb.StoppedFUSE(t, backing)
	to := filepath.Join(t.TempDir(), "new")
	start := time.Now()
	res, err := migrate.Run(context.Background(), migrate.Options{From: from, To: to, FSTimeout: time.Second,
		Docker: docker.Options{Mode: docker.ModeOff}, AllowUnverified: true})
	if el := time.Since(start); el > 3*time.Second {
		t.Errorf("migrate from a stopped mount took %s, want about the 1s timeout", el)
	}
	if !errors.Is(err, migrate.ErrRefused) || len(res.Refused) == 0 || !strings.Contains(res.Refused[0], "did not answer") {
		t.Errorf("migrate from a stopped mount: err %v, refused %q; want ErrRefused, did not answer", err, res.Refused)
	}
	if _, err := os.Stat(to); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("migrate from a stopped mount created --to: %v", err)
	}
}
