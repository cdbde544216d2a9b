package convert

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/preflight-sqlite/preflight"
	"github.com/preflight-sqlite/preflight/rules"
)

// priorAttempt is what the latest attempt recorded for the database at
// path means for this start, from its state file in dir (read once per dir
// into states) and converted (the databases an earlier start converted to
// DELETE). A refusal: "reenabled" when it was converted and is in WAL mode
// again (the application re-enables WAL, so converting again would not
// last), or "failed-before" when the latest attempt failed and its backup
// is still there (each start would add another full backup). Or, when the
// latest attempt was interrupted (a signal) and its backup is still there,
// reuse names that backup: no refusal, and Run reuses it rather than
// making a second one while it holds the files as they are. An unreadable
// state file refuses nothing; ConvertedBefore reports it.
func priorAttempt(ctx context.Context, path, dir string, converted []string, states map[string]State) (r Refusal, refused bool, reuse string) {
	cp := CanonicalPath(path)
	cf := &rules.ConvertFacts{DB: &preflight.Database{}}
	cf.DB.Path = path
	if slices.Contains(converted, cp) {
		cf.ReenabledWAL = true
		return priorRefusal(cf), true, ""
	}
	if dir == "" {
		dir = filepath.Dir(path)
	}
	s, ok := states[dir]
	if !ok {
		s, _ = readStateBounded(ctx, dir, 2*time.Second)
		states[dir] = s
	}
	var last *Conversion
	for i := range s.Conversions {
		if s.Conversions[i].Path == cp {
			last = &s.Conversions[i]
		}
	}
	if last == nil || last.Backup == "" || last.Failed == "" && last.Interrupted == "" {
		return Refusal{}, false, ""
	}
	backup := last.BackupPath()
	if _, err := os.Lstat(backup); err != nil {
		return Refusal{}, false, ""
	}
	if last.Failed == "" {
		return Refusal{}, false, backup
	}
	cf.Failed = &rules.PriorFailure{At: last.At, Backup: backup, Err: last.Failed}
	return priorRefusal(cf), true, ""
}

// priorRefusal is the refusal the convert rules make of cf at StagePrior.
func priorRefusal(cf *rules.ConvertFacts) Refusal {
	var d Database
	judged(rules.Convert(cf, rules.StagePrior), &d)
	return d.Refusals[0]
}
