package salvage

import (
	"encoding/binary"
	"errors"
	"math"
	"unicode/utf16"

	"github.com/preflight-sqlite/preflight/probe/sqlitefile"
)

// B-tree page types (https://sqlite.org/fileformat2.html section 1.6).
const (
	typeIndexInterior = 2
	typeTableInterior = 5
	typeIndexLeaf     = 10
	typeTableLeaf     = 13
)

// errBadPage says a page does not parse as a b-tree page.
var errBadPage = errors.New("not a b-tree page")

// Page is one b-tree page as parsed by ParsePage.
type Page struct {
	// Type is 2, 5, 10 or 13.
	Type byte
	// Right is the right-most child pointer of an interior page, 0 on a
	// leaf.
	Right uint32
	// Cells are the offsets of the cells in page order.
	Cells []int
}

// Interior reports whether p is an interior page.
func (p *Page) Interior() bool { return p.Type == typeIndexInterior || p.Type == typeTableInterior }

// ParsePage parses the b-tree page header of data (a whole page; page 1
// has its b-tree header at offset 100, after the database header) and its
// cell pointer array, checking that the cell count fits the page and every
// cell pointer lies in the cell content area below usable (the page size
// less reserved bytes). It never reads outside data.
func ParsePage(data []byte, pgno uint32, usable int) (*Page, error) {
	hdr := 0
	if pgno == 1 {
		hdr = 100
	}
	if usable > len(data) || usable < 480 || len(data) < hdr+12 {
		return nil, errBadPage
	}
	p := &Page{Type: data[hdr]}
	ptrs := hdr + 8
	switch p.Type {
	case typeIndexInterior, typeTableInterior:
		p.Right = binary.BigEndian.Uint32(data[hdr+8:])
		ptrs = hdr + 12
	case typeIndexLeaf, typeTableLeaf:
	default:
		return nil, errBadPage
	}
	n := int(binary.BigEndian.Uint16(data[hdr+3:]))
	if ptrs+2*n > usable {
		return nil, errBadPage
	}
	content := int(binary.BigEndian.Uint16(data[hdr+5:]))
	if content == 0 {
		content = 65536
	}
	if n > 0 && (content < ptrs+2*n || content > usable) {
		return nil, errBadPage
	}
	p.Cells = make([]int, n)
	for i := range n {
		off := int(binary.BigEndian.Uint16(data[ptrs+2*i:]))
		if off < content || off+4 > usable {
			return nil, errBadPage
		}
		p.Cells[i] = off
	}
	return p, nil
}

// Cell is one decoded cell of a b-tree page.
type Cell struct {
	// Child is the left child page of an interior cell, 0 on a leaf.
	Child uint32
	// Rowid is the integer key of a table cell.
	Rowid int64
	// Size is the whole payload's size in bytes; 0 for a table interior
	// cell, which has none.
	Size uint64
	// Local is the part of the payload stored on the page.
	Local []byte
	// Overflow is the first overflow page, 0 when the payload fits.
	Overflow uint32
	// OnPage is the bytes the cell takes on its page (at least 4, as
	// SQLite counts them).
	OnPage int
}

// ParseCell decodes the cell at off of a page of type typ (section 1.6:
// the payload size, rowid, local payload and overflow pointer). The
// local payload size follows the spill rules for usable.
func ParseCell(data []byte, off int, typ byte, usable int) (Cell, error) {
	var c Cell
	b := data[off:usable]
	if typ == typeTableInterior || typ == typeIndexInterior {
		if len(b) < 4 {
			return c, errBadPage
		}
		c.Child = binary.BigEndian.Uint32(b)
		b = b[4:]
	}
	if typ == typeTableInterior {
		v, n := sqlitefile.Varint(b)
		if n == 0 {
			return c, errBadPage
		}
		c.Rowid = int64(v)
		c.OnPage = max(4+n, 4)
		return c, nil
	}
	size, n := sqlitefile.Varint(b)
	if n == 0 || size > math.MaxInt32 {
		return c, errBadPage
	}
	b = b[n:]
	if typ == typeTableLeaf {
		v, n := sqlitefile.Varint(b)
		if n == 0 {
			return c, errBadPage
		}
		c.Rowid = int64(v)
		b = b[n:]
	}
	c.Size = size
	local := sqlitefile.LocalPayload(size, uint64(usable), typ == typeTableLeaf)
	if local < size {
		if uint64(len(b)) < local+4 {
			return c, errBadPage
		}
		c.Overflow = binary.BigEndian.Uint32(b[local:])
		if c.Overflow == 0 {
			return c, errBadPage
		}
	} else if uint64(len(b)) < local {
		return c, errBadPage
	}
	c.Local = b[:local]
	c.OnPage = usable - off - len(b) + int(local)
	if c.Overflow != 0 {
		c.OnPage += 4
	}
	c.OnPage = max(c.OnPage, 4)
	return c, nil
}

