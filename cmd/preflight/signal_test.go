package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/preflight-sqlite/preflight/internal/testdb"
	"github.com/preflight-sqlite/preflight/migrate"
)

// A command whose context ends with a signal as its cause exits 128 plus
// the signal's number and says it was interrupted; one whose context
// merely ends exits 1.
func TestSignalExitCodes(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "app.db")
	testdb.Make(t, db, "wal", 3)
	cases := []struct {
		cause error
		args  []string
		code  int
		want  string
	}{
		{&signalled{syscall.SIGINT}, []string{"convert", "--docker", "off", "--allow-unverified", db}, 130, "convert: interrupted (SIGINT)"},
		{&signalled{syscall.SIGTERM}, []string{"convert", "--docker", "off", "--allow-unverified", db}, 143, "convert: interrupted (SIGTERM)"},
		{&signalled{syscall.SIGTERM}, []string{"check", "--docker", "off", dir}, 143, "check: interrupted: SIGTERM"},
		{context.Canceled, []string{"check", "--docker", "off", dir}, exitInternal, "check: interrupted"},
	}
	for _, c := range cases {
		ctx, cancel := context.WithCancelCause(context.Background())
		cancel(c.cause)
		var out, errb bytes.Buffer
		code := MainContext(ctx, c.args, &out, &errb)
		if code != c.code || !strings.Contains(errb.String(), c.want) {
			t.Errorf("%v under a context ended by %v: exit %d, stderr %q; want %d and %q", c.args, c.cause, code, errb.String(), c.code, c.want)
		}
	}
	if h := headerOf(t, db); h != "2/2" {
		t.Errorf("header of %s after the interrupted converts: %s, want 2/2 (WAL, untouched)", db, h)
	}
}

// startAndSignal starts the binary with args, sends sig once ready
// reports true (polled every millisecond), and returns the exit code,
// stdout and stderr. It fails when the process ends first.
func startAndSignal(t *testing.T, sig syscall.Signal, ready func() bool, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	for !ready() {
		select {
		case err := <-done:
			t.Fatalf("%v ended (%v) before it was signalled\nstdout: %s\nstderr: %s", args, err, out.String(), errb.String())
		case <-time.After(time.Millisecond):
		}
	}
	if err := cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("%v did not end within 60s of %v\nstderr: %s", args, sig, errb.String())
	}
	return cmd.ProcessState.ExitCode(), out.String(), errb.String()
}

// SIGINT while convert copies the backup: exit 130, the report rendered,
// the database as it was (still WAL), and no backup left, partial or not.
func TestConvertSIGINTDuringBackup(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "app.db")
	bigWAL(t, db, 48)
	sum := func() [32]byte {
		b, err := os.ReadFile(db + "-wal")
		if err != nil {
			t.Fatal(err)
		}
		return sha256.Sum256(b)
	}
	before := sum()
	partial := func() bool {
		m, _ := filepath.Glob(filepath.Join(dir, "*.preflight-backup-*.partial", "app.db*"))
		return len(m) > 0
	}
	code, stdout, stderr := startAndSignal(t, syscall.SIGINT, partial, "convert", "--docker", "off", "--allow-unverified", db)
	if code != 130 || !strings.Contains(stdout, "interrupted before the journal mode change") || !strings.Contains(stderr, "convert: interrupted (SIGINT)") {
		t.Errorf("convert after SIGINT during the backup: exit %d\nstdout: %s\nstderr: %s\nwant 130, interrupted before the journal mode change", code, stdout, stderr)
	}
	if left := backups(t, dir); len(left) != 0 {
		t.Errorf("backups after SIGINT during the copy: %v, want none", left)
	}
	if h := headerOf(t, db); h != "2/2" || sum() != before {
		t.Errorf("after SIGINT during the backup: header %s, -wal changed %v; want 2/2 and the -wal as it was", h, sum() != before)
	}
}

// SIGTERM while migrate copies: exit 143, the source byte for byte as it
// was, the destination marked incomplete; a second migrate to it is
// refused, naming the incomplete copy.
func TestMigrateSIGTERMMarksIncomplete(t *testing.T) {
	from := t.TempDir()
	src := testdb.Open(t, filepath.Join(from, "app.db"), "delete", 0)
	if _, err := src.Exec(`insert into t(v) with recursive n(i) as (select 1 union all select i+1 from n where i < 40000) select hex(randomblob(1000)) from n`); err != nil {
		t.Fatal(err)
	}
	src.Close()
	read := func() []byte {
		b, err := os.ReadFile(filepath.Join(from, "app.db"))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	before := read()
	to := filepath.Join(t.TempDir(), "volume")
	marker := filepath.Join(to, migrate.IncompleteMarker)
	marked := func() bool { _, err := os.Stat(marker); return err == nil }
	code, _, stderr := startAndSignal(t, syscall.SIGTERM, marked, "migrate", "--from", from, "--to", to, "--docker", "off", "--allow-unverified")
	if code != 143 || !strings.Contains(stderr, "migrate: interrupted (SIGTERM)") || !strings.Contains(stderr, "incomplete copy") {
		t.Errorf("migrate after SIGTERM: exit %d, stderr %q; want 143 and the incomplete copy named", code, stderr)
	}
	if !bytes.Equal(read(), before) {
		t.Errorf("%s changed under an interrupted migrate", filepath.Join(from, "app.db"))
	}
	if !marked() {
		t.Errorf("%s missing after an interrupted migrate", marker)
	}
	_, stderr, code = runMain(t, "migrate", "--from", from, "--to", to, "--docker", "off", "--allow-unverified")
	if code != exitUnsafe || !strings.Contains(stderr, "holds an incomplete copy") {
		t.Errorf("migrate into the interrupted copy: exit %d, stderr %q; want %d and the incomplete copy named", code, stderr, exitUnsafe)
	}
}
