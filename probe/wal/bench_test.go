package wal_test

import (
	"bytes"
	"math/rand"
	"os"
	"sync"
	"testing"

	"github.com/preflight-sqlite/preflight/probe/wal"
)

// synthWAL returns an intact WAL of about size bytes: page size 4096, random
// page contents, a commit frame every 8 frames, checksums by refSum.
func synthWAL(size int, bigEndian bool) walBytes {
	const pageSize = 4096
	fs := pageSize + wal.FrameHeaderSize
	n := (size - wal.HeaderSize) / fs
	w := make(walBytes, wal.HeaderSize+n*fs)
	magic := uint32(wal.MagicLittleEndian)
	if bigEndian {
		magic = wal.MagicBigEndian
	}
	be.PutUint32(w[0:], magic)
	be.PutUint32(w[4:], wal.FormatVersion)
	be.PutUint32(w[8:], pageSize)
	be.PutUint32(w[16:], 0x1234)
	be.PutUint32(w[20:], 0x5678)
	w.seal()
	rng := rand.New(rand.NewSource(1))
	rng.Read(w[wal.HeaderSize:])
	for i := 1; i <= n; i++ {
		f := w.frame(i)
		be.PutUint32(f[0:], uint32(i%1000+1))
		be.PutUint32(f[4:], 0)
		if i%8 == 0 || i == n {
			be.PutUint32(f[4:], 1001)
		}
		copy(f[8:16], w[16:24])
	}
	w.resealAll()
	return w
}

var benchWAL = sync.OnceValue(func() walBytes { return synthWAL(64<<20, false) })

func BenchmarkValidate(b *testing.B) {
	w := benchWAL()
	b.SetBytes(int64(len(w)))
	b.ReportAllocs()
	for b.Loop() {
		rep, err := wal.Validate(bytes.NewReader(w))
		if err != nil || rep.ValidFrames != w.frames() {
			b.Fatalf("Validate(synthetic WAL) = %d valid frames, %v; want %d", rep.ValidFrames, err, w.frames())
		}
	}
}

func BenchmarkValidateBigEndian(b *testing.B) {
	w := synthWAL(64<<20, true)
	b.SetBytes(int64(len(w)))
	for b.Loop() {
		if rep, err := wal.Validate(bytes.NewReader(w)); err != nil || rep.ValidFrames != w.frames() {
			b.Fatalf("Validate(synthetic big-endian WAL) = %d valid frames, %v", rep.ValidFrames, err)
		}
	}
}

// TestSynthWAL checks the benchmark input and the checksum fast paths
// against the reference loop.
func TestSynthWAL(t *testing.T) {
	for _, bigEndian := range []bool{false, true} {
		w := synthWAL(1<<20, bigEndian)
		rep, err := wal.Validate(bytes.NewReader(w))
		if err != nil || rep.ValidFrames != w.frames() || rep.LastCommitFrame != w.frames() {
			t.Errorf("Validate(synthetic WAL, big-endian %v) = %+v, %v; want %d valid frames", bigEndian, rep, err, w.frames())
		}
	}
}

// BenchmarkValidateFile validates the WAL file named by PREFLIGHT_BENCH_WAL
// (scripts/bench-health.sh makes a 1 GiB one); skipped when unset.
func BenchmarkValidateFile(b *testing.B) {
	path := os.Getenv("PREFLIGHT_BENCH_WAL")
	if path == "" {
		b.Skip("PREFLIGHT_BENCH_WAL not set")
	}
	fi, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(fi.Size())
	for i := 0; i < b.N; i++ {
		if _, err := wal.ValidateFile(path); err != nil {
			b.Fatal(err)
		}
	}
}
