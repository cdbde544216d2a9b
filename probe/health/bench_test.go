package health_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/preflight-sqlite/preflight/probe/health"
)

// benchDBEnv names a database file for BenchmarkQuickCheck; it is created
// (about 64 MiB) when missing and kept, so that the same file can be timed
// with `time sqlite3 FILE 'pragma quick_check'`.
const benchDBEnv = "HEALTH_BENCH_DB"

var (
	benchOnce sync.Once
	benchPath string
	benchDir  string // removed by TestMain when the file was not named by benchDBEnv
	benchErr  error
)

// benchDB returns the benchmark database, creating it once.
func benchDB(b *testing.B) string {
	benchOnce.Do(func() {
		benchPath = os.Getenv(benchDBEnv)
		if benchPath == "" {
			benchDir, benchErr = os.MkdirTemp("", "health-bench-")
			if benchErr != nil {
				return
			}
			benchPath = filepath.Join(benchDir, "bench.db")
		}
		if _, err := os.Stat(benchPath); err == nil {
			return
		}
		makeDB(b, benchPath, "wal", 0)
		execDB(b, benchPath,
			"create index t_v on t(v)",
			`with recursive c(x) as (select 1 union all select x+1 from c where x < 160000)
			 insert into t(v) select printf('%08d ', x) || hex(randomblob(80)) from c`,
			"pragma wal_checkpoint(truncate)",
		)
	})
	if benchErr != nil {
		b.Fatal(benchErr)
	}
	return benchPath
}

// BenchmarkQuickCheck times CheckIntegrity (quick_check and
// integrity_check) on a healthy ~64 MiB database, and Debian's sqlite3
// running the same pragma for comparison.
func BenchmarkQuickCheck(b *testing.B) {
	path := benchDB(b)
	fi, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("database %s: %d MiB", path, fi.Size()>>20)
	for _, full := range []bool{false, true} {
		name := "CheckIntegrity/quick_check"
		if full {
			name = "CheckIntegrity/integrity_check"
		}
		b.Run(name, func(b *testing.B) {
			b.SetBytes(fi.Size())
			for b.Loop() {
				if got := health.CheckIntegrity(context.Background(), path, health.Options{Full: full}); !got.OK {
					b.Fatalf("CheckIntegrity = %+v", got)
				}
			}
		})
	}
	b.Run("sqlite3-cli/quick_check", func(b *testing.B) {
		sqlite3, err := exec.LookPath("sqlite3")
		if err != nil {
			b.Skip("sqlite3 not on PATH")
		}
		b.SetBytes(fi.Size())
		for b.Loop() {
			out, err := exec.Command(sqlite3, path, "pragma quick_check").Output()
			if err != nil || strings.TrimSpace(string(out)) != "ok" {
				b.Fatalf("sqlite3 quick_check: %q, %v", out, err)
			}
		}
	})
}
