package preflight

import (
	"context"
	"fmt"
	"time"

	"github.com/preflight-sqlite/preflight/internal/fsbound"
	"github.com/preflight-sqlite/preflight/probe/sqlitefile"
	"github.com/preflight-sqlite/preflight/probe/wal"
)

// readDamagedWALs validates the -wal of every damaged database (DamagedDB),
// each read bounded by twice timeout (zero means 5 s): a -wal on a
// filesystem that stops answering is reported, not waited for.
func readDamagedWALs(ctx context.Context, r *Report, timeout time.Duration) {
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	for i := range r.DataDirs {
		d := &r.DataDirs[i]
		for j := range d.Databases {
			db := &d.Databases[j]
			if d.Unresponsive != "" || !DamagedDB(db) || db.WAL.SizeBytes <= sqlitefile.WALHeaderSize {
				continue
			}
			type result struct {
				rep wal.Report
				err error
			}
			res, ok := fsbound.Within(ctx, 2*timeout, func() result {
				rep, err := wal.ValidateFile(db.Path + "-wal")
				return result{rep, err}
			})
			switch {
			case !ok:
				db.DamagedWALErr = fmt.Sprintf("reading %s-wal did not finish within %s", db.Path, 2*timeout)
			case res.err != nil:
				db.DamagedWALErr = res.err.Error()
			default:
				db.DamagedWAL = &res.rep
			}
		}
	}
}
