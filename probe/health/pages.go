package health

import (
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/preflight-sqlite/preflight/probe/sqlitefile"
)

// Page-numbered messages of PRAGMA quick_check and integrity_check that
// carry no "Tree N" prefix (btree.c checkTreePage, checkRef; SQLite 3.44+),
// and the "Page N: ..." prefix older releases put on every message about
// page N of a b-tree.
var (
	rePageAt  = lazyRegexp(`^(?:Fragmentation of \d+ bytes reported as \d+ on page|Multiple uses for byte \d+ of page|2nd reference to page) (\d+)\b`)
	rePageOld = lazyRegexp(`^Page (\d+): `)
)

// messagePage returns the page a message names when the message is about
// one page and names no b-tree: "Fragmentation of F bytes reported as R on
// page N", "Multiple uses for byte B of page N", "2nd reference to page N"
// and "Page N: ..." other than "Page N: never used". It returns 0 otherwise.
func messagePage(m string) int64 {
	sm := rePageAt().FindStringSubmatch(m)
	if sm == nil && !strings.Contains(m, "never used") {
		sm = rePageOld().FindStringSubmatch(m)
	}
	if sm == nil {
		return 0
	}
	pg, err := strconv.ParseInt(sm[1], 10, 64)
	if err != nil {
		return 0
	}
	return pg
}

// PageReader returns page pgno (1-based) of a database: one page of bytes
// (the page size), or an error.
type PageReader func(pgno uint32) ([]byte, error)

// errPageBound says the walk stopped at its bound before finding every
// page asked for.
var errPageBound = errors.New("page walk bound reached")

// PageOwners walks the b-trees rooted at roots (table and index root pages
// from sqlite_schema), reading pages with read, and returns for each page
// of want the roots of the b-trees that reach it: through interior-page
// child pointers, or as an overflow page of a cell's payload
// (https://sqlite.org/fileformat2.html sections 1.6 and 1.7). A page
// reached from no root (freelist, pointer map, unused) is absent from the
// map; a page reached from two roots lists both. pageCount bounds the page
// numbers followed and the pages read; usable is the page size less the
// header's reserved bytes. Damaged pages are not descended into beyond what
// their bytes allow; the walk stops once every page of want is found. The
// error is the first read failure (or the bound reached); the map holds what was
// found until then.
func PageOwners(read PageReader, roots []int64, want []int64, pageCount uint32, usable int) (map[int64][]int64, error) {
	w := walker{read: read, count: pageCount, usable: usable, owner: map[uint32]int64{}, want: map[int64]bool{}, out: map[int64][]int64{}}
	for _, p := range want {
		w.want[p] = true
	}
	for _, r := range roots {
		if r <= 0 || r > int64(pageCount) {
			continue
		}
		if err := w.tree(r); err != nil {
			return w.out, err
		}
		if w.found == len(w.want) {
			break
		}
	}
	return w.out, nil
}

type walker struct {
	read   PageReader
	count  uint32
	usable int
	owner  map[uint32]int64 // page -> first root reaching it
	want   map[int64]bool
	out    map[int64][]int64
	found  int
	reads  uint32
}

// note records that root reaches pg; it reports whether pg was new.
func (w *walker) note(pg uint32, root int64) bool {
	first, seen := w.owner[pg]
	if seen && first == root {
		return false
	}
	if w.want[int64(pg)] {
		if len(w.out[int64(pg)]) == 0 {
			w.found++
		}
		w.out[int64(pg)] = append(w.out[int64(pg)], root)
	}
	if seen {
		return false
	}
	w.owner[pg] = root
	return true
}

// tree walks the b-tree rooted at root depth-first with an explicit stack.
func (w *walker) tree(root int64) error {
	stack := []uint32{uint32(root)}
	if !w.note(uint32(root), root) {
		return nil
	}
	for len(stack) > 0 {
		pg := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if w.reads >= w.count {
			return errPageBound
		}
		w.reads++
		data, err := w.read(pg)
		if err != nil {
			return fmt.Errorf("read page %d: %w", pg, err)
		}
		children, overflow := pageLinks(data, pg, w.usable)
		for _, c := range children {
			if c >= 1 && c <= w.count && w.note(c, root) {
				stack = append(stack, c)
			}
		}
		for _, o := range overflow {
			if err := w.chain(o, root); err != nil {
				return err
			}
		}
	}
	return nil
}

