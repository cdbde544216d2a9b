// Package peak measures, for tests and benchmarks, how long a call took
// and the most heap it held while it ran.
package peak

import (
	"runtime"
	"time"
)

// Measure runs f and returns how long it took and the largest heap in use
// (runtime.MemStats.HeapInuse, bytes) seen while it ran, sampled every
// millisecond after a GC.
func Measure(f func()) (time.Duration, uint64) {
	runtime.GC()
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
	return took, <-top
}
