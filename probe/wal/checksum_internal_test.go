package wal

import (
	"math/rand"
	"testing"
)

func TestSumPageLE(t *testing.T) {
	rng := rand.New(rand.NewSource(2))
	for _, size := range []int{512, 1024, 4096, 65536} {
		page := make([]byte, size)
		rng.Read(page)
		s0, s1 := rng.Uint32(), rng.Uint32()
		w0, w1 := sumLE(s0, s1, page)
		g0, g1 := sumPageLE(s0, s1, page, stepPower(size/16))
		if g0 != w0 || g1 != w1 {
			t.Errorf("sumPageLE(%d bytes) = %08x %08x, want %08x %08x", size, g0, g1, w0, w1)
		}
	}
}

func BenchmarkSumLE(b *testing.B) {
	page := make([]byte, 4096)
	b.SetBytes(4096)
	var s0, s1 uint32
	for b.Loop() {
		s0, s1 = sumLE(s0, s1, page)
	}
}

func BenchmarkSumPageLE(b *testing.B) {
	page := make([]byte, 4096)
	half := stepPower(256)
	b.SetBytes(4096)
	var s0, s1 uint32
	for b.Loop() {
		s0, s1 = sumPageLE(s0, s1, page, half)
	}
}
