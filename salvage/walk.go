package salvage

import (
	"context"
	"encoding/binary"
	"errors"
	"math"
	"strings"
)

// walker reads b-trees of a source, visiting every page at most once over
// all its walks (the seen bitmap): a page reached twice, from one tree or
// two, is a loop or a second reference, and is not read again.
type walker struct {
	ctx  context.Context
	src  *source
	seen []bool // by page number
	buf  []byte
	obuf []byte
}

func newWalker(ctx context.Context, src *source) *walker {
	w := &walker{ctx: ctx, src: src, seen: make([]bool, int(src.count)+1), buf: make([]byte, src.pageSize), obuf: make([]byte, src.pageSize)}
	if src.autoVac {
		// Pointer-map pages (section 1.8): page 2 and every
		// usable/5+1 pages after it. They hold no rows.
		for pg := uint64(2); pg <= uint64(src.count); pg += uint64(src.usable/5 + 1) {
			w.seen[pg] = true
		}
	}
	return w
}

// row is one record read from a b-tree: the page it was on, its rowid
// (table b-trees), its fields, and whether its payload was whole (an
// overflow chain that broke leaves it partial).
type row struct {
	pgno     uint32
	rowid    int64
	vals     []Value
	complete bool
}

// treeStats counts what a walk could not read.
type treeStats struct {
	pages      int // pages read
	badPages   int // reached but unreadable, missing, or reached twice
	badCells   int // cells that do not decode
	badPageNos []uint32
	gaps       []gap
}

// maxBadPageNos bounds the unreadable page numbers kept per tree, and
// maxGaps its rowid ranges under unreadable pages.
const (
	maxBadPageNos = 32
	maxGaps       = 4096
)

// gap is the rowids a table b-tree's unreadable page held: lo < rowid <=
// hi, as its parent's keys say (the whole range for the root).
type gap struct{ lo, hi int64 }

// lost records an unreadable page of the tree and the rowids below it.
func (st *treeStats) lost(pg uint32, lo, hi int64) {
	st.bad(pg)
	if len(st.gaps) < maxGaps {
		st.gaps = append(st.gaps, gap{lo, hi})
	}
}

func (st *treeStats) bad(pg uint32) {
	st.badPages++
	if len(st.badPageNos) < maxBadPageNos {
		st.badPageNos = append(st.badPageNos, pg)
	}
}

// tree walks the b-tree rooted at root depth-first (an explicit stack),
// calling fn for every record of a leaf (and of an index interior page,
// whose cells carry keys: a WITHOUT ROWID table's rows). It stops with
// ctx's error or fn's.
func (w *walker) tree(root uint32, fn func(row) error) (treeStats, error) {
	type item struct {
		pg     uint32
		lo, hi int64 // the rowids its parent gives it: lo < rowid <= hi
	}
	var st treeStats
	stack := []item{{root, math.MinInt64, math.MaxInt64}}
	for len(stack) > 0 {
		if err := w.ctx.Err(); err != nil {
			return st, context.Cause(w.ctx)
		}
		it := stack[len(stack)-1]
		pg := it.pg
		stack = stack[:len(stack)-1]
		if pg == 0 || pg > w.src.count || w.seen[pg] {
			st.bad(pg)
			continue
		}
		w.seen[pg] = true
		st.pages++
		if err := w.src.page(pg, w.buf); err != nil {
			st.lost(pg, it.lo, it.hi)
			continue
		}
		p, err := ParsePage(w.buf, pg, w.src.usable)
		if err != nil {
			st.lost(pg, it.lo, it.hi)
			continue
		}
		var kids []item
		lo := it.lo
		rows, err := w.cells(pg, p, &st, true, func(c Cell) {
			if p.Type == typeTableInterior {
				kids = append(kids, item{c.Child, lo, c.Rowid})
				lo = c.Rowid
				return
			}
			kids = append(kids, item{c.Child, math.MinInt64, math.MaxInt64})
		})
		if err != nil {
			return st, err
		}
		if p.Interior() {
			kids = append(kids, item{p.Right, lo, it.hi})
		}
		for _, r := range rows {
			if err := fn(r); err != nil {
				return st, err
			}
		}
		// Push in reverse so that children are visited left to right.
		for i := len(kids) - 1; i >= 0; i-- {
			stack = append(stack, kids[i])
		}
	}
	return st, nil
}

// cells decodes the cells of page p (in w.buf), calling child for each
// interior cell and returning the records. The records are copied out of
// w.buf, so the buffer can be reused.
// With lenient set (a page a b-tree reaches, not an orphan whose table is
// guessed from its records) a payload longer than its record is taken.
func (w *walker) cells(pg uint32, p *Page, st *treeStats, lenient bool, child func(Cell)) ([]row, error) {
	var rows []row
	used, bad := 0, st.badCells
	defer func() {
		// Cells no pointer names on a leaf are rows missing; on an
		// interior page, children the orphan pass reads.
		if !p.Interior() && st.badCells == bad && unnamed(w.buf, pg, used, w.src.usable) {
			st.badCells++
		}
	}()
	for _, off := range p.Cells {
		c, err := ParseCell(w.buf, off, p.Type, w.src.usable)
		if err != nil {
			st.badCells++
			continue
		}
		used += c.OnPage
		if p.Interior() {
			child(c)
		}
		if p.Type == typeTableInterior {
			continue
		}
		payload, whole := w.payload(c)
		vals, complete, err := DecodeRecord(payload, whole, w.src.enc)
		if err != nil && whole && lenient {
			// A payload longer than its record (a damaged size varint:
			// the record's own header still adds up) is the record and
			// some bytes after it, as SQLite's .recover reads it.
			if v, c, e := DecodeRecord(payload, false, w.src.enc); e == nil && c {
				vals, complete, err = v, c, nil
			}
		}
		if err != nil {
			st.badCells++
			continue
		}
		rows = append(rows, row{pgno: pg, rowid: c.Rowid, vals: vals, complete: complete && whole})
	}
	return rows, nil
}

