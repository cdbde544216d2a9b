package bodylimit

import (
	"context"
	"errors"
	"fmt"
	"io"
)

// ErrTooManyValues is returned (wrapped) by a JSON reader whose body holds
// more values than its Shape allows.
var ErrTooManyValues = errors.New("JSON answer holds too many values")

// Shape bounds what one JSON body can make a decoder build. A body far
// under the byte bound can still decode into millions of structs
// (16 MiB of [{},{},...] is 5.6 million empty objects, each a struct of a
// few hundred bytes once decoded): the counts bound the decoded memory and
// the time spent decoding it, whatever the types.
type Shape struct {
	// Items is the most elements one array may hold (a list answer's
	// entries, one container's mounts).
	Items int
	// Objects is the most objects and arrays the whole body may hold.
	Objects int
	// Values is the most values the whole body may hold: array elements
	// and object members, at any depth.
	Values int
	// Depth is the most arrays and objects open at once.
	Depth int
	// ItemDepth, when above zero, makes Objects and Values bounds of each
	// element of an array that many levels deep instead of the whole
	// body's: a Kubernetes list page (2: each of its items), whose items
	// are decoded and let go one at a time.
	ItemDepth int
}

// PeerShape is the Shape of every Docker and Kubernetes answer preflight
// reads: 10,000 entries in one list, 65,536 objects and arrays, 262,144
// values, 100 levels deep. About 3,000 compose containers (some 80 values
// each: labels, mounts, ports, networks) or a Kubernetes page of 250 pods
// with their managed fields are inside it; the worst it admits (262,144
// distinct labels) decodes to about 30 MiB in about 0.3 s.
var PeerShape = Shape{Items: 10_000, Objects: 1 << 16, Values: 1 << 18, Depth: 100}

// JSONReader is a ReadCloser bounded in bytes (as ReadCloser) that also
// scans the JSON it passes on and fails the read that crosses its Shape,
// or the first read after ctx is done. A json.Decoder reads a whole value
// before it decodes any of it, so a body past the shape fails before a
// single struct is built.
type JSONReader struct {
	b     *ReadCloser
	ctx   context.Context
	shape Shape
	err   error // sticky: the first failure

	inString, escaped bool
	// stack holds, per open array or object, its element count and
	// whether a value may start next (after '[', ',' in an array).
	stack           []level
	objects, values int
}

type level struct {
	array   bool
	pending bool
	n       int
}

// NewJSON returns rc bounded to max bytes (a read past it returns errBytes)
// and to shape, checking ctx on every read.
func NewJSON(ctx context.Context, rc io.ReadCloser, max int64, errBytes error, shape Shape) *JSONReader {
	return &JSONReader{b: New(rc, max, errBytes), ctx: ctx, shape: shape}
}

func (j *JSONReader) Read(p []byte) (int, error) {
	if j.err != nil {
		return 0, j.err
	}
	if err := j.ctx.Err(); err != nil {
		j.err = fmt.Errorf("read answer: %w", err)
		return 0, j.err
	}
	n, err := j.b.Read(p)
	if serr := j.scan(p[:n]); serr != nil {
		j.err = serr
		return 0, serr
	}
	return n, err
}

// Close closes the underlying body.
func (j *JSONReader) Close() error { return j.b.Close() }

// scan follows the structure of b: strings (with their escapes) are
// skipped, brackets push and pop a level, and a value is counted where it
// starts: after '[' or ',' in an array, at ':' in an object. It does not
// validate; the decoder does.
func (j *JSONReader) scan(b []byte) error {
	for _, c := range b {
		if j.inString {
			switch {
			case j.escaped:
				j.escaped = false
			case c == '\\':
				j.escaped = true
			case c == '"':
				j.inString = false
			}
			continue
		}
		switch c {
		case ' ', '\t', '\r', '\n':
			continue
		case ']', '}':
			if len(j.stack) > 0 {
				j.stack = j.stack[:len(j.stack)-1]
			}
			continue
		case ',':
			if top := j.top(); top != nil && top.array {
				top.pending = true
			}
			continue
		case ':':
			if err := j.count(); err != nil {
				return err
			}
			continue
		}
		if top := j.top(); top != nil && top.array && top.pending {
			top.pending = false
			if err := j.count(); err != nil {
				return err
			}
		}
		switch c {
		case '"':
			j.inString = true
		case '[', '{':
			if j.objects++; j.objects > j.shape.Objects {
				return fmt.Errorf("more than %d objects and arrays: %w", j.shape.Objects, ErrTooManyValues)
			}
			if len(j.stack) == j.shape.Depth {
				return fmt.Errorf("more than %d levels deep: %w", j.shape.Depth, ErrTooManyValues)
			}
			j.stack = append(j.stack, level{array: c == '[', pending: c == '['})
		}
	}
	return nil
}

func (j *JSONReader) top() *level {
	if len(j.stack) == 0 {
		return nil
	}
	return &j.stack[len(j.stack)-1]
}

// count counts one value in the innermost array or object.
func (j *JSONReader) count() error {
	top := j.top()
	if top == nil {
		return nil
	}
	if top.array && len(j.stack) == j.shape.ItemDepth {
		j.objects, j.values = 0, 0 // a new item
	}
	top.n++
	if top.array && top.n > j.shape.Items {
		return fmt.Errorf("an array of more than %d entries: %w", j.shape.Items, ErrTooManyValues)
	}
	if j.values++; j.values > j.shape.Values {
		return fmt.Errorf("more than %d values: %w", j.shape.Values, ErrTooManyValues)
	}
	return nil
}
