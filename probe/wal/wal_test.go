package wal_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"testing/iotest"

	"github.com/google/go-cmp/cmp"

	"github.com/preflight-sqlite/preflight/probe/wal"
)

// wantPrefix is the Report expected for w when its first valid frames form
// the valid prefix, before any break field is set.
func wantPrefix(w walBytes, valid int) wal.Report {
	s0, s1 := refSum(w.bigEndian(), 0, 0, w[:24])
	h := wal.Header{
		Magic:             be.Uint32(w[0:]),
		BigEndianChecksum: w.bigEndian(),
		FormatVersion:     be.Uint32(w[4:]),
		PageSize:          w.pageSize(),
		CheckpointSeq:     be.Uint32(w[12:]),
		Salt1:             be.Uint32(w[16:]),
		Salt2:             be.Uint32(w[20:]),
		Checksum1:         be.Uint32(w[24:]),
		Checksum2:         be.Uint32(w[28:]),
		ChecksumValid:     s0 == be.Uint32(w[24:]) && s1 == be.Uint32(w[28:]),
	}
	c := w.commits()
	lc := lastCommit(c, valid)
	r := wal.Report{
		Header:               h,
		SizeBytes:            int64(len(w)),
		ValidFrames:          valid,
		CommittedTxns:        countCommits(c, 1, valid),
		LastCommitFrame:      lc,
		BytesAfterLastCommit: int64(len(w) - wal.HeaderSize - lc*w.frameSize()),
		UncommittedTail:      valid - lc,
		Empty:                len(w) == wal.HeaderSize,
	}
	if lc > 0 {
		r.DBSizePages = be.Uint32(w.frame(lc)[4:])
	}
	for i := 1; i <= lc; i++ {
		if be.Uint32(w.frame(i)[0:]) == 1 {
			r.Page1Frame = i
		}
	}
	return r
}

// withBreak sets the break fields of r.
func withBreak(r wal.Report, first int, reason string, after, looking, commitsAfter, stale int) wal.Report {
	r.FirstInvalidFrame = first
	r.InvalidReason = reason
	r.FramesAfterBreak = after
	r.ValidLookingAfter = looking
	r.CommitsAfterBreak = commitsAfter
	r.StaleFrames = stale
	r.Stale = stale > 0 && looking == 0
	return r
}

// damageCase is one WAL built from a real one, with the report expected.
type damageCase struct {
	name     string
	wal      walBytes
	want     wal.Report
	discards bool
	// noSQLite: SQLite refuses to open the database (no row cross-check).
	noSQLite bool
}

