package policy_test

import (
	"testing"

	"github.com/preflight-sqlite/preflight/policy"
	"github.com/preflight-sqlite/preflight/probe/mounts"
	"github.com/preflight-sqlite/preflight/probe/sqlitefile"
	"github.com/preflight-sqlite/preflight/report"
	"github.com/preflight-sqlite/preflight/rules"
)

// walFindings evaluates the rules over a WAL database in a data
// directory on a mount of class c, and returns the findings about the
// database whose rule converts it (rules.ActConvert).
func walFindings(c mounts.Class, knownLosses bool) []report.Finding {
	r := &report.Report{DataDirs: []report.DataDir{{
		Path: "/data", Exists: true, Inspected: true,
		Mount:     &mounts.Mount{Class: c, Mountpoint: "/data", FSType: "x", Reason: "fstype x", KnownLosses: knownLosses},
		Databases: []report.Database{{Database: sqlitefile.Database{Path: "/data/app.db", JournalMode: sqlitefile.JournalWAL}}},
	}}}
	var out []report.Finding
	for _, f := range rules.Evaluate(r, rules.Input{}) {
		if f.Path == "/data/app.db" && rules.Wants(f, rules.ActConvert) {
			out = append(out, f)
		}
	}
	return out
}

// TestEveryWALUnsafeClassIsAWALError: every class the policy table calls
// unsafe for WAL (WALUnsafe), a class added to it later included, gives a
// WAL database there one error whose rule converts it (--on-unsafe
// convert); a class where WAL works or is unsure gives none.
func TestEveryWALUnsafeClassIsAWALError(t *testing.T) {
	const added = mounts.Class("test-unsafe")
	defer policy.AddClass(added, policy.Meaning{Risk: 7, WAL: policy.WALFails, Durable: true, OtherKernels: true, Doc: "a class added later"})()
	unsafe := 0
	for _, c := range policy.Classes() {
		got := walFindings(c, true)
		if !policy.WALUnsafe(c) {
			if len(got) != 0 {
				t.Errorf("class %s (WAL not known to fail): findings %v, want no wal-on-* error", c, got)
			}
			continue
		}
		unsafe++
		if len(got) != 1 || got[0].Level != report.LevelError {
			t.Errorf("class %s (WAL unsafe): findings %v, want one error whose rule converts", c, got)
		}
		if c == added && (len(got) != 1 || got[0].ID != rules.WALOnUnsafeFS) {
			t.Errorf("class %s without a wal-on-* rule of its own: findings %v, want %s", c, got, rules.WALOnUnsafeFS)
		}
		// Without a known loss (other FUSE) the level may be lower, but
		// the finding is there and converts.
		if len(walFindings(c, false)) != 1 {
			t.Errorf("class %s (WAL unsafe, no known loss): findings %v, want one that converts", c, walFindings(c, false))
		}
	}
	if unsafe < 4 {
		t.Fatalf("%d WAL-unsafe classes, want cross-vm, network, fuse and the added one", unsafe)
	}
}

// TestWALErrorsKeepTheirIDs: today's classes keep their wal-on-* IDs.
func TestWALErrorsKeepTheirIDs(t *testing.T) {
	for c, id := range map[mounts.Class]rules.ID{mounts.ClassCrossVM: rules.WALOnCrossVM, mounts.ClassNetwork: rules.WALOnNetworkFS, mounts.ClassFUSE: rules.WALOnFuse} {
		if got := walFindings(c, true); len(got) != 1 || got[0].ID != id {
			t.Errorf("class %s: findings %v, want %s", c, got, id)
		}
	}
}
