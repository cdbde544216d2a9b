// Package activity watches a database's -wal and -shm files for changes
// that no other probe can attribute: a writer on the far side of a VM share
// or another NFS client changes the files, but its processes and locks are
// invisible from here.
//
// A sample is the size and modification time of the database, its -wal and
// its -shm, plus the wal-index header's change counter (iChange) and mxFrame
// read from the first bytes of -shm (see https://sqlite.org/walformat.html,
// "The WAL-Index Header"). Watch takes two samples an interval apart.
// Nothing is written, created or locked; -shm is read through a read-only
// descriptor that is closed at once, so the caller must not hold a SQLite
// connection to the same database in this process (closing a descriptor
// drops every POSIX lock the process holds on that file).
package activity

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"time"

	"github.com/preflight-sqlite/preflight/internal/rawfile"
)

// FileState is the observed state of one file.
type FileState struct {
	Exists    bool      `json:"exists"`
	SizeBytes int64     `json:"size_bytes"`
	ModTime   time.Time `json:"mtime"`
}

// Sample is one observation of a database and its sidecars.
type Sample struct {
	At  time.Time `json:"at"`
	DB  FileState `json:"db"`
	WAL FileState `json:"wal"`
	SHM FileState `json:"shm"`
	// Change is the wal-index header's iChange counter (bytes 8..11 of -shm,
	// native byte order), incremented by every committed write transaction;
	// HasIndex is false when -shm is absent or shorter than the header.
	Change   uint32 `json:"change_counter"`
	MaxFrame uint32 `json:"max_frame"`
	HasIndex bool   `json:"has_wal_index"`
}

// Result compares two samples.
type Result struct {
	Before   Sample        `json:"before"`
	After    Sample        `json:"after"`
	Interval time.Duration `json:"interval_ns"`
	// Changed is true when any size, mtime or the change counter differs.
	Changed bool `json:"changed"`
	// What lists what changed, e.g. "-wal size 4152 -> 8272".
	What []string `json:"what,omitempty"`
}

// walIndexHeaderSize is the size in bytes of one copy of the wal-index
// header at the start of -shm.
const walIndexHeaderSize = 48

// Take samples dbPath, dbPath-wal and dbPath-shm once. A missing file is
// recorded as not existing; other stat or read errors are returned.
func Take(dbPath string) (Sample, error) {
	s := Sample{At: time.Now()}
	var err error
	if s.DB, err = state(dbPath); err != nil {
		return s, err
	}
	if s.WAL, err = state(dbPath + "-wal"); err != nil {
		return s, err
	}
	if s.SHM, err = state(dbPath + "-shm"); err != nil {
		return s, err
	}
	if s.SHM.Exists && s.SHM.SizeBytes >= walIndexHeaderSize {
		hdr, err := readHeader(dbPath + "-shm")
		if err != nil {
			return s, err
		}
		s.Change, s.MaxFrame, s.HasIndex = ParseIndexHeader(hdr)
	}
	return s, nil
}

// ParseIndexHeader reads iChange and mxFrame from the first 48 bytes of a
// wal-index. The header is in the byte order of the machine that wrote it;
// it is read as little-endian, the order of every platform Docker runs on,
// unless its version field (bytes 0..3, 3007000) reads correctly only as
// big-endian. ok is false when hdr is shorter than the header or its version
// field is not 3007000 in either order.
func ParseIndexHeader(hdr []byte) (change, maxFrame uint32, ok bool) {
	if len(hdr) < walIndexHeaderSize {
		return 0, 0, false
	}
	const version = 3007000
	var bo binary.ByteOrder = binary.LittleEndian
	switch {
	case binary.LittleEndian.Uint32(hdr) == version:
	case binary.BigEndian.Uint32(hdr) == version:
		bo = binary.BigEndian
	default:
		return 0, 0, false
	}
	return bo.Uint32(hdr[8:]), bo.Uint32(hdr[16:]), true
}

// Watch samples dbPath, waits interval (or until ctx is done), samples
// again and compares. It returns ctx's error when cancelled before the
// second sample.
func Watch(ctx context.Context, dbPath string, interval time.Duration) (Result, error) {
	before, err := Take(dbPath)
	if err != nil {
		return Result{}, err
	}
	t := time.NewTimer(interval)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return Result{}, ctx.Err()
	case <-t.C:
	}
	after, err := Take(dbPath)
	if err != nil {
		return Result{}, err
	}
	return Compare(before, after), nil
}

// Compare reports what differs between two samples of the same database.
func Compare(before, after Sample) Result {
	r := Result{Before: before, After: after, Interval: after.At.Sub(before.At)}
	for _, f := range []struct {
		name string
		a, b FileState
	}{{"database", before.DB, after.DB}, {"-wal", before.WAL, after.WAL}, {"-shm", before.SHM, after.SHM}} {
		switch {
		case f.a.Exists != f.b.Exists:
			r.What = append(r.What, fmt.Sprintf("%s exists %t -> %t", f.name, f.a.Exists, f.b.Exists))
		case f.a.SizeBytes != f.b.SizeBytes:
			r.What = append(r.What, fmt.Sprintf("%s size %d -> %d", f.name, f.a.SizeBytes, f.b.SizeBytes))
		case !f.a.ModTime.Equal(f.b.ModTime):
			r.What = append(r.What, fmt.Sprintf("%s mtime %s -> %s", f.name, f.a.ModTime.Format(time.RFC3339Nano), f.b.ModTime.Format(time.RFC3339Nano)))
		}
	}
	if before.HasIndex && after.HasIndex && (before.Change != after.Change || before.MaxFrame != after.MaxFrame) {
		r.What = append(r.What, fmt.Sprintf("wal-index change counter %d -> %d, max frame %d -> %d", before.Change, after.Change, before.MaxFrame, after.MaxFrame))
	}
	r.Changed = len(r.What) > 0
	return r
}

func state(path string) (FileState, error) {
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return FileState{}, nil
	}
	if err != nil {
		return FileState{}, fmt.Errorf("stat %s: %w", path, err)
	}
	return FileState{Exists: true, SizeBytes: fi.Size(), ModTime: fi.ModTime()}, nil
}

// readHeader reads the first bytes of path (rawfile.Open: a FIFO or device
// in its place is an error, not a blocking open); nil when it is missing.
func readHeader(path string) ([]byte, error) {
	f, err := rawfile.Open(path, false)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	defer f.Close()
	b := make([]byte, walIndexHeaderSize)
	n, err := io.ReadFull(f, b)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return b[:n], nil
}
