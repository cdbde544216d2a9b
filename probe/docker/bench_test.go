package docker_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/preflight-sqlite/preflight/probe/docker"
)

// BenchmarkProbe200 starts 200 sleeper containers (each binding its own
// directory, every fourth also mounting a shared volume read-write, every
// fourth+1 read-only), then measures one container lookup: WritersOf the
// volume and of a host directory, and Probe of a host path. The budget is
// 300 ms per lookup. Containers are removed afterwards.
func BenchmarkProbe200(b *testing.B) {
	img := testImage(b)
	const n = 200
	vol := runID + "-bench"
	mustDocker(b, "volume", "create", "--label", "preflight.test="+runID, vol)
	root, err := os.MkdirTemp("", "pfbench")
	if err != nil {
		b.Fatal(err)
	}
	defer os.RemoveAll(root)

	start := time.Now()
	ids := make([]string, n)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	sem := make(chan struct{}, 8)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			dir := filepath.Join(root, "c", "x"+strconv.Itoa(i))
			os.MkdirAll(dir, 0o755)
			args := []string{"run", "-d", "--label", "preflight.test=" + runID, "--label", "preflight.bench=1", "-v", dir + ":/data"}
			switch i % 4 {
			case 0:
				args = append(args, "-v", vol+":/shared")
			case 1:
				args = append(args, "-v", vol+":/shared:ro")
			}
			args = append(args, img, "sleep")
			id, err := dockerCmd(args...)
			mu.Lock()
			defer mu.Unlock()
			if err != nil && firstErr == nil {
				firstErr = err
			}
			ids[i] = id
		}()
	}
	wg.Wait()
	defer func() {
		t0 := time.Now()
		var live []string
		for _, id := range ids {
			if id != "" {
				live = append(live, id)
			}
		}
		removeContainers(live)
		b.Logf("removed %d containers in %v", len(live), time.Since(t0).Round(time.Millisecond))
	}()
	if firstErr != nil {
		b.Fatal(firstErr)
	}
	b.Logf("started %d containers in %v", n, time.Since(start).Round(time.Millisecond))

	ctx := context.Background()
	opts := docker.Options{Timeout: 10 * time.Second}
	target := filepath.Join(root, "c", "x7")
	check := func(r docker.Result, want int, what string) {
		b.Helper()
		if r.Status != docker.StatusRan || len(r.Writers) != want {
			b.Fatalf("%s: status %s (%s), %d writers, want %d", what, r.Status, r.Err, len(r.Writers), want)
		}
	}
	b.Run("WritersOfVolume", func(b *testing.B) {
		for b.Loop() {
			check(docker.WritersOf(ctx, vol, "", opts), n/4, "WritersOf(volume)")
		}
		reportBudget(b)
	})
	b.Run("WritersOfHostPath", func(b *testing.B) {
		for b.Loop() {
			check(docker.WritersOf(ctx, "", target, opts), 1, "WritersOf(hostPath)")
		}
		reportBudget(b)
	})
	b.Run("ProbeHostPath", func(b *testing.B) {
		for b.Loop() {
			check(docker.Probe(ctx, []string{filepath.Join(target, "app.db")}, opts), 1, "Probe(host path)")
		}
		reportBudget(b)
	})
}

func reportBudget(b *testing.B) {
	b.Helper()
	per := b.Elapsed() / time.Duration(max(b.N, 1))
	if per > 300*time.Millisecond {
		b.Errorf("%v per lookup with 200 containers, budget 300ms", per)
	}
}
