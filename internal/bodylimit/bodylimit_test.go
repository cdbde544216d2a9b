package bodylimit_test

import (
	"context"
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

func TestJSONShape(t *testing.T) {
	shape := bodylimit.Shape{Items: 3, Objects: 6, Values: 6, Depth: 4}
	for _, tc := range []struct {
		body    string
		wantErr error
	}{
		{`[{},{},{}]`, nil},
		{`[{},{},{},{}]`, bodylimit.ErrTooManyValues},                               // a fourth entry
		{`[ 1 , 2 , 3 ]`, nil},                                                      // whitespace, scalars
		{`[1,2,3,4]`, bodylimit.ErrTooManyValues},                                   // scalars count too
		{`["[,[,[,{", "\"],]", "\\"]`, nil},                                         // brackets and escapes in strings are text
		{`{"a":1,"b":2,"c":3,"d":4,"e":5,"f":6}`, nil},                              // members are not array entries
		{`{"a":1,"b":2,"c":3,"d":4,"e":5,"f":6,"g":7}`, bodylimit.ErrTooManyValues}, // a seventh value
		{`[[[[]]]]`, nil},
		{`[[[[[]]]]]`, bodylimit.ErrTooManyValues}, // five deep
		{`[[],[],[]]`, nil},
		{`[[],[],{},[]]`, bodylimit.ErrTooManyValues},                               // a fourth entry
		{`{"a":[],"b":[],"c":{},"d":[],"e":{},"f":[]}`, bodylimit.ErrTooManyValues}, // a seventh object or array
		{`{"items":[{"x":[]}]}`, nil},
		{`[]`, nil},
	} {
		r := bodylimit.NewJSON(context.Background(), io.NopCloser(strings.NewReader(tc.body)), 1<<20, errBig, shape)
		if _, err := io.ReadAll(r); !errors.Is(err, tc.wantErr) {
			t.Errorf("read %s with shape %+v: err %v, want %v", tc.body, shape, err, tc.wantErr)
		}
	}
}

// TestJSONDeadline: a read after the context is done fails with its error.
func TestJSONDeadline(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	r := bodylimit.NewJSON(ctx, io.NopCloser(strings.NewReader(`[{},{}]`)), 1<<20, errBig, bodylimit.PeerShape)
	cancel()
	if _, err := io.ReadAll(r); !errors.Is(err, context.Canceled) {
		t.Errorf("read after cancel: err %v, want context.Canceled", err)
	}
}
