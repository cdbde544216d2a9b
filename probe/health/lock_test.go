//go:build linux

package health_test

import (
	"bufio"
	"context"
	"database/sql"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/preflight-sqlite/preflight/internal/testdb"
	"github.com/preflight-sqlite/preflight/probe/health"
)

// TestCheckIntegrityWALWriterHoldsLock: a sibling process holds the write
// lock (BEGIN IMMEDIATE plus an uncommitted write) on a WAL database for
// four seconds. Readers do not wait for writers in WAL mode, so the check
// completes at once.
func TestCheckIntegrityWALWriterHoldsLock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "app.db")
	makeDB(t, path, "wal", 2000)
	startSibling(t, "hold", path, "begin immediate", "insert into t(v) values ('uncommitted')")

	got := health.CheckIntegrity(context.Background(), path, health.Options{BusyTimeout: time.Second})
	t.Logf("CheckIntegrity with a WAL writer holding the write lock: %v (ok %v, err %q)", got.Elapsed, got.OK, got.Err)
	if !got.OK || got.Locked {
		t.Errorf("CheckIntegrity(WAL, writer active) = %+v, want OK", got)
	}
	if got.Elapsed > 2*time.Second {
		t.Errorf("CheckIntegrity(WAL, writer active) took %v, want well under 2s", got.Elapsed)
	}
}

// TestCheckIntegrityWALWriterSQLite3CLI is the same with Debian's sqlite3
// (a C SQLite, another implementation of the locks) as the writer.
func TestCheckIntegrityWALWriterSQLite3CLI(t *testing.T) {
	sqlite3 := requireTool(t, "sqlite3")
	path := filepath.Join(t.TempDir(), "app.db")
	makeDB(t, path, "wal", 2000)
	cmd := exec.Command(sqlite3, path)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { stdin.Close(); cmd.Wait() }()
	io.WriteString(stdin, "begin immediate;\ninsert into t(v) values ('uncommitted');\nselect 'ready';\n")
	if line, err := bufio.NewReader(stdout).ReadString('\n'); err != nil || line != "ready\n" {
		t.Fatalf("sqlite3 said %q, %v; want ready", line, err)
	}
	got := health.CheckIntegrity(context.Background(), path, health.Options{})
	t.Logf("CheckIntegrity with sqlite3 holding the WAL write lock: %v", got.Elapsed)
	if !got.OK || got.Elapsed > 2*time.Second {
		t.Errorf("CheckIntegrity(WAL, sqlite3 writer) = %+v, want OK in under 2s", got)
	}
}

// TestCheckIntegrityRollbackExclusive: a sibling holds an EXCLUSIVE lock
// with a write on a rollback-mode database. The check must give up after
// the busy timeout with Locked, not hang, and must not mistake the
// writer's live journal for a hot one.
func TestCheckIntegrityRollbackExclusive(t *testing.T) {
	path := filepath.Join(t.TempDir(), "app.db")
	makeDB(t, path, "delete", 2000)
	startSibling(t, "hold", path, "begin exclusive", "update t set v = v || 'x'")

	j, err := health.InspectJournal(path)
	if err != nil {
		t.Fatal(err)
	}
	if !j.Exists || j.WriterLock != health.LockHeld || j.Hot {
		t.Errorf("InspectJournal(live writer) = %+v, want a journal, writer lock held, not hot", j)
	}

	const busy = 300 * time.Millisecond
	got := health.CheckIntegrity(context.Background(), path, health.Options{BusyTimeout: busy})
	t.Logf("CheckIntegrity against BEGIN EXCLUSIVE, busy timeout %v: %v, err %q", busy, got.Elapsed, got.Err)
	if got.Ran || got.OK || !got.Locked || got.Err != health.ErrTextLocked {
		t.Errorf("CheckIntegrity(exclusive lock) = %+v, want Locked, Err %q", got, health.ErrTextLocked)
	}
	// It waits on the lock (SQLite's busy handler sleeps in steps, so it may
	// give up a little before the timeout), and never much longer.
	if got.Elapsed < busy/2 || got.Elapsed > busy+time.Second {
		t.Errorf("CheckIntegrity(exclusive lock) took %v, want about the busy timeout %v", got.Elapsed, busy)
	}
}

// TestCheckIntegrityRollbackReserved: a sibling in a write transaction
// (RESERVED lock, pages changed in its cache) does not block readers in
// rollback mode; a check that needed a write lock would fail here.
func TestCheckIntegrityRollbackReserved(t *testing.T) {
	path := filepath.Join(t.TempDir(), "app.db")
	makeDB(t, path, "delete", 2000)
	startSibling(t, "hold", path, "begin immediate", "update t set v = v || 'x' where id < 10")
	got := health.CheckIntegrity(context.Background(), path, health.Options{})
	if !got.OK {
		t.Errorf("CheckIntegrity(RESERVED held by a sibling) = %+v, want OK", got)
	}
}

