package sqlitefile

// Varint decodes the SQLite varint (big-endian, 1 to 9 bytes, the ninth
// contributing 8 bits; https://sqlite.org/fileformat2.html#varint) at the
// start of b and returns it and its length, or 0, 0 when b ends inside
// it.
func Varint(b []byte) (uint64, int) {
	var v uint64
	for i := 0; i < len(b) && i < 9; i++ {
		if i == 8 {
			return v<<8 | uint64(b[i]), 9
		}
		v = v<<7 | uint64(b[i]&0x7f)
		if b[i]&0x80 == 0 {
			return v, i + 1
		}
	}
	return 0, 0
}

// LocalPayload is how many bytes of a cell's payload of size bytes are
// stored on its b-tree page, the rest going to overflow pages, for a page
// of usable bytes (the page size less the reserved bytes): the spill rule
// of https://sqlite.org/fileformat2.html#b_tree_pages, with tableLeaf for
// a table b-tree leaf cell (X = U-35) and otherwise an index cell (X =
// ((U-12)*64/255)-23).
func LocalPayload(size, usable uint64, tableLeaf bool) uint64 {
	x := (usable-12)*64/255 - 23
	if tableLeaf {
		x = usable - 35
	}
	if size <= x {
		return size
	}
	m := (usable-12)*32/255 - 23
	local := m + (size-m)%(usable-4)
	if local > x {
		local = m
	}
	return local
}
