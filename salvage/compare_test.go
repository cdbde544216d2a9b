package salvage_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/preflight-sqlite/preflight/internal/testdb"
	"github.com/preflight-sqlite/preflight/salvage"
)

// runEnv makes the test binary run salvage.Run on "SRC\nTO" and exit:
// a process of its own, so that its peak memory can be measured.
const runEnv = "SALVAGE_TEST_RUN"

func runHelper(arg string) int {
	src, to, _ := strings.Cut(arg, "\n")
	if _, err := salvage.Run(context.Background(), salvage.Options{Source: src, To: to}); err != nil {
		fmt.Fprintln(os.Stderr, "salvage:", err)
		return 1
	}
	return 0
}

// measured is one tool's outcome on one case.
type measured struct {
	found, wrong, lost int
	ic                 string
	took               time.Duration
	rssKiB             int64
}

// TestCompareDotRecover runs SQLite's own .recover (a CLI built with
// sqlite_dbpage by scripts/sqlite-recover-cli.sh; PREFLIGHT_SQLITE_CLI or
// its cache) and salvage.Run over the corpus side by side and prints, per
// case, the original rows found in their own table, the rows with content
// no original row has, the rows in lost_and_found, integrity_check, time
// and peak memory (both as child processes). It fails when recover finds
// fewer original rows than .recover, or more wrong ones. It runs when
// PREFLIGHT_COMPARE_RECOVER=1 (scripts/bench-recover.sh sets it).
func TestCompareDotRecover(t *testing.T) {
	if os.Getenv("PREFLIGHT_COMPARE_RECOVER") != "1" {
		t.Skip("the side-by-side comparison with .recover: PREFLIGHT_COMPARE_RECOVER=1 (scripts/bench-recover.sh)")
	}
	cli := os.Getenv("PREFLIGHT_SQLITE_CLI")
	if cli == "" {
		home, _ := os.UserHomeDir()
		cli = filepath.Join(home, ".cache", "preflight-tools", "sqlite-3.52.0", "sqlite3")
	}
	if _, err := os.Stat(cli); err != nil {
		t.Skipf("no sqlite3 CLI with sqlite_dbpage (scripts/sqlite-recover-cli.sh builds it): %v", err)
	}
	dir := t.TempDir()
	orig := filepath.Join(dir, "orig.db")
	build(t, orig, 1, "delete", nil)
	want := snapshot(t, orig)
	b, _ := os.ReadFile(orig)
	var table strings.Builder
	fmt.Fprintf(&table, "| case | rows in own table (.recover / recover) | wrong content | lost_and_found | integrity_check | time | peak RSS |\n|---|---|---|---|---|---|---|\n")
	for _, tc := range corpus {
		t.Run(tc.name, func(t *testing.T) {
			src := filepath.Join(t.TempDir(), "app.db")
			os.WriteFile(src, b, 0o644)
			tc.damage(t, src)
			dmg, _ := os.ReadFile(src)
			// .recover on a copy of its own: the CLI opens the file.
			theirs := measure(t, want, func(out string) []*exec.Cmd {
				cp, script := out+".src", out+".sql"
				os.WriteFile(cp, dmg, 0o644)
				dump := exec.Command(cli, cp, ".recover")
				f, _ := os.Create(script)
				dump.Stdout = f
				load := exec.Command(cli, out, ".read "+script)
				return []*exec.Cmd{dump, load}
			})
			ours := measure(t, want, func(out string) []*exec.Cmd {
				cmd := exec.Command(os.Args[0], "-test.run=^$")
				cmd.Env = append(os.Environ(), runEnv+"="+src+"\n"+out)
				return []*exec.Cmd{cmd}
			})
			if ours.found < theirs.found {
				t.Errorf("recover found %d original rows in their table, .recover %d", ours.found, theirs.found)
			}
			if ours.wrong > theirs.wrong {
				t.Errorf("recover wrote %d rows with wrong content, .recover %d", ours.wrong, theirs.wrong)
			}
			fmt.Fprintf(&table, "| %s | %d / %d | %d / %d | %d / %d | %s / %s | %s / %s | %d / %d MiB |\n", tc.name,
				theirs.found, ours.found, theirs.wrong, ours.wrong, theirs.lost, ours.lost, theirs.ic, ours.ic,
				theirs.took.Round(time.Millisecond), ours.took.Round(time.Millisecond), (theirs.rssKiB+512)/1024, (ours.rssKiB+512)/1024)
		})
	}
	t.Logf("side by side (%d original rows):\n%s", 4300, table.String())
}

// measure runs the commands cmds makes for output file out one after the
// other, then reads out: rows found, wrong, in lost_and_found,
// integrity_check; the time of all and the largest peak RSS.
func measure(t *testing.T, want map[string]map[string]string, cmds func(out string) []*exec.Cmd) measured {
	t.Helper()
	out := filepath.Join(t.TempDir(), "out.db")
	var m measured
	start := time.Now()
	for _, c := range cmds(out) {
		err := c.Run()
		if c.ProcessState != nil {
			if rss, ok := maxRSSKiB(c.ProcessState); ok {
				m.rssKiB = max(m.rssKiB, rss)
			}
		}
		if err != nil {
			t.Logf("%v: %v", c.Args, err)
		}
	}
	m.took = time.Since(start)
	if _, serr := os.Stat(out); serr != nil {
		m.ic = "none"
		return m
	}
	db, _ := sql.Open("sqlite", testdb.DSN(out, "mode=ro"))
	defer db.Close()
	for name, q := range tables {
		got, err := tryRows(db, q)
		if err != nil {
			t.Logf("%s: %v", q, err)
		}
		for k, v := range got {
			if want[name][k] == v {
				m.found++
			} else {
				m.wrong++
			}
		}
	}
	db.QueryRow("SELECT count(*) FROM lost_and_found").Scan(&m.lost)
	db.QueryRow("PRAGMA integrity_check").Scan(&m.ic)
	return m
}