func TestReadOnlyDSN(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "odd ?#%name.db")
	testdb.Make(t, path, "wal", 3)

	dsn := health.ReadOnlyDSN(path, 1500*time.Millisecond)
	if !strings.HasPrefix(dsn, "file:") || !strings.Contains(dsn, "mode=ro") || !strings.Contains(dsn, "%3F%23%25name.db") {
		t.Errorf("ReadOnlyDSN(%q) = %q, want a file: URI with mode=ro and ?, #, %% escaped", path, dsn)
	}
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	var ms, n int
	if err := db.QueryRow("pragma busy_timeout").Scan(&ms); err != nil || ms != 1500 {
		t.Errorf("pragma busy_timeout via ReadOnlyDSN = %d, %v; want 1500 (glebarez's default is 5000)", ms, err)
	}
	if err := db.QueryRow("select count(*) from t").Scan(&n); err != nil || n != 3 {
		t.Errorf("count(*) via ReadOnlyDSN = %d, %v; want 3", n, err)
	}
	if _, err := db.Exec("create table u(x)"); err == nil || !strings.Contains(err.Error(), "readonly") {
		t.Errorf("create table via ReadOnlyDSN: err %v, want a read-only error", err)
	}
	db.Close()

	missing := filepath.Join(dir, "missing.db")
	got := health.CheckIntegrity(context.Background(), missing, health.Options{})
	if got.Ran || got.Err == "" {
		t.Errorf("CheckIntegrity(missing) = %+v, want an error", got)
	}
	db, _ = sql.Open("sqlite", health.ReadOnlyDSN(missing, 0))
	db.Ping()
	db.Close()
	if _, err := os.Stat(missing); !os.IsNotExist(err) {
		t.Errorf("opening ReadOnlyDSN(missing) created the file: %v", err)
	}
}

// TestCheckIntegrityCopy checks a WAL database whose rows are only in the
// -wal, through a private copy: the copy must include the -wal, and the
// temporary directory must be gone afterwards.
func TestCheckIntegrityCopy(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "app.db")
	db := testdb.Open(t, path, "wal", 0)
	if _, err := db.Exec("pragma wal_autocheckpoint=0"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`with recursive c(x) as (select 1 union all select x+1 from c where x < 5000) insert into t(v) select 'row ' || x from c`); err != nil {
		t.Fatal(err)
	}
	// Stop the writer without a checkpoint: copy the files as a crash would
	// leave them, then close the connection.
	snap := filepath.Join(dir, "snap")
	os.Mkdir(snap, 0o755)
	for _, s := range []string{"", "-wal"} {
		if err := os.WriteFile(filepath.Join(snap, "app.db"+s), readFile(t, path+s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	live := filepath.Join(snap, "app.db")
	walBefore := readFile(t, live+"-wal")

	tmp := t.TempDir()
	got := health.CheckIntegrity(context.Background(), live, health.Options{Copy: true, TempDir: tmp})
	if !got.OK || !got.CheckedCopy {
		t.Errorf("CheckIntegrity(Copy) = %+v, want OK and CheckedCopy", got)
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Errorf("CheckIntegrity(Copy) left %d entries in TempDir", len(left))
	}
	if _, err := os.Stat(live + "-shm"); !os.IsNotExist(err) {
		t.Errorf("CheckIntegrity(Copy) created %s-shm beside the live database: %v", live, err)
	}
	if string(readFile(t, live+"-wal")) != string(walBefore) {
		t.Errorf("CheckIntegrity(Copy) changed the live -wal")
	}
}

func TestCheckIntegrityCancelled(t *testing.T) {
	path := filepath.Join(t.TempDir(), "app.db")
	makeDB(t, path, "delete", 10)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	got := health.CheckIntegrity(ctx, path, health.Options{})
	if got.Ran || got.OK || !strings.Contains(got.Err, "interrupted") {
		t.Errorf("CheckIntegrity(cancelled) = %+v, want Err interrupted", got)
	}
}

// TestReadOnlyOpenTakesNoWriteLock reads /proc/locks while a ReadOnlyDSN
// connection is inside a read on a rollback-mode database: the process may
// hold READ (SHARED) locks on the file, never WRITE ones.
func TestReadOnlyOpenTakesNoWriteLock(t *testing.T) {
	requireLinux(t)
	path := filepath.Join(t.TempDir(), "app.db")
	makeDB(t, path, "delete", 500)
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", health.ReadOnlyDSN(path, 0))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query("select id from t")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	if !rows.Next() {
		t.Fatal("no rows")
	}
	locks, err := os.ReadFile("/proc/locks")
	if err != nil {
		t.Skipf("cannot read /proc/locks: %v", err)
	}
	pid, ino := strconv.Itoa(os.Getpid()), ":"+strconv.FormatUint(st.Ino, 10)
	var mine []string
	for _, line := range strings.Split(string(locks), "\n") {
		f := strings.Fields(line)
		if len(f) >= 6 && f[4] == pid && strings.HasSuffix(f[5], ino) {
			mine = append(mine, line)
		}
	}
	if len(mine) == 0 {
		t.Fatalf("no lock of this process on %s in /proc/locks during a read; want a SHARED (READ) lock", path)
	}
	for _, l := range mine {
		if !strings.Contains(l, " READ ") {
			t.Errorf("read-only connection holds %q, want READ locks only", l)
		}
	}
}
