package fakeengine_test

import (
	"encoding/json"
	"testing"

	"github.com/preflight-sqlite/preflight/internal/fakeengine"
)

func TestEmpties(t *testing.T) {
	for _, tc := range []struct {
		head, tail string
		n          int
	}{{"", "", 16 << 20}, {`{"items":`, `}`, 1000}, {"", "", 1001}, {"", "", 1002}} {
		b := fakeengine.Empties(tc.head, tc.tail, tc.n)
		if len(b) != tc.n || !json.Valid(b) {
			t.Errorf("Empties(%q, %q, %d) = %d bytes, valid %v, want %d bytes of JSON", tc.head, tc.tail, tc.n, len(b), json.Valid(b), tc.n)
		}
	}
}
