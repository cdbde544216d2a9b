package bodylimit_test

import (
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/preflight-sqlite/preflight/internal/bodylimit"
)

var errBig = errors.New("too large")

func TestBound(t *testing.T) {
	for _, tc := range []struct {
		body    string
		max     int64
		wantErr error
	}{
		{"12345", 5, nil},     // exactly the bound reads in full
		{"1234", 5, nil},      // shorter
		{"123456", 5, errBig}, // one byte more
		{strings.Repeat("x", 1<<20), 1 << 10, errBig},
	} {
		got, err := io.ReadAll(bodylimit.New(io.NopCloser(strings.NewReader(tc.body)), tc.max, errBig))
		if !errors.Is(err, tc.wantErr) {
			t.Errorf("%d bytes, bound %d: err %v, want %v", len(tc.body), tc.max, err, tc.wantErr)
		}
		if tc.wantErr == nil && string(got) != tc.body {
			t.Errorf("%d bytes, bound %d: read %d bytes", len(tc.body), tc.max, len(got))
		}
		if int64(len(got)) > tc.max {
			t.Errorf("%d bytes, bound %d: read %d bytes, past the bound", len(tc.body), tc.max, len(got))
		}
	}
}