// damageCases builds damaged variants of base, an intact WAL with at least
// 8 frames whose last frame is a commit frame.
func damageCases(t *testing.T, base walBytes) []damageCase {
	t.Helper()
	n := base.frames()
	c := base.commits()
	if n < 8 || !c[n] {
		t.Fatalf("base WAL has %d frames (last commit %v), want >= 8 ending in a commit", n, c[n])
	}
	m := n / 2
	fs := base.frameSize()
	var cases []damageCase
	add := func(dc damageCase) { cases = append(cases, dc) }

	add(damageCase{name: "intact", wal: base, want: wantPrefix(base, n)})
	bigEnd := base.toBigEndian()
	add(damageCase{name: "intact big-endian", wal: bigEnd, want: wantPrefix(bigEnd, n)})

	w := base[:wal.HeaderSize+(m-1)*fs+fs/2].clone()
	add(damageCase{name: "truncated mid-page", wal: w,
		want: withBreak(wantPrefix(w, m-1), m, wal.ReasonTruncated, 1, 0, 0, 0)})
	w = base[:wal.HeaderSize+(m-1)*fs+10].clone()
	add(damageCase{name: "truncated in frame header", wal: w,
		want: withBreak(wantPrefix(w, m-1), m, wal.ReasonTruncated, 1, 0, 0, 0)})
	w = base[:wal.HeaderSize+(m-1)*fs].clone()
	add(damageCase{name: "truncated at frame boundary", wal: w, want: wantPrefix(w, m-1)})
	w = base[:wal.HeaderSize].clone()
	add(damageCase{name: "header only", wal: w, want: wantPrefix(w, 0)})

	w = base.clone()
	w.frame(m)[wal.FrameHeaderSize+100] ^= 0x01
	add(damageCase{name: "page byte flipped", wal: w, discards: true,
		want: withBreak(wantPrefix(w, m-1), m, wal.ReasonChecksum, n-m+1, n-m, countCommits(c, m+1, n), 0)})
	w = bigEnd.clone()
	w.frame(m)[wal.FrameHeaderSize+100] ^= 0x80
	add(damageCase{name: "page byte flipped big-endian", wal: w, discards: true,
		want: withBreak(wantPrefix(w, m-1), m, wal.ReasonChecksum, n-m+1, n-m, countCommits(c, m+1, n), 0)})
	// Only the stored checksum of frame m changed: the frames after it
	// chain to the checksum frame m should have stored.
	for _, word := range []int{16, 20} {
		w = base.clone()
		be.PutUint32(w.frame(m)[word:], 0)
		add(damageCase{name: fmt.Sprintf("stored checksum word %d zeroed", (word-16)/4+1), wal: w, discards: true,
			want: withBreak(wantPrefix(w, m-1), m, wal.ReasonChecksum, n-m+1, n-m, countCommits(c, m+1, n), 0)})
	}
	w = bigEnd.clone()
	be.PutUint32(w.frame(m)[16:], 0)
	add(damageCase{name: "stored checksum zeroed big-endian", wal: w, discards: true,
		want: withBreak(wantPrefix(w, m-1), m, wal.ReasonChecksum, n-m+1, n-m, countCommits(c, m+1, n), 0)})
	w = base.clone()
	be.PutUint32(w.frame(m)[16:], 0)
	be.PutUint32(w.frame(m + 2)[20:], 0)
	add(damageCase{name: "two stored checksums zeroed", wal: w, discards: true,
		want: withBreak(wantPrefix(w, m-1), m, wal.ReasonChecksum, n-m+1, n-m-1, countCommits(c, m+1, n)-countCommits(c, m+2, m+2), 0)})
	w = base.clone()
	w.frame(m)[15] ^= 0x01 // salt-2
	be.PutUint32(w.frame(m)[16:], 0)
	add(damageCase{name: "salt-2 and stored checksum changed", wal: w, discards: true,
		want: withBreak(wantPrefix(w, m-1), m, wal.ReasonSalt, n-m+1, n-m, countCommits(c, m+1, n), 0)})

	w = base.clone()
	w.frame(n)[fs-1] ^= 0xff
	add(damageCase{name: "last commit frame flipped", wal: w,
		want: withBreak(wantPrefix(w, n-1), n, wal.ReasonChecksum, 1, 0, 0, 0)})
	w = base.clone()
	w.frame(m)[15] ^= 0x01 // salt-2
	add(damageCase{name: "salt-2 changed", wal: w, discards: true,
		want: withBreak(wantPrefix(w, m-1), m, wal.ReasonSalt, n-m+1, n-m, countCommits(c, m+1, n), 0)})
	w = base.clone()
	be.PutUint32(w.frame(m)[0:], 0)
	add(damageCase{name: "zero page number", wal: w, discards: true,
		want: withBreak(wantPrefix(w, m-1), m, wal.ReasonPageNumber, n-m+1, n-m, countCommits(c, m+1, n), 0)})

	// Two writers: after frame m, a second writer that saw an empty log
	// (its chain starts at the header) appends three frames of its own,
	// the last a commit, interleaved with the first writer's frames m+1...
	w = base[:wal.HeaderSize+m*fs].clone()
	s0, s1 := base.stored(0)
	for j := 1; j <= 3; j++ {
		f := append([]byte(nil), base.frame(m+j)...)
		f[wal.FrameHeaderSize+7] ^= 0x5a
		be.PutUint32(f[4:], 0)
		if j == 3 {
			be.PutUint32(f[4:], be.Uint32(base.frame(n)[4:]))
		}
		s0, s1 = sealFrame(base.bigEndian(), f, s0, s1)
		w = append(w, f...)
		w = append(w, base.frame(m+j)...)
	}
	for j := m + 4; j <= n; j++ {
		w = append(w, base.frame(j)...)
	}
	add(damageCase{name: "two writers interleaved", wal: w, discards: true,
		want: withBreak(wantPrefix(w, m), m+1, wal.ReasonChecksum, n-m+3, n-m+3, countCommits(c, m+1, n)+1, 0)})

	w = base.clone()
	w[12] ^= 0x01 // checkpoint sequence, header checksum not updated
	add(damageCase{name: "header checksum broken", wal: w, discards: true,
		want: withBreak(wantPrefix(w, 0), 1, wal.ReasonHeaderChecksum, n, n, countCommits(c, 1, n), 0)})
	w = base.clone()
	be.PutUint32(w[4:], wal.FormatVersion+1)
	w.seal()
	add(damageCase{name: "unsupported format version", wal: w, discards: true, noSQLite: true,
		// Frame 1 chained from the old header checksum; frame 2 on chain to it.
		want: withBreak(wantPrefix(w, 0), 1, wal.ReasonVersion, n, n-1, countCommits(c, 2, n), 0)})
	w = base.clone()
	be.PutUint32(w[8:], uint32(base.pageSize()*3/2)) // not a power of two, or > 65536
	w.seal()
	want := wantPrefix(w, 0)
	want.FirstInvalidFrame, want.InvalidReason = 1, wal.ReasonPageSize
	add(damageCase{name: "invalid page size", wal: w, want: want})
	return cases
}