// payload assembles the payload of c: its local part and its overflow
// chain (section 1.7), each overflow page read once (a page seen before,
// missing, unreadable or zeroed breaks the chain). whole reports that
// all c.Size bytes were read.
func (w *walker) payload(c Cell) (out []byte, whole bool) {
	out = append(make([]byte, 0, min(c.Size, 1<<20)), c.Local...)
	pg := c.Overflow
	room := uint64(w.src.usable - 4)
	for uint64(len(out)) < c.Size && pg != 0 {
		if pg > w.src.count || w.seen[pg] {
			return out, false
		}
		if err := w.src.page(pg, w.obuf); err != nil {
			return out, false
		}
		// An overflow page starts with the next page's number, whose
		// high byte is 0 below 2^24 pages: no b-tree page type. A page
		// that parses as one is another tree's, reached through a
		// damaged pointer: the chain is broken there, and the page is
		// left for its own walk.
		if _, err := ParsePage(w.obuf, pg, w.src.usable); err == nil && w.obuf[0] != 0 {
			return out, false
		}
		w.seen[pg] = true
		// A page of zeros (next pointer included) is a zeroed page, not
		// content, unless the content before it is zeros too (a
		// zeroblob): the last page of a chain zeroed would otherwise
		// pass, its next pointer being 0 as it should.
		if allZero(w.obuf) && (len(out) < 16 || !allZero(out[len(out)-16:])) {
			return out, false
		}
		take := min(room, c.Size-uint64(len(out)))
		out = append(out, w.obuf[4:4+take]...)
		pg = binary.BigEndian.Uint32(w.obuf)
	}
	return out, uint64(len(out)) == c.Size
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// freelist marks the freelist's trunk and leaf pages seen (section 1.5),
// so that the orphan scan does not bring deleted rows back.
func (w *walker) freelist(first uint32) {
	for pg := first; pg != 0 && pg <= w.src.count && !w.seen[pg]; {
		w.seen[pg] = true
		if err := w.src.page(pg, w.buf); err != nil {
			return
		}
		next := binary.BigEndian.Uint32(w.buf)
		n := binary.BigEndian.Uint32(w.buf[4:])
		for i := uint32(0); i < n && 8+4*int(i)+4 <= w.src.usable; i++ {
			if l := binary.BigEndian.Uint32(w.buf[8+4*i:]); l != 0 && l <= w.src.count {
				w.seen[l] = true
			}
		}
		pg = next
	}
}

// orphan reads page pg when no walk reached it: the records of a table or
// index leaf page, or nothing (ok false) when it is no leaf. An interior
// page is marked seen; its children are scanned on their own.
func (w *walker) orphan(pg uint32) (typ byte, rows []row, st treeStats, ok bool, err error) {
	if w.seen[pg] {
		return 0, nil, st, false, nil
	}
	if err := w.src.page(pg, w.buf); err != nil {
		if errors.Is(err, errMissing) {
			return 0, nil, st, false, nil
		}
		return 0, nil, st, false, nil
	}
	p, perr := ParsePage(w.buf, pg, w.src.usable)
	if perr != nil || len(p.Cells) == 0 {
		return 0, nil, st, false, nil
	}
	w.seen[pg] = true
	if p.Interior() && p.Type == typeTableInterior {
		return p.Type, nil, st, false, nil
	}
	rows, err = w.cells(pg, p, &st, false, func(Cell) {})
	return p.Type, rows, st, true, err
}

// schemaLeaves reads every page no walk reached that is a table leaf all
// of whose records are sqlite_schema rows (a leaf of the schema's b-tree
// whose parent, page 1, is damaged), marks those pages seen and returns
// their rows.
func (w *walker) schemaLeaves() ([]object, error) {
	var out []object
	for pg := uint32(2); pg <= w.src.count; pg++ {
		if pg%256 == 0 {
			if err := w.ctx.Err(); err != nil {
				return nil, err
			}
		}
		if w.seen[pg] || w.src.page(pg, w.buf) != nil {
			continue
		}
		p, err := ParsePage(w.buf, pg, w.src.usable)
		if err != nil || p.Type != typeTableLeaf || len(p.Cells) == 0 {
			continue
		}
		var st treeStats
		rows, err := w.cells(pg, p, &st, false, func(Cell) {})
		if err != nil || st.badCells > 0 || len(rows) == 0 {
			continue
		}
		var objs []object
		for _, r := range rows {
			o, ok := schemaObject(r.vals)
			if !ok || o.sql != "" && !strings.HasPrefix(strings.ToUpper(o.sql), "CREATE ") {
				objs = nil
				break
			}
			objs = append(objs, o)
		}
		if objs != nil {
			w.seen[pg] = true
			out = append(out, objs...)
		}
	}
	return out, nil
}
