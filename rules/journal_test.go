package rules_test

import (
	"go/ast"
	"go/token"
	"testing"

	"github.com/preflight-sqlite/preflight/compose"
	"github.com/preflight-sqlite/preflight/internal/kubeapi"
	"github.com/preflight-sqlite/preflight/manifest"
	"github.com/preflight-sqlite/preflight/probe/kube"
	"github.com/preflight-sqlite/preflight/probe/mounts"
	"github.com/preflight-sqlite/preflight/probe/sqlitefile"
	"github.com/preflight-sqlite/preflight/report"
	"github.com/preflight-sqlite/preflight/rules"
)

// TestJournalMode: the one journal-mode decision over each kind of fact a
// report holds (check's data directories and databases, the Kubernetes
// probe's storage, compose mounts, manifest volumes).
func TestJournalMode(t *testing.T) {
	on := func(c mounts.Class) *mounts.Mount { return &mounts.Mount{Class: c, Mountpoint: "/data", FSType: "x"} }
	dir := func(c mounts.Class, dbs ...report.Database) report.DataDir {
		d := report.DataDir{Path: "/data", Exists: true, Inspected: true, Databases: dbs}
		if c != "" {
			d.Mount = on(c)
		}
		return d
	}
	db := report.Database{Database: sqlitefile.Database{Path: "/data/app.db", JournalMode: sqlitefile.JournalWAL}}
	single := db
	single.SingleFileMount, single.Mount = true, on(mounts.ClassLocal)
	unread := dir(mounts.ClassLocal)
	unread.StatError = "permission denied"
	linux := compose.Platform{Kind: compose.PlatformLinux}
	bind := compose.Mount{Service: "app", Target: "/data", Type: "bind", Source: "/srv/app", DataDir: true}
	bindRead := bind
	bindRead.HostFS = on(mounts.ClassLocal)
	bindFailed := bind
	bindFailed.HostFSError = "did not answer within 1s"
	for _, tt := range []struct {
		name  string
		r     report.Report
		mode  string
		class mounts.Class
	}{
		{"nothing", report.Report{}, "wal", mounts.ClassLocal},
		{"local directory", report.Report{DataDirs: []report.DataDir{dir(mounts.ClassLocal, db)}}, "wal", mounts.ClassLocal},
		{"unclassified directory", report.Report{DataDirs: []report.DataDir{dir("")}}, "delete", mounts.ClassUnknown},
		{"sandbox directory", report.Report{DataDirs: []report.DataDir{dir(mounts.ClassSandbox, db)}}, "wal", mounts.ClassSandbox},
		{"fuse directory", report.Report{DataDirs: []report.DataDir{dir(mounts.ClassLocal), dir(mounts.ClassFUSE, db)}}, "delete", mounts.ClassFUSE},
		{"single-file mount", report.Report{DataDirs: []report.DataDir{dir(mounts.ClassLocal, single)}}, "delete", mounts.ClassLocal},
		{"path not examined", report.Report{DataDirs: []report.DataDir{unread}}, "delete", mounts.ClassLocal},
		{"kube PV on NFS", report.Report{DataDirs: []report.DataDir{dir(mounts.ClassLocal, db)},
			Kube: &kube.Result{Paths: []kube.Path{{Path: "/data/app.db", Storage: kubeapi.Storage{Class: mounts.ClassNetwork}}}}}, "delete", mounts.ClassNetwork},
		{"kube storage unknown", report.Report{DataDirs: []report.DataDir{dir(mounts.ClassLocal, db)},
			Kube: &kube.Result{Paths: []kube.Path{{Path: "/data", Storage: kubeapi.Storage{Class: mounts.ClassUnknown}}}}}, "wal", mounts.ClassLocal},
		{"compose bind, host fs read", report.Report{Compose: &compose.Analysis{Platform: linux, Mounts: []compose.Mount{bindRead}}}, "wal", mounts.ClassLocal},
		{"compose bind, host fs read failed", report.Report{Compose: &compose.Analysis{Platform: linux, Mounts: []compose.Mount{bindFailed}}}, "delete", mounts.ClassUnknown},
		{"compose bind, host fs not read", report.Report{Compose: &compose.Analysis{Platform: linux, Mounts: []compose.Mount{bind}}}, "delete", mounts.ClassUnknown},
		{"compose bind on a VM engine", report.Report{Compose: &compose.Analysis{Platform: compose.Platform{Kind: compose.PlatformDesktop}, Mounts: []compose.Mount{bindRead}}}, "delete", mounts.ClassCrossVM},
		{"compose volume", report.Report{Compose: &compose.Analysis{Platform: linux, Mounts: []compose.Mount{{Service: "app", Target: "/data", Type: "volume", Source: "data", DataDir: true, Volume: &compose.Volume{Key: "data"}}}}}, "wal", mounts.ClassLocal},
		{"manifest volume on NFS", report.Report{Manifests: &manifest.Analysis{Mounts: []manifest.Mount{{Claim: -1, SQLite: true, Storage: kubeapi.Storage{Class: mounts.ClassNetwork}}}}}, "delete", mounts.ClassNetwork},
		{"manifest volume without SQLite", report.Report{Manifests: &manifest.Analysis{Mounts: []manifest.Mount{{Claim: -1, Storage: kubeapi.Storage{Class: mounts.ClassNetwork}}}}}, "wal", mounts.ClassLocal},
	} {
		mode, class := rules.JournalMode(&tt.r)
		if mode != tt.mode || class != tt.class {
			t.Errorf("JournalMode(%s) = %s, %s; want %s, %s", tt.name, mode, class, tt.mode, tt.class)
		}
	}
}

