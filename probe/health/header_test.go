package health_test

import (
	"encoding/binary"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/preflight-sqlite/preflight/probe/health"
	"github.com/preflight-sqlite/preflight/probe/sqlitefile"
)

// realHeader returns the first 100 bytes and the size of a database made by
// SQLite 3.53.3 with 4096-byte pages.
func realHeader(t testing.TB) ([]byte, int64) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "h.db")
	makeDB(t, path, "delete", 200)
	b := readFile(t, path)
	return b[:sqlitefile.HeaderSize], int64(len(b))
}

func ids(ps []health.Problem) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.ID)
	}
	return out
}

func TestHeaderBytesProblems(t *testing.T) {
	good, size := realHeader(t)
	be := binary.BigEndian
	for _, tc := range []struct {
		name   string
		mutate func(b []byte)
		size   int64
		want   []string
	}{
		{"healthy", func([]byte) {}, size, nil},
		{"healthy, file longer than header says", func([]byte) {}, size + 4096, nil},
		{"size unknown", func([]byte) {}, -1, nil},
		{"page size 1000", func(b []byte) { be.PutUint16(b[16:], 1000) }, size, []string{health.ProblemPageSize}},
		{"page size 256", func(b []byte) { be.PutUint16(b[16:], 256) }, size, []string{health.ProblemPageSize}},
		{"page size 1 means 65536", func(b []byte) { be.PutUint16(b[16:], 1) }, 65536, []string{health.ProblemTruncated}},
		{"page size 1, file a multiple of 65536", func(b []byte) { be.PutUint16(b[16:], 1); be.PutUint32(b[28:], 2) }, 2 * 65536, nil},
		{"truncated by a page", func([]byte) {}, size - 4096, []string{health.ProblemTruncated}},
		{"not a page multiple", func([]byte) {}, size + 100, []string{health.ProblemTruncated}},
		{"short but in-header size invalid", func(b []byte) { be.PutUint32(b[92:], be.Uint32(b[24:])-1) }, size - 4096, []string{health.ProblemTorn}},
		{"reserved bytes", func(b []byte) { b[20] = 32 }, size, []string{health.ProblemReservedBytes}},
		{"reserved bytes leave under 480", func(b []byte) { be.PutUint16(b[16:], 512); b[20] = 64 }, 512 * 10, []string{health.ProblemReservedBytes, health.ProblemTorn}},
		{"text encoding 7", func(b []byte) { be.PutUint32(b[56:], 7) }, size, []string{health.ProblemTextEncoding}},
		{"write version 3", func(b []byte) { b[18] = 3 }, size, []string{health.ProblemTorn}},
		{"payload fractions", func(b []byte) { b[21], b[22], b[23] = 0, 0, 0 }, size, []string{health.ProblemTorn}},
		{"expansion bytes", func(b []byte) { b[80] = 1 }, size, []string{health.ProblemTorn}},
		{"schema format 9", func(b []byte) { be.PutUint32(b[44:], 9) }, size, []string{health.ProblemTorn}},
		{"version-valid-for mismatch", func(b []byte) { be.PutUint32(b[92:], 12345) }, size, []string{health.ProblemTorn}},
		{"pre-3.7.0 writer", func(b []byte) { be.PutUint32(b[92:], 0); be.PutUint32(b[96:], 0) }, size, nil},
	} {
		b := slices.Clone(good)
		tc.mutate(b)
		got, err := health.HeaderBytesProblems(b, tc.size)
		if err != nil {
			t.Errorf("%s: HeaderBytesProblems: %v", tc.name, err)
			continue
		}
		if diff := cmp.Diff(tc.want, ids(got)); diff != "" {
			t.Errorf("%s: HeaderBytesProblems IDs (-want +got):\n%s\nproblems: %+v", tc.name, diff, got)
		}
	}
	if _, err := health.HeaderBytesProblems([]byte("not sqlite"), 10); err == nil {
		t.Errorf("HeaderBytesProblems(not sqlite) = nil error")
	}
}

func TestHeaderProblemsDetails(t *testing.T) {
	h := sqlitefile.Header{PageSize: 4096, WriteVersion: 1, ReadVersion: 1, ReservedBytes: 8, ChangeCounter: 3, VersionValidFor: 3, DatabaseSizePages: 4, TextEncoding: 1, SQLiteVersion: 3053003}
	got := health.HeaderProblems(h, 4*4096)
	want := []health.Problem{{ID: health.ProblemReservedBytes, Detail: "8 reserved bytes per page; info: used by encryption/checksum extensions"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("HeaderProblems(%+v) (-want +got):\n%s", h, diff)
	}
}