// checkCase validates dc.wal, compares with dc.want and cross-checks the
// committed prefix against what SQLite recovers from db plus dc.wal.
func checkCase(t *testing.T, db []byte, dc damageCase) {
	t.Helper()
	got, err := wal.Validate(bytes.NewReader(dc.wal))
	if err != nil {
		t.Fatalf("Validate(%s) error: %v", dc.name, err)
	}
	if diff := cmp.Diff(dc.want, got); diff != "" {
		t.Errorf("Validate(%s) mismatch (-want +got):\n%s", dc.name, diff)
	}
	if got.Discards() != dc.discards {
		t.Errorf("Validate(%s).Discards() = %v, want %v", dc.name, got.Discards(), dc.discards)
	}
	// The same through a reader that returns one byte at a time.
	slow, err := wal.Validate(iotest.OneByteReader(bytes.NewReader(dc.wal)))
	if err != nil || !cmp.Equal(got, slow) {
		t.Errorf("Validate(OneByteReader(%s)) = %+v, %v; want %+v", dc.name, slow, err, got)
	}
	if dc.noSQLite {
		return
	}
	v := sqliteView(t, db, dc.wal)
	if want := v.baseRows + got.CommittedTxns; v.rows != want {
		t.Errorf("%s: SQLite sees %d rows, want %d (%d in the database file + CommittedTxns %d)",
			dc.name, v.rows, want, v.baseRows, got.CommittedTxns)
	}
	if v.mxFrame != got.LastCommitFrame {
		t.Errorf("%s: SQLite recovered %d WAL frames, Validate's LastCommitFrame = %d", dc.name, v.mxFrame, got.LastCommitFrame)
	}
}

func TestValidateDriverWAL(t *testing.T) {
	// 14 one-row transactions; blobs of 5000 and 9000 bytes spill to overflow
	// pages, so transactions span 1 to 4 frames.
	snap := driverWAL(t, 4096, inserts(14, 100, 5000, 300, 9000)...)
	base := snap.wal
	t.Logf("driver WAL: %d frames, commit frames %v", base.frames(), base.commits())
	if got := countCommits(base.commits(), 1, base.frames()); got != 14 {
		t.Fatalf("driver WAL has %d commit frames, want 14", got)
	}
	for _, dc := range damageCases(t, base) {
		t.Run(dc.name, func(t *testing.T) { checkCase(t, snap.db, dc) })
	}
}

func TestValidateSmallPages(t *testing.T) {
	snap := driverWAL(t, 512, inserts(10, 50, 700, 2000)...)
	for _, dc := range damageCases(t, snap.wal) {
		t.Run(dc.name, func(t *testing.T) { checkCase(t, snap.db, dc) })
	}
}

func TestValidateLargePages(t *testing.T) {
	snap := driverWAL(t, 65536, inserts(9, 50, 70000, 200000)...)
	if snap.wal.pageSize() != 65536 {
		t.Fatalf("page size %d, want 65536", snap.wal.pageSize())
	}
	for _, dc := range damageCases(t, snap.wal) {
		t.Run(dc.name, func(t *testing.T) { checkCase(t, snap.db, dc) })
	}
}

