package rawfile

import (
	"errors"
	"io"
	"os"
)

// CopyData writes the regions of in's first size bytes that hold data
// (NextData) to the same offsets of out, len(buf) bytes at a time, so
// that a hole stays a hole (the caller truncates out to the length it
// wants). step (nil: none) is called with each chunk read, and its
// offset, before the chunk is written; an error from it stops the copy
// and is returned. Chunks come in order of offset; what lies between
// them is a hole, read as zeros. It returns where the copy ended: size,
// or less when in was shorter.
func CopyData(in, out *os.File, size int64, buf []byte, step func(off int64, data []byte) error) (int64, error) {
	for off := int64(0); off < size; {
		start, end, err := NextData(in, off, size)
		if errors.Is(err, io.EOF) {
			return size, nil
		}
		if err != nil {
			return off, err
		}
		for start < end {
			n := min(end-start, int64(len(buf)))
			r, err := in.ReadAt(buf[:n], start)
			if r > 0 {
				if step != nil {
					if err := step(start, buf[:r]); err != nil {
						return start, err
					}
				}
				if _, werr := out.WriteAt(buf[:r], start); werr != nil {
					return start, werr
				}
				start += int64(r)
			}
			if errors.Is(err, io.EOF) {
				return start, nil // shorter than it was: copied what there is
			}
			if err != nil {
				return start, err
			}
		}
		off = end
	}
	return size, nil
}
