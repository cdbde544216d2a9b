package salvage_test

import (
	"encoding/binary"
	"testing"

	"github.com/preflight-sqlite/preflight/salvage"
)

// FuzzPage parses any bytes as a b-tree page, each cell, and each cell's
// local payload as a record, whole and partial: never a panic, never a
// read outside the page; a cell's local payload lies inside the page, and
// a record's fields are no more than its header's serial types.
func FuzzPage(f *testing.F) {
	leaf := make([]byte, 512)
	leaf[0] = 13
	binary.BigEndian.PutUint16(leaf[3:], 1)
	binary.BigEndian.PutUint16(leaf[5:], 500)
	binary.BigEndian.PutUint16(leaf[8:], 500)
	copy(leaf[500:], []byte{9, 7, 4, 1, 0x17, 7, 'h', 'e', 'l', 'l', 'o'}) // size 9, rowid 7, record (1 int, text "hello")
	f.Add(leaf, uint16(512))
	interior := make([]byte, 1024)
	interior[0] = 5
	binary.BigEndian.PutUint32(interior[8:], 3)
	binary.BigEndian.PutUint16(interior[3:], 0xffff) // a cell count that does not fit
	f.Add(interior, uint16(1024))
	f.Add([]byte{2, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 1, 0, 12}, uint16(480))
	f.Fuzz(func(t *testing.T, data []byte, usable uint16) {
		u := int(usable)
		for _, pgno := range []uint32{1, 2} {
			p, err := salvage.ParsePage(data, pgno, u)
			if err != nil {
				continue
			}
			for _, off := range p.Cells {
				c, err := salvage.ParseCell(data, off, p.Type, u)
				if err != nil {
					continue
				}
				if len(c.Local) > u {
					t.Fatalf("cell at %d: %d local bytes on a page of %d", off, len(c.Local), u)
				}
				for _, whole := range []bool{true, false} {
					vals, _, err := salvage.DecodeRecord(c.Local, whole, 1)
					if err == nil && len(vals) > len(c.Local) {
						t.Fatalf("record of %d bytes: %d fields", len(c.Local), len(vals))
					}
				}
			}
		}
		salvage.DecodeRecord(data, false, 2)
		salvage.DecodeRecord(data, true, 3)
	})
}