// TestOneJournalModeDecision: outside package rules, a report's
// recommended journal mode and fs_class are set only from
// rules.JournalMode, in one statement (r.JournalMode, r.FSClass =
// rules.JournalMode(r)), never decided again by hand.
func TestOneJournalModeDecision(t *testing.T) {
	checked, err := sourceFiles("..", func(_ string, fset *token.FileSet, f *ast.File) {
		ast.Inspect(f, func(n ast.Node) bool {
			as, ok := n.(*ast.AssignStmt)
			if !ok {
				return true
			}
			sets := map[string]bool{}
			for _, l := range as.Lhs {
				if sel, ok := l.(*ast.SelectorExpr); ok {
					sets[sel.Sel.Name] = true
				}
			}
			// The report's JournalMode is a string; a database's is a
			// sqlitefile.JournalMode, set from its header, not with these.
			literal := false
			for _, r := range as.Rhs {
				if lit, ok := r.(*ast.BasicLit); ok && (lit.Value == `"wal"` || lit.Value == `"delete"`) {
					literal = true
				}
			}
			if !sets["FSClass"] && !(sets["JournalMode"] && literal && f.Name.Name == "preflight") {
				return true
			}
			if !isJournalModeCall(as) {
				t.Errorf("%s: the journal mode or fs_class is set here by hand; use r.JournalMode, r.FSClass = rules.JournalMode(r)", fset.Position(as.Pos()))
			}
			return true
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 50 {
		t.Fatalf("checked %d files, want the whole module", checked)
	}
}

// isJournalModeCall reports whether as is X.JournalMode, X.FSClass =
// rules.JournalMode(...).
func isJournalModeCall(as *ast.AssignStmt) bool {
	if len(as.Lhs) != 2 || len(as.Rhs) != 1 {
		return false
	}
	for i, want := range []string{"JournalMode", "FSClass"} {
		if sel, ok := as.Lhs[i].(*ast.SelectorExpr); !ok || sel.Sel.Name != want {
			return false
		}
	}
	call, ok := as.Rhs[0].(*ast.CallExpr)
	if !ok {
		return false
	}
	fn, ok := call.Fun.(*ast.SelectorExpr)
	if !ok {
		return false
	}
	pkg, ok := fn.X.(*ast.Ident)
	return ok && pkg.Name == "rules" && fn.Sel.Name == "JournalMode"
}
