package kubetest

import (
	"runtime"
	"time"
)

// WatchHeap samples the live heap (runtime.MemStats.HeapInuse) every
// interval until the returned function is called, which returns the
// largest sample in MiB: what a benchmark against the cluster reports as
// heap-MB. Each sample stops the world briefly; keep interval well above a
// millisecond.
func WatchHeap(interval time.Duration) (stop func() float64) {
	done := make(chan struct{})
	peak := make(chan uint64)
	go func() {
		var top uint64
		var ms runtime.MemStats
		for {
			select {
			case <-done:
				peak <- top
				return
			case <-time.After(interval):
				runtime.ReadMemStats(&ms)
				top = max(top, ms.HeapInuse)
			}
		}
	}()
	return func() float64 {
		close(done)
		return float64(<-peak) / (1 << 20)
	}
}
