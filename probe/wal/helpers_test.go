package wal_test

import (
	"database/sql"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	_ "github.com/glebarez/go-sqlite"

	"github.com/preflight-sqlite/preflight/probe/wal"
)

// This file holds an independent, deliberately plain implementation of the
// WAL layout used to build and damage test inputs, and the helpers that make
// real WAL files with SQLite.

var be = binary.BigEndian

// refSum is the checksum loop of fileformat2.html#walcksm, word by word.
func refSum(bigEndian bool, s0, s1 uint32, b []byte) (uint32, uint32) {
	var order binary.ByteOrder = binary.LittleEndian
	if bigEndian {
		order = binary.BigEndian
	}
	for i := 0; i+8 <= len(b); i += 8 {
		s0 += order.Uint32(b[i:]) + s1
		s1 += order.Uint32(b[i+4:]) + s0
	}
	return s0, s1
}

// walBytes is a WAL held in memory, with accessors by 1-based frame index.
type walBytes []byte

func (w walBytes) bigEndian() bool { return be.Uint32(w[0:]) == wal.MagicBigEndian }
func (w walBytes) pageSize() int   { return int(be.Uint32(w[8:])) }
func (w walBytes) frameSize() int  { return w.pageSize() + wal.FrameHeaderSize }
func (w walBytes) frames() int     { return (len(w) - wal.HeaderSize) / w.frameSize() }

// frame returns frame i (1-based), header and page.
func (w walBytes) frame(i int) []byte {
	off := wal.HeaderSize + (i-1)*w.frameSize()
	return w[off : off+w.frameSize()]
}

func (w walBytes) clone() walBytes { return append(walBytes(nil), w...) }

// commits returns, for frames 1..n, whether each is a commit frame.
func (w walBytes) commits() []bool {
	c := make([]bool, w.frames()+1)
	for i := 1; i <= w.frames(); i++ {
		c[i] = be.Uint32(w.frame(i)[4:]) != 0
	}
	return c
}

// countCommits counts commit frames among frames from..to, both included.
func countCommits(c []bool, from, to int) int {
	n := 0
	for i := from; i <= to && i < len(c); i++ {
		if c[i] {
			n++
		}
	}
	return n
}

// lastCommit returns the last commit frame at or before frame to, 0 if none.
func lastCommit(c []bool, to int) int {
	for i := min(to, len(c)-1); i >= 1; i-- {
		if c[i] {
			return i
		}
	}
	return 0
}

// seal recomputes the header checksum in place.
func (w walBytes) seal() {
	s0, s1 := refSum(w.bigEndian(), 0, 0, w[:24])
	be.PutUint32(w[24:], s0)
	be.PutUint32(w[28:], s1)
}

// sealFrame recomputes the checksum of frame f from seed and returns it.
func sealFrame(bigEndian bool, f []byte, s0, s1 uint32) (uint32, uint32) {
	s0, s1 = refSum(bigEndian, s0, s1, f[:8])
	s0, s1 = refSum(bigEndian, s0, s1, f[wal.FrameHeaderSize:])
	be.PutUint32(f[16:], s0)
	be.PutUint32(f[20:], s1)
	return s0, s1
}

// resealAll recomputes the header checksum and the whole frame chain.
func (w walBytes) resealAll() {
	w.seal()
	s0, s1 := be.Uint32(w[24:]), be.Uint32(w[28:])
	for i := 1; i <= w.frames(); i++ {
		s0, s1 = sealFrame(w.bigEndian(), w.frame(i), s0, s1)
	}
}

// stored returns the stored checksum of frame i (0: the header's).
func (w walBytes) stored(i int) (uint32, uint32) {
	if i == 0 {
		return be.Uint32(w[24:]), be.Uint32(w[28:])
	}
	f := w.frame(i)
	return be.Uint32(f[16:]), be.Uint32(f[20:])
}

// toBigEndian re-encodes an intact WAL with magic 0x377f0683.
func (w walBytes) toBigEndian() walBytes {
	c := w.clone()
	be.PutUint32(c[0:], wal.MagicBigEndian)
	c.resealAll()
	return c
}

// snapshot is a database file and its hot WAL, copied while the writer was
// still connected, so the WAL holds every transaction since the last
// checkpoint.
type snapshot struct {
	db  []byte
	wal walBytes
}