func TestValidateCLIWAL(t *testing.T) {
	// Seven transactions of one row each (the third writes its row twice).
	snap := cliWAL(t,
		"INSERT INTO t(b) VALUES (randomblob(100));",
		"INSERT INTO t(b) VALUES (randomblob(5000));",
		"BEGIN; INSERT INTO t(b) VALUES (randomblob(10)); UPDATE t SET b = randomblob(6000) WHERE id = last_insert_rowid(); COMMIT;",
		"INSERT INTO t(b) VALUES (randomblob(9000));",
		"INSERT INTO t(b) VALUES (randomblob(300));",
		"INSERT INTO t(b) VALUES (randomblob(300));",
		"INSERT INTO t(b) VALUES (randomblob(300));",
	)
	got, err := wal.Validate(bytes.NewReader(snap.wal))
	if err != nil {
		t.Fatalf("Validate(sqlite3 WAL): %v", err)
	}
	n := snap.wal.frames()
	want := wantPrefix(snap.wal, n)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Validate(sqlite3 WAL) mismatch (-want +got):\n%s", diff)
	}
	if got.CommittedTxns != 7 || got.LastCommitFrame != n {
		t.Errorf("Validate(sqlite3 WAL) = %d commits, last commit frame %d; want 7, %d", got.CommittedTxns, got.LastCommitFrame, n)
	}
	v := sqliteView(t, snap.db, snap.wal)
	if v.rows != 7 || v.mxFrame != got.LastCommitFrame {
		t.Errorf("SQLite sees %d rows and %d frames, want 7 and %d", v.rows, v.mxFrame, got.LastCommitFrame)
	}
	for _, dc := range damageCases(t, snap.wal) {
		t.Run(dc.name, func(t *testing.T) { checkCase(t, snap.db, dc) })
	}
}

// staleWAL makes a real WAL that was restarted after a checkpoint: 12
// transactions, a RESTART checkpoint, then 2 transactions that overwrite the
// first frames with new salts, leaving older frames behind.
func staleWAL(t *testing.T) (snapshot, int) {
	t.Helper()
	stmts := inserts(12, 100, 5000, 300)
	stmts = append(stmts, "PRAGMA wal_checkpoint(RESTART)")
	stmts = append(stmts, inserts(2, 100)...)
	snap := driverWAL(t, 4096, stmts...)
	w := snap.wal
	salt1, salt2 := be.Uint32(w[16:]), be.Uint32(w[20:])
	k := 0
	for k < w.frames() && be.Uint32(w.frame(k + 1)[8:]) == salt1 && be.Uint32(w.frame(k + 1)[12:]) == salt2 {
		k++
	}
	if k == 0 || k >= w.frames() {
		t.Fatalf("restarted WAL: %d frames of %d carry the header salts, want some but not all", k, w.frames())
	}
	if old := be.Uint32(w.frame(k + 1)[8:]); old+1 != salt1 {
		t.Fatalf("restarted WAL: stale salt-1 %d, header salt-1 %d; want header = stale+1", old, salt1)
	}
	return snap, k
}

func TestValidateStale(t *testing.T) {
	snap, k := staleWAL(t)
	w := snap.wal
	n := w.frames()
	fs := w.frameSize()
	cut := w[:len(w)-fs/2].clone()
	cases := []damageCase{
		{name: "restarted", wal: w,
			want: withBreak(wantPrefix(w, k), k+1, wal.ReasonSalt, n-k, 0, 0, n-k)},
		{name: "restarted, torn old tail", wal: cut,
			want: withBreak(wantPrefix(cut, k), k+1, wal.ReasonSalt, n-k, 0, 0, n-k)},
	}
	for _, dc := range cases {
		t.Run(dc.name, func(t *testing.T) {
			checkCase(t, snap.db, dc)
			if !dc.want.Stale {
				t.Fatalf("test expects Stale")
			}
		})
	}

	// Only the old generation's tail remains after the new frames, cut
	// inside the first stale frame's header: a truncated frame, not stale.
	short := w[:wal.HeaderSize+k*fs+10].clone()
	t.Run("restarted, cut in stale frame header", func(t *testing.T) {
		checkCase(t, snap.db, damageCase{name: "cut", wal: short,
			want: withBreak(wantPrefix(short, k), k+1, wal.ReasonTruncated, 1, 0, 0, 0)})
	})
	// Cut after the stale frame's header: its salts are readable.
	partial := w[:wal.HeaderSize+k*fs+100].clone()
	t.Run("restarted, stale partial frame", func(t *testing.T) {
		checkCase(t, snap.db, damageCase{name: "partial", wal: partial,
			want: withBreak(wantPrefix(partial, k), k+1, wal.ReasonSalt, 1, 0, 0, 1)})
	})
}

