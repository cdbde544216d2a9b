//go:build linux

package procfs_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/preflight-sqlite/preflight/internal/testdb"
	"github.com/preflight-sqlite/preflight/probe/procfs"
)

// benchProcs are the sleeping processes BenchmarkScan spawns once per test
// binary run; TestMain kills them after the run.
var benchProcs []*exec.Cmd

func killBenchProcs() {
	for _, c := range benchProcs {
		c.Process.Kill()
	}
	for _, c := range benchProcs {
		c.Wait()
	}
	benchProcs = nil
}

// BenchmarkScan measures one Scan over this machine's processes plus
// PROCFS_BENCH_PROCS (default 2000) extra "sleep 600" processes, with one
// live WAL connection to find. The target is 50 ms per scan for 2,000
// processes.
func BenchmarkScan(b *testing.B) {
	requireLinux(b)
	n := 2000
	if s := os.Getenv("PROCFS_BENCH_PROCS"); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil {
			b.Fatalf("PROCFS_BENCH_PROCS=%q: %v", s, err)
		}
	}
	for len(benchProcs) < n {
		cmd := exec.Command("sleep", "600")
		if err := cmd.Start(); err != nil {
			b.Fatalf("start sleep #%d: %v (raise RLIMIT_NPROC or set PROCFS_BENCH_PROCS)", len(benchProcs)+1, err)
		}
		benchProcs = append(benchProcs, cmd)
	}
	path := filepath.Join(b.TempDir(), "x.db")
	testdb.Make(b, path, "wal", 1)
	c := startChild(b, path)
	c.Do(b, "select count(*) from t")
	tg := targetFor(b, path)
	var before syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &before)
	var res procfs.Result
	for b.Loop() {
		var err error
		res, err = procfs.Scan(context.Background(), []procfs.Target{tg}, procfs.Options{})
		if err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	var after syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &after)
	cpu := time.Duration(after.Utime.Nano() + after.Stime.Nano() - before.Utime.Nano() - before.Stime.Nano())
	// CPU time (user+system) per scan: on a busy machine wall time per
	// scan depends on what else runs; this does not.
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
	if len(holdersOf(res, c.PID())) == 0 {
		b.Errorf("Scan: child %d not found among %d processes", c.PID(), res.Scanned)
	}
	b.ReportMetric(float64(res.Scanned), "procs")
}