// driverWAL creates a database in WAL mode with the glebarez driver (auto-
// checkpoint off) and page size pageSize, runs the statements, and copies the
// database and its WAL while the connection is open. The table t(id, b) is
// created and checkpointed into the database file first, so the WAL holds
// only what stmts did.
func driverWAL(t testing.TB, pageSize int, stmts ...string) snapshot {
	t.Helper()
	path := filepath.Join(t.TempDir(), "x.db")
	db, err := sql.Open("sqlite", fmt.Sprintf("file:%s?_pragma=page_size(%d)&_pragma=journal_mode(WAL)", path, pageSize))
	if err != nil {
		t.Fatalf("sql.Open: %v", err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	all := append([]string{
		"PRAGMA wal_autocheckpoint=0",
		"CREATE TABLE t(id INTEGER PRIMARY KEY, b BLOB)",
		"PRAGMA wal_checkpoint(TRUNCATE)",
	}, stmts...)
	for _, s := range all {
		if _, err := db.Exec(s); err != nil {
			t.Fatalf("Exec(%q): %v", s, err)
		}
	}
	var snap snapshot
	if snap.db, err = os.ReadFile(path); err != nil {
		t.Fatal(err)
	}
	if snap.wal, err = os.ReadFile(path + "-wal"); err != nil {
		t.Fatal(err)
	}
	return snap
}

// inserts returns n single-row INSERT transactions; row i carries a random
// blob of sizes[i%len(sizes)] bytes, so transactions span varying numbers of
// pages.
func inserts(n int, sizes ...int) []string {
	var s []string
	for i := range n {
		s = append(s, fmt.Sprintf("INSERT INTO t(b) VALUES (randomblob(%d))", sizes[i%len(sizes)]))
	}
	return s
}

// cliWAL is driverWAL done by Debian's sqlite3 command-line shell. It skips
// the test when sqlite3 is missing, unless CI=true.
func cliWAL(t *testing.T, stmts ...string) snapshot {
	t.Helper()
	bin, err := exec.LookPath("sqlite3")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("sqlite3 command-line shell not found (CI=true): %v", err)
		}
		t.Skipf("sqlite3 command-line shell not found, skipping (install the sqlite3 package): %v", err)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "x.db")
	script := strings.Join(append([]string{
		"PRAGMA journal_mode=WAL;",
		"PRAGMA wal_autocheckpoint=0;",
		"CREATE TABLE t(id INTEGER PRIMARY KEY, b BLOB);",
		"PRAGMA wal_checkpoint(TRUNCATE);",
	}, append(stmts,
		".shell cp "+path+" "+path+".snap",
		".shell cp "+path+"-wal "+path+".snap-wal",
	)...), "\n")
	cmd := exec.Command(bin, path)
	cmd.Stdin = strings.NewReader(script)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("sqlite3 %s: %v\n%s", path, err, out)
	}
	var snap snapshot
	if snap.db, err = os.ReadFile(path + ".snap"); err != nil {
		t.Fatal(err)
	}
	if snap.wal, err = os.ReadFile(path + ".snap-wal"); err != nil {
		t.Fatal(err)
	}
	return snap
}

// recovered is what SQLite sees after recovering a database and its WAL.
type recovered struct {
	rows     int // rows in t
	mxFrame  int // frames in the WAL after recovery, from wal_checkpoint's "log" column
	baseRows int // rows in t in the database file alone
}

// sqliteView copies db and w into a fresh directory, opens them with the
// driver and reports what SQLite recovered. The copy is destroyed by the open
// (SQLite checkpoints and deletes the WAL); the inputs are not touched.
func sqliteView(t *testing.T, db []byte, w []byte) recovered {
	t.Helper()
	var r recovered
	r.baseRows = countRows(t, db, nil).rows
	v := countRows(t, db, w)
	r.rows, r.mxFrame = v.rows, v.mxFrame
	return r
}

func countRows(t *testing.T, dbBytes, walData []byte) recovered {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "x.db")
	if err := os.WriteFile(path, dbBytes, 0o600); err != nil {
		t.Fatal(err)
	}
	if walData != nil {
		if err := os.WriteFile(path+"-wal", walData, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatalf("sql.Open: %v", err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	var r recovered
	if err := db.QueryRow("SELECT count(*) FROM t").Scan(&r.rows); err != nil {
		t.Fatalf("SELECT count(*) FROM t: %v", err)
	}
	var busy, ckpt int
	if err := db.QueryRow("PRAGMA wal_checkpoint(PASSIVE)").Scan(&busy, &r.mxFrame, &ckpt); err != nil {
		t.Fatalf("PRAGMA wal_checkpoint(PASSIVE): %v", err)
	}
	return r
}