func TestValidateHeader(t *testing.T) {
	hdr := make(walBytes, wal.HeaderSize)
	be.PutUint32(hdr[0:], wal.MagicLittleEndian)
	be.PutUint32(hdr[4:], wal.FormatVersion)
	be.PutUint32(hdr[8:], 4096)
	be.PutUint32(hdr[16:], 7)
	hdr.seal()
	notWAL := hdr.clone()
	be.PutUint32(notWAL[0:], 0x377f0684)

	badPage := append(hdr.clone(), make([]byte, 5000)...)
	be.PutUint32(badPage[8:], 1000)
	badPage.seal()
	tooBig := hdr.clone()
	be.PutUint32(tooBig[8:], 131072)
	tooBig.seal()

	tests := []struct {
		name    string
		in      []byte
		want    wal.Report
		wantErr error
	}{
		{name: "zero length", in: nil, want: wal.Report{Empty: true}},
		{name: "one byte", in: []byte{0x37}, want: wal.Report{SizeBytes: 1}, wantErr: wal.ErrTruncatedHeader},
		{name: "31 bytes", in: hdr[:31], want: wal.Report{SizeBytes: 31}, wantErr: wal.ErrTruncatedHeader},
		{name: "bad magic", in: notWAL, want: wal.Report{SizeBytes: 32, Header: wal.Header{Magic: 0x377f0684}}, wantErr: wal.ErrNotWAL},
		{name: "sqlite database", in: append([]byte("SQLite format 3\x00"), make([]byte, 84)...),
			want: wal.Report{SizeBytes: 32, Header: wal.Header{Magic: 0x53514c69}}, wantErr: wal.ErrNotWAL},
		{name: "header only", in: hdr, want: wantPrefix(hdr, 0)},
		{name: "page size 1000", in: badPage, want: func() wal.Report {
			r := wantPrefix(badPage[:32], 0)
			r.SizeBytes, r.Empty = int64(len(badPage)), false
			r.BytesAfterLastCommit = 5000
			r.FirstInvalidFrame, r.InvalidReason = 1, wal.ReasonPageSize
			return r
		}()},
		{name: "page size 131072, header only", in: tooBig, want: func() wal.Report {
			r := wantPrefix(tooBig, 0)
			r.InvalidReason = wal.ReasonPageSize
			return r
		}()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := wal.Validate(bytes.NewReader(tt.in))
			if !errors.Is(err, tt.wantErr) {
				t.Errorf("Validate(%s) error = %v, want %v", tt.name, err, tt.wantErr)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Validate(%s) mismatch (-want +got):\n%s", tt.name, diff)
			}
		})
	}
}

func TestValidateReadError(t *testing.T) {
	boom := errors.New("boom")
	hdr := make(walBytes, wal.HeaderSize)
	be.PutUint32(hdr[0:], wal.MagicLittleEndian)
	be.PutUint32(hdr[8:], 512)
	for _, in := range []io.Reader{
		iotest.ErrReader(boom),
		io.MultiReader(bytes.NewReader(hdr), iotest.ErrReader(boom)),
		io.MultiReader(bytes.NewReader(hdr), bytes.NewReader(make([]byte, 600)), iotest.ErrReader(boom)),
	} {
		if _, err := wal.Validate(in); !errors.Is(err, boom) {
			t.Errorf("Validate(failing reader) error = %v, want %v", err, boom)
		}
	}
}

