package bodylimit_test

import (
	"bytes"
	"context"
	"encoding/json"
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
	// Per item: the values of the items array's elements count each alone.
	shape.ItemDepth = 2
	for _, tc := range []struct {
		body    string
		wantErr error
	}{
		{`{"items":[[1,2,3],[1,2,3],[1,2,3]]}`, nil},                                              // 12 values in all, 4 an item
		{`{"items":[[1,2,3],{"a":1,"b":2,"c":3,"d":4,"e":5,"f":6}]}`, bodylimit.ErrTooManyValues}, // 7 in the second
		{`{"items":[[1,2,3],[1,2,3],[1,2,3],[]]}`, bodylimit.ErrTooManyValues},                    // a fourth item
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

// FuzzJSONShape: on valid JSON the scanner refuses exactly the bodies
// whose shape, counted by encoding/json's tokens, is past the bound; on
// anything it never panics.
func FuzzJSONShape(f *testing.F) {
	for _, s := range []string{`[{},{},{}]`, `{"a":[1,"x\"]"],"b":{"c":null}}`, `[[[[[]]]]]`, `"[["`, `["\"[[[[", 1]`, `[1,2,3,4]`, `{}`, `[`} {
		f.Add([]byte(s))
	}
	shape := bodylimit.Shape{Items: 3, Objects: 5, Values: 8, Depth: 3}
	f.Fuzz(func(t *testing.T, b []byte) {
		_, err := io.ReadAll(bodylimit.NewJSON(context.Background(), io.NopCloser(bytes.NewReader(b)), 1<<20, errBig, shape))
		if !json.Valid(b) {
			return
		}
		if got, want := err != nil, past(t, b, shape); got != want {
			t.Errorf("read %q with shape %+v: err %v, want refused %v", b, shape, err, want)
		}
	})
}

// past walks b's tokens and reports whether its shape is past s.
func past(t *testing.T, b []byte, s bodylimit.Shape) bool {
	type open struct {
		array, wantKey bool
		n              int
	}
	var stack []open
	objects, values := 0, 0
	dec := json.NewDecoder(bytes.NewReader(b))
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return false
		}
		if err != nil {
			t.Fatalf("tokens of valid %q: %v", b, err)
		}
		d, delim := tok.(json.Delim)
		if delim && (d == ']' || d == '}') {
			stack = stack[:len(stack)-1]
			continue
		}
		if n := len(stack); n > 0 {
			top := &stack[n-1]
			if top.wantKey {
				top.wantKey = false
				continue
			}
			top.n++
			values++
			top.wantKey = !top.array
			if top.array && top.n > s.Items || values > s.Values {
				return true
			}
		}
		if delim {
			if objects++; objects > s.Objects || len(stack) == s.Depth {
				return true
			}
			stack = append(stack, open{array: d == '[', wantKey: d == '{'})
		}
	}
}
