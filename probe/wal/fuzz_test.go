package wal_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"testing/iotest"

	"github.com/google/go-cmp/cmp"

	"github.com/preflight-sqlite/preflight/probe/wal"
)

// FuzzValidate feeds arbitrary bytes to Validate: it must not panic or hang,
// must account for every byte, must not claim more frames than the input
// holds, and must read a stream byte by byte as it reads it whole. The seeds
// are testdata/*.wal; they are several KiB, so cap minimisation when fuzzing:
//
//	go test ./probe/wal/ -run '^$' -fuzz FuzzValidate -fuzztime 20s -fuzzminimizetime 200x
func FuzzValidate(f *testing.F) {
	seeds, err := filepath.Glob(filepath.Join("testdata", "*.wal"))
	if err != nil {
		f.Fatal(err)
	}
	for _, p := range seeds {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte{})
	f.Add([]byte{0x37, 0x7f, 0x06, 0x82})
	f.Fuzz(func(t *testing.T, in []byte) {
		got, err := wal.Validate(bytes.NewReader(in))
		if got.SizeBytes > int64(len(in)) {
			t.Fatalf("Validate: SizeBytes %d > input %d", got.SizeBytes, len(in))
		}
		if err != nil || len(in) == 0 {
			return
		}
		if got.SizeBytes != int64(len(in)) {
			t.Fatalf("Validate: SizeBytes %d, input %d", got.SizeBytes, len(in))
		}
		frame := int64(got.Header.PageSize + wal.FrameHeaderSize)
		if end := wal.HeaderSize + int64(got.ValidFrames+got.FramesAfterBreak-1)*frame; got.FramesAfterBreak > 0 && end >= int64(len(in)) {
			t.Fatalf("Validate: %d valid + %d after the break frames of %d bytes exceed the input of %d", got.ValidFrames, got.FramesAfterBreak, frame, len(in))
		}
		if wal.HeaderSize+int64(got.ValidFrames)*frame > int64(len(in)) {
			t.Fatalf("Validate: %d valid frames of %d bytes exceed the input of %d", got.ValidFrames, frame, len(in))
		}
		if got.LastCommitFrame > got.ValidFrames || got.CommittedTxns > got.ValidFrames ||
			got.ValidLookingAfter+got.StaleFrames > got.FramesAfterBreak || got.CommitsAfterBreak > got.ValidLookingAfter ||
			got.BytesAfterLastCommit < 0 || (got.FirstInvalidFrame != 0 && got.FirstInvalidFrame != got.ValidFrames+1) {
			t.Fatalf("Validate: inconsistent report %+v", got)
		}
		slow, err := wal.Validate(iotest.OneByteReader(bytes.NewReader(in)))
		if err != nil {
			t.Fatalf("Validate(OneByteReader): %v", err)
		}
		if diff := cmp.Diff(got, slow); diff != "" {
			t.Fatalf("Validate(OneByteReader) differs (-bytes.Reader +OneByteReader):\n%s", diff)
		}
	})
}
