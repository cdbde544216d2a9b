// Package peak measures, for tests and benchmarks, how long a call took
// and the most heap it held while it ran.
package peak

import (
	"runtime"
	"time"
)

// Measure runs f and returns how long it took and the most the heap in
// use (runtime.MemStats.HeapInuse, bytes) grew above what it was, after a
// GC, when f started: sampled every millisecond, so what f holds at its
// peak (its garbage included), not what was there before (a test's
// fixtures).
func Measure(f func()) (time.Duration, uint64) {
	runtime.GC()
	var base runtime.MemStats
	runtime.ReadMemStats(&base)
	stop, top := make(chan struct{}), make(chan uint64)
	go func() {
		var most uint64
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			most = max(most, ms.HeapInuse)
			select {
			case <-stop:
				top <- most
				return
			case <-time.After(time.Millisecond):
			}
		}
	}()
	start := time.Now()
	f()
	took := time.Since(start)
	close(stop)
	return took, max(<-top, base.HeapInuse) - base.HeapInuse
}
