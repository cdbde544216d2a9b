package wal

import "encoding/binary"

// sumLE continues the WAL checksum (s0, s1) over b, reading the input as
// little-endian 32-bit words. It implements the loop of
// https://sqlite.org/fileformat2.html#walcksm for magic 0x377f0682. len(b)
// must be a multiple of 8; a shorter tail is ignored.
func sumLE(s0, s1 uint32, b []byte) (uint32, uint32) {
	for len(b) >= 32 {
		x := binary.LittleEndian.Uint64(b)
		s0 += uint32(x) + s1
		s1 += uint32(x>>32) + s0
		x = binary.LittleEndian.Uint64(b[8:])
		s0 += uint32(x) + s1
		s1 += uint32(x>>32) + s0
		x = binary.LittleEndian.Uint64(b[16:])
		s0 += uint32(x) + s1
		s1 += uint32(x>>32) + s0
		x = binary.LittleEndian.Uint64(b[24:])
		s0 += uint32(x) + s1
		s1 += uint32(x>>32) + s0
		b = b[32:]
	}
	for len(b) >= 8 {
		x := binary.LittleEndian.Uint64(b)
		s0 += uint32(x) + s1
		s1 += uint32(x>>32) + s0
		b = b[8:]
	}
	return s0, s1
}

// sumBE is sumLE for big-endian words (magic 0x377f0683).
func sumBE(s0, s1 uint32, b []byte) (uint32, uint32) {
	for len(b) >= 8 {
		x := binary.BigEndian.Uint64(b)
		s0 += uint32(x>>32) + s1
		s1 += uint32(x) + s0
		b = b[8:]
	}
	return s0, s1
}

// sum continues the checksum over b in the byte order chosen by bigEndian.
func sum(bigEndian bool, s0, s1 uint32, b []byte) (uint32, uint32) {
	if bigEndian {
		return sumBE(s0, s1, b)
	}
	return sumLE(s0, s1, b)
}

// seedMatrix is a 2x2 matrix over the integers modulo 2^32.
//
// The checksum step s0 += x0 + s1; s1 += x1 + s0 is affine in the starting
// value: after n word pairs, (s0, s1) = A^n·(seed0, seed1) + f(data), where
// A = [[1 1] [1 2]] and f(data) is the checksum of the same words started from
// (0, 0). The scan uses this to test one frame against several candidate
// starting values while reading its bytes once.
type seedMatrix struct{ a, b, c, d uint32 }

func (m seedMatrix) mul(n seedMatrix) seedMatrix {
	return seedMatrix{
		a: m.a*n.a + m.b*n.c, b: m.a*n.b + m.b*n.d,
		c: m.c*n.a + m.d*n.c, d: m.c*n.b + m.d*n.d,
	}
}

// apply returns m·(s0, s1).
func (m seedMatrix) apply(s0, s1 uint32) (uint32, uint32) {
	return m.a*s0 + m.b*s1, m.c*s0 + m.d*s1
}

// stepPower returns A^n for the checksum step matrix A.
func stepPower(n int) seedMatrix {
	r := seedMatrix{a: 1, d: 1}
	p := seedMatrix{a: 1, b: 1, c: 1, d: 2}
	for ; n > 0; n >>= 1 {
		if n&1 == 1 {
			r = r.mul(p)
		}
		p = p.mul(p)
	}
	return r
}

// sumPageLE continues the little-endian checksum (s0, s1) over page, whose
// length is a multiple of 16. It runs the two halves of the page as two
// independent chains in one loop (the second from (0, 0)) and joins them with
// half = A^(len(page)/16), see seedMatrix: twice the instruction-level
// parallelism of sumLE on the same result.
func sumPageLE(s0, s1 uint32, page []byte, half seedMatrix) (uint32, uint32) {
	n := len(page) / 2
	a, b := page[:n], page[n:]
	var t0, t1 uint32
	for len(a) >= 16 && len(b) >= 16 {
		x := binary.LittleEndian.Uint64(a)
		y := binary.LittleEndian.Uint64(b)
		s0 += uint32(x) + s1
		t0 += uint32(y) + t1
		s1 += uint32(x>>32) + s0
		t1 += uint32(y>>32) + t0
		x = binary.LittleEndian.Uint64(a[8:])
		y = binary.LittleEndian.Uint64(b[8:])
		s0 += uint32(x) + s1
		t0 += uint32(y) + t1
		s1 += uint32(x>>32) + s0
		t1 += uint32(y>>32) + t0
		a, b = a[16:], b[16:]
	}
	s0, s1 = sumLE(s0, s1, a)
	t0, t1 = sumLE(t0, t1, b)
	s0, s1 = half.apply(s0, s1)
	return s0 + t0, s1 + t1
}