// chain follows an overflow chain from its first page.
func (w *walker) chain(pg uint32, root int64) error {
	for pg >= 1 && pg <= w.count && w.note(pg, root) {
		if w.reads >= w.count {
			return errPageBound
		}
		w.reads++
		data, err := w.read(pg)
		if err != nil {
			return fmt.Errorf("read page %d: %w", pg, err)
		}
		if len(data) < 4 {
			return nil
		}
		pg = binary.BigEndian.Uint32(data)
	}
	return nil
}

// pageLinks returns the child pages and first overflow pages named by
// b-tree page data (page number pgno: page 1 has its header at offset
// 100). A page of an unknown type, or a cell outside the page, yields what
// was read before it.
func pageLinks(data []byte, pgno uint32, usable int) (children, overflow []uint32) {
	hdr := 0
	if pgno == 1 {
		hdr = 100
	}
	if len(data) < hdr+12 || usable > len(data) || usable < 480 {
		return nil, nil
	}
	typ := data[hdr]
	interior := typ == 2 || typ == 5
	if !interior && typ != 10 && typ != 13 {
		return nil, nil
	}
	n := int(binary.BigEndian.Uint16(data[hdr+3:]))
	ptrs := hdr + 8
	if interior {
		children = append(children, binary.BigEndian.Uint32(data[hdr+8:]))
		ptrs = hdr + 12
	}
	for i := 0; i < n && ptrs+2*i+2 <= len(data); i++ {
		off := int(binary.BigEndian.Uint16(data[ptrs+2*i:]))
		if off < ptrs || off+4 > usable {
			continue
		}
		cell := data[off:usable]
		if interior {
			children = append(children, binary.BigEndian.Uint32(cell))
			if typ == 5 {
				continue
			}
			cell = cell[4:]
		}
		if o, ok := overflowPage(cell, typ, usable); ok {
			overflow = append(overflow, o)
		}
	}
	return children, overflow
}

// overflowPage returns the first overflow page of a cell of a type 2, 10 or
// 13 page (cell starts at the payload-size varint), per fileformat2.html
// section 1.6.
func overflowPage(cell []byte, typ byte, usable int) (uint32, bool) {
	p, n := sqlitefile.Varint(cell)
	if n == 0 {
		return 0, false
	}
	cell = cell[n:]
	if typ == 13 { // skip the rowid
		_, n = sqlitefile.Varint(cell)
		cell = cell[n:]
	}
	local := sqlitefile.LocalPayload(p, uint64(usable), typ == 13)
	if local == p {
		return 0, false
	}
	if uint64(len(cell)) < local+4 {
		return 0, false
	}
	return binary.BigEndian.Uint32(cell[local:]), true
}

// dbPageReader reads pages through SQLite's sqlite_dbpage virtual table on
// conn (https://sqlite.org/dbpage.html): the pages as the connection sees
// them, WAL frames included, without decoding them as b-trees. It also
// returns the page count and usable page size.
func dbPageReader(ctx context.Context, conn *sql.Conn) (PageReader, uint32, int, error) {
	var count, size, reserved int64
	if err := conn.QueryRowContext(ctx, "PRAGMA page_count").Scan(&count); err != nil {
		return nil, 0, 0, fmt.Errorf("page count: %w", err)
	}
	if err := conn.QueryRowContext(ctx, "PRAGMA page_size").Scan(&size); err != nil {
		return nil, 0, 0, fmt.Errorf("page size: %w", err)
	}
	p1, err := readDBPage(ctx, conn, 1)
	if err != nil {
		return nil, 0, 0, err
	}
	if len(p1) > 20 {
		reserved = int64(p1[20])
	}
	read := func(pgno uint32) ([]byte, error) { return readDBPage(ctx, conn, pgno) }
	return read, uint32(min(count, 1<<31)), int(size - reserved), nil
}

func readDBPage(ctx context.Context, conn *sql.Conn, pgno uint32) ([]byte, error) {
	var b []byte
	if err := conn.QueryRowContext(ctx, "SELECT data FROM sqlite_dbpage WHERE pgno = ?", pgno).Scan(&b); err != nil {
		return nil, fmt.Errorf("read page %d: %w", pgno, err)
	}
	return b, nil
}
