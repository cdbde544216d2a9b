package salvage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/preflight-sqlite/preflight/convert"
	"github.com/preflight-sqlite/preflight/internal/dirfd"
)

// ErrStranded is returned by Replace when the recovery lost rows and
// AcceptLoss is not set: the source is left as it is, NEW beside it.
var ErrStranded = errors.New("rows are missing or in lost_and_found")

// Replacement is what Replace did.
type Replacement struct {
	// Backup is the copy of the source, its -wal and -shm, kept.
	Backup *convert.Backup `json:"backup"`
	// IntegrityCheck is integrity_check of the database now at the
	// source's path; RowsMatch that each table holds the rows the
	// recovery wrote.
	IntegrityCheck string `json:"integrity_check"`
	RowsMatch      bool   `json:"rows_match"`
}

// ReplaceOptions configures Replace.
type ReplaceOptions struct {
	// AcceptLoss replaces even when res.Loss(): rows are missing or in
	// lost_and_found (the backup keeps the original).
	AcceptLoss bool
	// Now is the backup's time; nil means time.Now.
	Now func() time.Time
}

// Replace puts the recovered file opts.To in place of opts.Source after a
// Run that returned res: never when NEW failed integrity_check, when rows
// were lost without AcceptLoss (ErrStranded), when a -journal is beside
// the source, or when the guard (run again, opts.Guard) refuses
// (ErrRefused, res.Refusals). The source, its -wal and -shm are backed up
// first (convert.BackupDatabase, kept), the -wal and -shm removed (they
// belong to the old file: SQLite would lay the -wal's frames over the new
// one), NEW renamed over the source through a descriptor of their
// directory, and the result verified read-only: integrity_check and each
// table's row count.
func Replace(ctx context.Context, opts Options, ro ReplaceOptions, res *Result) (*Replacement, error) {
	if res == nil || res.IntegrityCheck != "ok" {
		return nil, errors.New("the recovered file did not pass integrity_check: not put in place")
	}
	if res.Loss() && !ro.AcceptLoss {
		return nil, ErrStranded
	}
	src, err := filepath.Abs(opts.Source)
	if err != nil {
		return nil, err
	}
	to, err := filepath.Abs(opts.To)
	if err != nil {
		return nil, err
	}
	if fi, err := os.Lstat(src); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		real, _ := filepath.EvalSymlinks(src)
		return nil, badInputf("%s is a symlink (to %s): --replace would put NEW in place of the link, the database it points to left as it was; give the database's own path", opts.Source, real)
	}
	if filepath.Dir(src) != filepath.Dir(to) {
		return nil, badInputf("--replace needs --to in the source's directory (%s): the swap is a rename", filepath.Dir(src))
	}
	if fi, err := os.Lstat(src + "-journal"); err == nil && fi.Size() > 0 {
		return nil, fmt.Errorf("%s-journal is beside the source: not replaced (keep the journal with the original, then move %s in place yourself)", opts.Source, opts.To)
	}
	if opts.Guard != nil {
		refusals, _, _, err := guard(ctx, opts, to)
		if err != nil {
			return nil, err
		}
		if len(refusals) > 0 {
			res.Refusals = refusals
			return nil, ErrRefused
		}
	}
	now := time.Now
	if ro.Now != nil {
		now = ro.Now
	}
	bk, err := convert.BackupDatabase(ctx, src, now())
	if err != nil {
		return nil, fmt.Errorf("back up %s: %w; nothing was replaced", opts.Source, err)
	}
	rep := &Replacement{Backup: bk}
	d, err := dirfd.Open(filepath.Dir(src))
	if err != nil {
		return rep, fmt.Errorf("open %s: %w; nothing was replaced", filepath.Dir(src), err)
	}
	defer d.Close()
	base := filepath.Base(src)
	for _, suf := range []string{"-wal", "-shm"} {
		if err := d.Remove(base + suf); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return rep, fmt.Errorf("remove %s%s: %w; the source is as it was, its backup in %s", opts.Source, suf, err, bk.Dir)
		}
	}
	if err := d.Rename(filepath.Base(to), base); err != nil {
		return rep, fmt.Errorf("rename %s to %s: %w; the original is in %s", opts.To, opts.Source, err, bk.Dir)
	}
	if err := d.Sync(); err != nil {
		return rep, fmt.Errorf("sync %s: %w", filepath.Dir(src), err)
	}
	rep.IntegrityCheck, rep.RowsMatch, err = verify(ctx, src, res.Tables)
	return rep, err
}

// verify opens path read-only and returns its integrity_check and whether
// each table holds as many rows as tables says.
func verify(ctx context.Context, path string, tables []Table) (string, bool, error) {
	db, err := sql.Open("sqlite", fileURI(path, "mode=ro"))
	if err != nil {
		return "", false, err
	}
	defer db.Close()
	var ic string
	if err := db.QueryRowContext(ctx, "PRAGMA integrity_check").Scan(&ic); err != nil {
		return "", false, fmt.Errorf("verify %s: %w", path, err)
	}
	match := true
	for _, t := range tables {
		if t.Error != "" || t.Rows == 0 {
			continue // not created, or an external-content full-text table (its rows are its content table's)
		}
		var n int64
		if err := db.QueryRowContext(ctx, "SELECT count(*) FROM main."+quote(t.Name)).Scan(&n); err != nil {
			return ic, false, fmt.Errorf("verify %s: %w", path, err)
		}
		match = match && n == t.Rows
	}
	return ic, match, nil
}
