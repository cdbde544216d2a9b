//go:build linux

package convert_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/preflight-sqlite/preflight/convert"
)

// backupDirs lists the backup directories (complete or .partial) in dir.
func backupDirs(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if strings.Contains(e.Name(), ".preflight-backup-") {
			out = append(out, e.Name())
		}
	}
	return out
}

// runCanceledAt runs convert on path and cancels its context the first
// time Progress reports stage.
func runCanceledAt(t *testing.T, path, stage string) convert.Database {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	o := opts(path)
	o.Progress = func(_, st string, _, _ int64) {
		if st == stage {
			cancel()
		}
	}
	res, err := convert.Run(ctx, o)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	d := one(t, res, convert.StatusFailed)
	if !d.Interrupted {
		t.Errorf("canceled at %s: Interrupted false, want true; error %q", stage, d.Error)
	}
	return d
}

// Canceled while the backup is being copied: the database is as it was
// and no backup, partial or complete, is left beside it.
func TestInterruptedDuringBackup(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "app.db")
	hotWAL(t, path, 20000)
	before := files(t, path)
	d := runCanceledAt(t, path, "backup")
	if !strings.Contains(d.Error, "interrupted before the journal mode change") || d.After != "" || d.Backup != nil {
		t.Errorf("canceled during the backup: error %q, after %q, backup %+v; want interrupted before the change, no backup", d.Error, d.After, d.Backup)
	}
	if left := backupDirs(t, dir); len(left) != 0 {
		t.Errorf("backups left after a cancel during the copy: %v, want none", left)
	}
	wantUntouched(t, path, before)
}

// Canceled once the journal mode changed, as the verification starts: the
// database is converted, and the result says the verification did not
// finish.
func TestInterruptedDuringVerify(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "app.db")
	hotWAL(t, path, 2000)
	d := runCanceledAt(t, path, "verify")
	if !strings.Contains(d.Error, "interrupted after the journal mode change") || !strings.Contains(d.Error, "did not finish") {
		t.Errorf("canceled during the verification: error %q, want interrupted after the change, verification not finished", d.Error)
	}
	if d.After != convert.ToDelete || d.Verified == nil || !d.Verified.Interrupted {
		t.Errorf("canceled during the verification: after %q, verified %+v; want after delete and Verified.Interrupted", d.After, d.Verified)
	}
	if w, r := header1819(t, path); w != 1 || r != 1 {
		t.Errorf("header bytes 18/19 = %d/%d, want 1/1", w, r)
	}
	if got := sqlite3(t, path, "PRAGMA integrity_check; select count(*) from t;"); got != "ok\n2000\n" {
		t.Errorf("sqlite3 after the interrupted verification: %q, want ok and 2000 rows", got)
	}
	if d.Backup == nil || len(backupDirs(t, dir)) != 1 {
		t.Errorf("backup %+v, dirs %v: want the one complete backup", d.Backup, backupDirs(t, dir))
	}
}
