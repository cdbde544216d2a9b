package health_test

import (
	"bytes"
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/preflight-sqlite/preflight/probe/health"
	"github.com/preflight-sqlite/preflight/probe/sqlitefile"
)

// makeRollbackDB creates a rollback-mode database with n rows in t.
func makeRollbackDB(t testing.TB, path string, n int) {
	t.Helper()
	execDB(t, path,
		"pragma journal_mode=delete",
		"create table t(id integer primary key, x integer, b text)",
		`with recursive c(x) as (select 1 union all select x+1 from c where x < `+strconv.Itoa(n)+`)
		 insert into t(x, b) select x, printf('%050d', x) from c`,
	)
}

// TestHotJournalFromKilledWriter kills a writer in the middle of a large
// UPDATE whose pages spilled to the database (cache_size=10), leaving a hot
// journal, and checks that it is reported, that CheckIntegrity refuses to
// read, and that neither touches the database or the journal.
func TestHotJournalFromKilledWriter(t *testing.T) {
	path := filepath.Join(t.TempDir(), "app.db")
	makeRollbackDB(t, path, 20000)
	w := startSibling(t, "kill-me", path,
		"pragma cache_size=10",
		"begin",
		"update t set x = x + 1, b = b || 'changed'",
	)
	w.kill()

	dbBefore, jBefore := readFile(t, path), readFile(t, path+"-journal")
	j, err := health.InspectJournal(path)
	if err != nil {
		t.Fatalf("InspectJournal: %v", err)
	}
	t.Logf("journal: %+v", j)
	if !j.Exists || !j.Hot || !j.NonZero || !j.HeaderValid || j.WriterLock != health.LockFree {
		t.Errorf("InspectJournal = %+v, want an existing, hot, valid journal with no writer", j)
	}
	if j.Header.PageSize != 4096 || j.Header.NRec == 0 || j.Header.InitialPages == 0 {
		t.Errorf("journal header = %+v, want page size 4096, records and an initial size", j.Header)
	}
	// Every record is a 4-byte page number, a page and a 4-byte checksum,
	// after a sector-sized header per segment. Records after the last
	// header with nRec 0 (not yet synced) are not counted, as in SQLite.
	used := j.Records*(4096+8) + int64(j.Segments)*int64(j.Header.SectorSize)
	if j.Segments < 2 || j.Records < int64(j.Header.NRec) || used > j.SizeBytes {
		t.Errorf("journal of %d bytes: %d segments, %d records (%d bytes); want the segments to cover the file", j.SizeBytes, j.Segments, j.Records, used)
	}
	if j.DBMode != sqlitefile.JournalRollback || j.StrayWAL {
		t.Errorf("InspectJournal DBMode %q StrayWAL %v, want rollback, no stray WAL", j.DBMode, j.StrayWAL)
	}

	got := health.CheckIntegrity(context.Background(), path, health.Options{})
	if got.Ran || got.OK || got.Err != health.ErrTextHotJournal {
		t.Errorf("CheckIntegrity(hot journal) = %+v, want Ran false, Err %q", got, health.ErrTextHotJournal)
	}
	got = health.CheckIntegrity(context.Background(), path, health.Options{Copy: true})
	if got.Ran || got.Err != health.ErrTextHotJournal {
		t.Errorf("CheckIntegrity(hot journal, Copy) = %+v, want Ran false, Err %q", got, health.ErrTextHotJournal)
	}

	// Why the up-front check is needed: a read-only open fails with
	// SQLITE_READONLY_ROLLBACK (776).
	db, err := sql.Open("sqlite", health.ReadOnlyDSN(path, 0))
	if err != nil {
		t.Fatal(err)
	}
	var n int
	err = db.QueryRow("select count(*) from t").Scan(&n)
	db.Close()
	if err == nil || !strings.Contains(err.Error(), "(776)") {
		t.Errorf("read-only query with a hot journal: err %v, want SQLITE_READONLY_ROLLBACK (776)", err)
	}

	if !bytes.Equal(readFile(t, path), dbBefore) || !bytes.Equal(readFile(t, path+"-journal"), jBefore) {
		t.Errorf("database or journal changed by InspectJournal/CheckIntegrity")
	}
}

func TestInspectJournalStrayWAL(t *testing.T) {
	path := filepath.Join(t.TempDir(), "app.db")
	makeRollbackDB(t, path, 10)
	if err := os.WriteFile(path+"-wal", make([]byte, 4128), 0o644); err != nil {
		t.Fatal(err)
	}
	j, err := health.InspectJournal(path)
	if err != nil {
		t.Fatal(err)
	}
	if !j.StrayWAL || j.StrayWALSizeBytes != 4128 || j.Exists || j.Hot {
		t.Errorf("InspectJournal(rollback db + -wal) = %+v, want StrayWAL of 4128 bytes, no journal", j)
	}
}

func TestInspectJournalAbsentAndPersisted(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "app.db")
	makeRollbackDB(t, path, 10)
	j, err := health.InspectJournal(path)
	if err != nil || j.Exists || j.Hot || j.NonZero {
		t.Errorf("InspectJournal(no journal) = %+v, %v; want nothing", j, err)
	}
	// journal_mode=PERSIST zeroes the header after commit: not hot.
	execDB(t, path, "pragma journal_mode=persist", "update t set x = x + 1")
	j, err = health.InspectJournal(path)
	if err != nil {
		t.Fatal(err)
	}
	if !j.Exists || j.SizeBytes == 0 || j.Hot || j.NonZero || j.HeaderValid || !strings.Contains(j.HeaderErr, "no journal magic") {
		t.Errorf("InspectJournal(persisted journal) = %+v, want an existing, non-hot journal", j)
	}
	if got := health.CheckIntegrity(context.Background(), path, health.Options{}); !got.OK {
		t.Errorf("CheckIntegrity(persisted journal) = %+v, want OK", got)
	}
}

func readFile(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