func TestValidateFile(t *testing.T) {
	snap := driverWAL(t, 4096, inserts(3, 100)...)
	path := filepath.Join(t.TempDir(), "x.db-wal")
	if err := os.WriteFile(path, snap.wal, 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := wal.ValidateFile(path)
	if err != nil {
		t.Fatalf("ValidateFile(%s): %v", path, err)
	}
	if diff := cmp.Diff(wantPrefix(snap.wal, snap.wal.frames()), got); diff != "" {
		t.Errorf("ValidateFile(%s) mismatch (-want +got):\n%s", path, diff)
	}
	if _, err := wal.ValidateFile(filepath.Join(t.TempDir(), "missing-wal")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("ValidateFile(missing) error = %v, want os.ErrNotExist", err)
	}
	notWAL := filepath.Join(t.TempDir(), "db")
	if err := os.WriteFile(notWAL, snap.db, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := wal.ValidateFile(notWAL); !errors.Is(err, wal.ErrNotWAL) {
		t.Errorf("ValidateFile(database file) error = %v, want ErrNotWAL", err)
	}
}

// TestValidateThreeFrames: three one-frame transactions written by Debian's
// sqlite3, frame 2 damaged in two ways. Either way SQLite keeps frame 1
// only and drops two committed transactions, which Validate must report.
func TestValidateThreeFrames(t *testing.T) {
	snap := cliWAL(t,
		"INSERT INTO t(b) VALUES (randomblob(100));",
		"INSERT INTO t(b) VALUES (randomblob(100));",
		"INSERT INTO t(b) VALUES (randomblob(100));",
	)
	base := snap.wal
	if c := base.commits(); base.frames() != 3 || !c[1] || !c[2] || !c[3] {
		t.Fatalf("sqlite3 WAL: %d frames, commit frames %v; want 3 commit frames", base.frames(), c)
	}
	checksum := base.clone()
	be.PutUint32(checksum.frame(2)[16:], 0) // first checksum word
	salt := base.clone()
	be.PutUint32(salt.frame(2)[8:], 0) // salt-1
	be.PutUint32(salt.frame(2)[12:], 0)
	for _, dc := range []damageCase{
		{name: "frame 2 checksum word zeroed", wal: checksum, discards: true,
			want: withBreak(wantPrefix(checksum, 1), 2, wal.ReasonChecksum, 2, 1, 1, 0)},
		{name: "frame 2 salts zeroed", wal: salt, discards: true,
			want: withBreak(wantPrefix(salt, 1), 2, wal.ReasonSalt, 2, 1, 1, staleCount(salt, 2))},
	} {
		t.Run(dc.name, func(t *testing.T) {
			checkCase(t, snap.db, dc)
			if v := sqliteView(t, snap.db, dc.wal); v.rows != v.baseRows+1 {
				t.Errorf("%s: SQLite sees %d rows, want %d (frame 1 only)", dc.name, v.rows, v.baseRows+1)
			}
		})
	}
}

// staleCount is 1 when frame i's salt-1 is older than the header's in
// serial-number order (a zeroed salt-1 is, for half of all headers), else 0.
func staleCount(w walBytes, i int) int {
	if d := be.Uint32(w[16:]) - be.Uint32(w.frame(i)[8:]); d != 0 && d < 1<<31 {
		return 1
	}
	return 0
}

// TestValidateTornLastTransaction: a writer that died while appending its
// last transaction leaves a torn frame and nothing that chains after it.
// SQLite drops the transaction, which never committed: Validate must not
// report discarded frames.
func TestValidateTornLastTransaction(t *testing.T) {
	// The last insert spills to overflow pages: a transaction of 3+ frames.
	snap := driverWAL(t, 4096, inserts(4, 100, 9000)...)
	w := snap.wal
	n, c := w.frames(), w.commits()
	j := lastCommit(c, n-1) + 1 // first frame of the last transaction
	if !c[n] || n-j < 2 {
		t.Fatalf("driver WAL: frames %d, commit frames %v; want a last transaction of 3 frames or more", n, c)
	}
	fs := w.frameSize()
	half := func(w walBytes, i int) { clear(w.frame(i)[wal.FrameHeaderSize+w.pageSize()/2:]) }

	cut := w[:wal.HeaderSize+j*fs].clone() // ends after frame j
	half(cut, j)
	zeroed := w.clone() // frame j torn, the rest of the transaction never written
	half(zeroed, j)
	clear(zeroed[wal.HeaderSize+j*fs:])
	cases := []damageCase{
		{name: "torn frame at the end", wal: cut,
			want: withBreak(wantPrefix(cut, j-1), j, wal.ReasonChecksum, 1, 0, 0, 0)},
		{name: "torn frame, zeros after", wal: zeroed,
			want: withBreak(wantPrefix(zeroed, j-1), j, wal.ReasonChecksum, n-j+1, 0, 0, 0)},
	}

	// A restarted WAL whose newest frame is torn: the older generation's
	// frames after it are stale, not lost.
	st, k := staleWAL(t)
	sw := st.wal.clone()
	half(sw, k)
	for _, dc := range cases {
		t.Run(dc.name, func(t *testing.T) { checkCase(t, snap.db, dc) })
	}
	t.Run("restarted, newest frame torn", func(t *testing.T) {
		dc := damageCase{name: "restarted torn", wal: sw,
			want: withBreak(wantPrefix(sw, k-1), k, wal.ReasonChecksum, sw.frames()-k+1, 0, 0, sw.frames()-k)}
		checkCase(t, st.db, dc)
		got, _ := wal.Validate(bytes.NewReader(sw))
		if !got.Stale || got.Discards() {
			t.Errorf("Validate(%s) = Stale %v, Discards %v; want Stale and no discards", dc.name, got.Stale, got.Discards())
		}
	})
}