// unnamed reports whether the cell content area of page p (in data) is
// larger than its cells (used bytes), its freeblocks and its fragmented
// bytes add up to: space no cell pointer names, as SQLite's
// integrity_check counts it, where a lowered cell count lost cells. A
// freeblock chain that does not parse says nothing here.
func unnamed(data []byte, pgno uint32, used, usable int) bool {
	hdr := 0
	if pgno == 1 {
		hdr = 100
	}
	content := int(binary.BigEndian.Uint16(data[hdr+5:]))
	if content == 0 {
		content = 65536
	}
	if content > usable {
		return false
	}
	total := used + int(data[hdr+7])
	for fb, prev := int(binary.BigEndian.Uint16(data[hdr+1:])), 0; fb != 0; fb = int(binary.BigEndian.Uint16(data[fb:])) {
		if fb <= prev || fb < content || fb+4 > usable {
			return false
		}
		total += int(binary.BigEndian.Uint16(data[fb+2:]))
		prev = fb
	}
	return total < usable-content
}

// serialSize is the content size of serial type t (section 2.1).
func serialSize(t uint64) uint64 {
	switch {
	case t <= 4:
		return []uint64{0, 1, 2, 3, 4}[t]
	case t == 5:
		return 6
	case t == 6 || t == 7:
		return 8
	case t == 8 || t == 9 || t == 10 || t == 11:
		return 0
	}
	return (t - 12) / 2
}

// errBadRecord says a payload is not a valid record.
var errBadRecord = errors.New("not a valid record")

// maxFields bounds the columns of a record (SQLite's own limit is 32767).
const maxFields = 32767

// Value kinds of a decoded record field.
const (
	KindNull = iota
	KindInt
	KindReal
	KindText
	KindBlob
)

// Value is one field of a record: its kind and its Go value (nil, int64,
// float64, string for text, []byte for a blob).
type Value struct {
	Kind int
	V    any
}

// DecodeRecord decodes the record format (section 2.1) of payload. With
// whole set the payload is complete and the serial types' sizes must add
// up to its length exactly; otherwise (a broken overflow chain) the
// fields that lie wholly inside payload are decoded and the rest are
// returned as NULL with complete false. Text is decoded with enc (1
// UTF-8, 2 UTF-16le, 3 UTF-16be).
func DecodeRecord(payload []byte, whole bool, enc int) (vals []Value, complete bool, err error) {
	hlen, n := sqlitefile.Varint(payload)
	if n == 0 || hlen < uint64(n) || hlen > uint64(len(payload)) {
		return nil, false, errBadRecord
	}
	var types []uint64
	for p := n; p < int(hlen); {
		t, k := sqlitefile.Varint(payload[p:hlen])
		if k == 0 || t == 10 || t == 11 {
			return nil, false, errBadRecord
		}
		types = append(types, t)
		if len(types) > maxFields {
			return nil, false, errBadRecord
		}
		p += k
	}
	total := hlen
	for _, t := range types {
		total += serialSize(t)
		if total > math.MaxInt32 {
			return nil, false, errBadRecord
		}
	}
	if whole && total != uint64(len(payload)) {
		return nil, false, errBadRecord
	}
	complete = total <= uint64(len(payload))
	vals = make([]Value, len(types))
	p := hlen
	for i, t := range types {
		sz := serialSize(t)
		if p+sz > uint64(len(payload)) {
			break
		}
		vals[i] = decodeValue(t, payload[p:p+sz], enc)
		p += sz
	}
	return vals, complete, nil
}

func decodeValue(t uint64, b []byte, enc int) Value {
	switch {
	case t == 0:
		return Value{KindNull, nil}
	case t >= 1 && t <= 6:
		var v int64
		for _, c := range b {
			v = v<<8 | int64(c)
		}
		shift := 64 - 8*uint(len(b))
		v = v << shift >> shift
		return Value{KindInt, v}
	case t == 7:
		return Value{KindReal, math.Float64frombits(binary.BigEndian.Uint64(b))}
	case t == 8:
		return Value{KindInt, int64(0)}
	case t == 9:
		return Value{KindInt, int64(1)}
	case t%2 == 0:
		return Value{KindBlob, append(make([]byte, 0, len(b)), b...)} // empty, not nil: a nil blob binds as NULL
	}
	return Value{KindText, decodeText(b, enc)}
}

func decodeText(b []byte, enc int) string {
	if enc != 2 && enc != 3 {
		return string(b)
	}
	u := make([]uint16, len(b)/2)
	for i := range u {
		if enc == 2 {
			u[i] = binary.LittleEndian.Uint16(b[2*i:])
		} else {
			u[i] = binary.BigEndian.Uint16(b[2*i:])
		}
	}
	return string(utf16.Decode(u))
}
