// Package wal validates a SQLite write-ahead log (the "-wal" file) without
// opening the database: it replays the frame checks of SQLite's WAL recovery
// (https://sqlite.org/fileformat2.html#walformat) over a stream, and looks past
// the point where recovery would stop to tell damage, interleaved writers and
// harmless leftovers of an older WAL generation apart.
//
// Validate reads its input once, front to back, with a fixed 1 MiB read buffer
// and no per-frame allocation, so its memory use does not depend on the size
// of the log.
package wal

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"github.com/preflight-sqlite/preflight/internal/rawfile"
	"io"
	"sync"
)

// HeaderSize is the size of the WAL header in bytes.
const HeaderSize = 32

// FrameHeaderSize is the size of a frame header in bytes; the page data
// (Header.PageSize bytes) follows it.
const FrameHeaderSize = 24

// Magic numbers of the WAL header. The low bit selects the byte order of the
// 32-bit words the checksums are computed over: 0x377f0683 big-endian,
// 0x377f0682 little-endian (https://sqlite.org/fileformat2.html#walcksm).
const (
	MagicLittleEndian = 0x377f0682
	MagicBigEndian    = 0x377f0683
)

// FormatVersion is the only WAL format version SQLite writes and reads.
const FormatVersion = 3007000

// Values of Report.InvalidReason.
const (
	// ReasonHeaderChecksum: the header checksum does not match bytes 0..23 of
	// the header. SQLite ignores the whole log.
	ReasonHeaderChecksum = "header checksum mismatch"
	// ReasonPageSize: the header page size is not a power of two between 512
	// and 65536. SQLite ignores the whole log; frames cannot be located.
	ReasonPageSize = "invalid page size"
	// ReasonVersion: the header checksum is valid but the format version is
	// not 3007000. SQLite refuses to open the database (SQLITE_CANTOPEN).
	ReasonVersion = "unsupported format version"
	// ReasonSalt: the frame's salts differ from the header's.
	ReasonSalt = "salt mismatch"
	// ReasonPageNumber: the frame's page number is 0.
	ReasonPageNumber = "zero page number"
	// ReasonChecksum: the frame's cumulative checksum does not match.
	ReasonChecksum = "checksum mismatch"
	// ReasonTruncated: the log ends inside the frame.
	ReasonTruncated = "truncated frame"
)

// ErrNotWAL is returned when the first 4 bytes are not a WAL magic number.
var ErrNotWAL = errors.New("not a WAL file")

// ErrTruncatedHeader is returned when the input holds 1 to 31 bytes.
var ErrTruncatedHeader = errors.New("truncated WAL header")

// readBufferSize is the read buffer of Validate. It must hold a whole frame
// of the largest page size (65536 + 24 bytes).
const readBufferSize = 1 << 20

// readers recycles read buffers between calls of Validate.
var readers = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, readBufferSize) }}

// chainWindow is how many preceding frames' stored checksums a frame after
// the break is checked against (see Report.ValidLookingAfter).
const chainWindow = 16

// Header is the decoded 32-byte WAL header. All fields are stored big-endian
// in the file, whatever the checksum byte order.
type Header struct {
	// Magic is 0x377f0682 or 0x377f0683.
	Magic uint32 `json:"magic"`
	// BigEndianChecksum reports magic 0x377f0683: checksums are computed over
	// big-endian words.
	BigEndianChecksum bool `json:"big_endian_checksum"`
	// FormatVersion is 3007000 in every WAL SQLite writes.
	FormatVersion uint32 `json:"format_version"`
	// PageSize is the database page size in bytes, stored as is (65536 fits).
	// It is reported even when invalid; see ReasonPageSize.
	PageSize int `json:"page_size"`
	// CheckpointSeq is the checkpoint sequence number.
	CheckpointSeq uint32 `json:"checkpoint_seq"`
	// Salt1 is incremented each time the log is restarted; Salt2 is random.
	// A frame belongs to this generation only if it carries both.
	Salt1 uint32 `json:"salt1"`
	Salt2 uint32 `json:"salt2"`
	// Checksum1 and Checksum2 are the stored header checksum.
	Checksum1 uint32 `json:"checksum1"`
	Checksum2 uint32 `json:"checksum2"`
	// ChecksumValid reports whether the stored checksum matches the one
	// computed over header bytes 0..23. SQLite ignores a log whose header
	// checksum is wrong.
	ChecksumValid bool `json:"checksum_valid"`
}

// Report is what Validate learned about a WAL. Frame indexes are 1-based, as
// in SQLite. "The break" is the first frame SQLite's recovery rejects (see
// FirstInvalidFrame); recovery replays nothing from the break on.
//
// The frames at or after the break are classified as follows, each at most
// once: ValidLookingAfter (current salts, chained checksum), StaleFrames
// (older salt-1) and the rest (garbage, zero page numbers, current salts with
// no matching chain, or salts of no older generation), so
// ValidLookingAfter+StaleFrames <= FramesAfterBreak.
type Report struct {
	Header Header `json:"header"`
	// SizeBytes is the number of bytes read, i.e. the size of the log.
	SizeBytes int64 `json:"size_bytes"`
	// ValidFrames is the number of frames in the valid prefix: frames 1..N
	// whose salts match the header, whose page number is not 0 and whose
	// cumulative checksum matches. SQLite replays only the committed part of
	// it (frames 1..LastCommitFrame).
	ValidFrames int `json:"valid_frames"`
	// CommittedTxns is the number of commit frames (non-zero "database size
	// after commit" field) in the valid prefix: the transactions SQLite keeps.
	CommittedTxns int `json:"committed_transactions"`
	// LastCommitFrame is the index of the last commit frame in the valid
	// prefix, 0 if none. It is the mxFrame SQLite's recovery arrives at.
	LastCommitFrame int `json:"last_commit_frame"`
	// DBSizePages is the database size in pages recorded by frame
	// LastCommitFrame (the size of the database after a checkpoint), 0 if
	// there is no commit frame.
	DBSizePages uint32 `json:"db_size_pages"`
	// Page1Frame is the last frame at or before LastCommitFrame that holds
	// page 1, whose first 100 bytes are the database header; 0 if none.
	// SQLite reads page 1 from that frame, not from the database file, as
	// long as the log is there, and a checkpoint writes it back.
	Page1Frame int `json:"page1_frame,omitempty"`
	// BytesAfterLastCommit is SizeBytes minus the end offset of frame
	// LastCommitFrame (or of the header when LastCommitFrame is 0): the bytes
	// SQLite ignores. 0 for an empty log.
	BytesAfterLastCommit int64 `json:"bytes_after_last_commit"`
	// UncommittedTail is ValidFrames - LastCommitFrame: valid frames of a
	// transaction that never committed (or whose commit frame is broken).
	UncommittedTail int `json:"uncommitted_tail_frames"`
	// FirstInvalidFrame is the index of the break: the first frame that fails
	// a check, including a partial frame at the end of the log (then
	// InvalidReason is ReasonTruncated, or ReasonSalt if its complete frame
	// header carries other salts). It is 1 when the header is unusable and the
	// log holds frames. 0 if every frame is valid.
	FirstInvalidFrame int `json:"first_invalid_frame,omitempty"`
	// InvalidReason is one of the Reason constants: why the header or frame
	// FirstInvalidFrame was rejected. The header reasons are reported even
	// when the log has no frames. Empty if nothing was rejected.
	InvalidReason string `json:"invalid_reason,omitempty"`
	// FramesAfterBreak is the number of frames from FirstInvalidFrame to the
	// end of the log, both included, counting a partial frame at the end.
	FramesAfterBreak int `json:"frames_after_break"`
	// ValidLookingAfter counts frames at or after the break that carry the
	// header's salts, have a non-zero page number, and whose checksum matches
	// when the chain is restarted from a nearby point: the stored header
	// checksum, the computed header checksum, or the stored checksum of one of
	// the 16 frames before it (whatever those frames are), or the chain
	// carried on over the bytes of the frames since the last frame that
	// chained (starting with the valid prefix's chain over the break frame).
	// A frame damaged in place breaks only itself: when its page or frame
	// header changed, the frames a writer appended after it still chain to
	// its stored checksum; when its stored checksum changed, they chain to
	// the carried one. Either way they are counted here. Frames of a second writer that
	// interleaved with the first in the same generation chain to an earlier
	// frame or the header and are counted too. A partial frame is never
	// counted.
	ValidLookingAfter int `json:"valid_looking_frames_after_break"`
	// CommitsAfterBreak counts the commit frames among ValidLookingAfter:
	// transactions that were committed to the log and that SQLite's recovery
	// will silently discard.
	CommitsAfterBreak int `json:"commits_after_break"`
	// StaleFrames counts frames at or after the break (a partial one with a
	// complete frame header included) with a non-zero page number whose
	// salt-1 is older than the header's (serial-number order: 1 to 2^31-1
	// behind). After a checkpoint, the next writer restarts the log from
	// frame 1 with salt-1 incremented and leaves the older frames beyond the
	// new ones in place.
	StaleFrames int `json:"stale_frames"`
	// Stale reports StaleFrames > 0 and ValidLookingAfter == 0: what follows
	// the break is left over from an older generation of the log, which
	// SQLite ignores by design. Not corruption.
	Stale bool `json:"stale"`
	// Empty reports a log without a single frame byte: zero length, or the
	// header alone.
	Empty bool `json:"empty"`
}

// Discards reports whether frames that look valid and carry the current
// salts follow the break: data a writer put in this generation of the log
// that SQLite's recovery will silently drop. CommitsAfterBreak > 0 makes it
// certain that whole committed transactions are lost; without commit frames
// the dropped frames may belong to a transaction that never committed.
// Leftovers of an older generation (Stale) do not count.
func (r Report) Discards() bool {
	return r.ValidLookingAfter > 0
}

// ValidateFile validates the WAL file at path; see Validate.
//
// Closing a file drops the POSIX locks the process holds on it, including
// SQLite's (https://sqlite.org/howtocorrupt.html#posix_close_bug): call this
// before the process opens the database with SQLite, or from another process.
func ValidateFile(path string) (Report, error) {
	f, err := rawfile.Open(path, true)
	if err != nil {
		return Report{}, fmt.Errorf("open wal: %w", err)
	}
	defer f.Close()
	rep, err := Validate(f)
	if err != nil {
		return rep, fmt.Errorf("validate %s: %w", path, err)
	}
	return rep, nil
}

// Validate reads a WAL from r once, to the end, and reports which frames
// SQLite's recovery would replay and what lies beyond the first rejected frame
// (https://sqlite.org/fileformat2.html#walformat: "WAL File Format",
// "Checksum Algorithm", "WAL Reset"; frame checks as in SQLite's wal.c
// walIndexRecover and walDecodeFrame).
//
// A zero-length input yields Report{Empty: true} and a nil error. An input of
// 1 to 31 bytes yields ErrTruncatedHeader, a wrong magic number ErrNotWAL
// (both wrapped; test with errors.Is), a read error the error wrapped. An
// invalid page size, header checksum or format version is not an error: it is
// reported in InvalidReason, as SQLite ignores such a log rather than failing.
// The returned Report is filled as far as the input was read.
//
// Memory: one 1 MiB read buffer, recycled between calls; frames are checked
// in place. Validate is safe for concurrent use.
func Validate(r io.Reader) (Report, error) {
	br := readers.Get().(*bufio.Reader)
	br.Reset(r)
	defer func() {
		br.Reset(nil)
		readers.Put(br)
	}()
	var rep Report
	hb, err := br.Peek(HeaderSize)
	rep.SizeBytes = int64(len(hb))
	if len(hb) < HeaderSize {
		switch {
		case err != io.EOF:
			return rep, fmt.Errorf("read wal header: %w", err)
		case len(hb) == 0:
			rep.Empty = true
			return rep, nil
		default:
			return rep, fmt.Errorf("%w: %d bytes", ErrTruncatedHeader, len(hb))
		}
	}
	h := &rep.Header
	c0, c1, err := decodeHeader(h, hb)
	if err != nil {
		return rep, err
	}
	if _, err := br.Discard(HeaderSize); err != nil {
		return rep, fmt.Errorf("read wal header: %w", err)
	}

	// The order of the header checks follows SQLite's walIndexRecover.
	pageSize := uint32(h.PageSize)
	if pageSize < 512 || pageSize > 65536 || pageSize&(pageSize-1) != 0 {
		return rep, skipUnlocatable(&rep, br)
	}
	s := scan{
		rep:       &rep,
		bigEndian: h.BigEndianChecksum,
		frameSize: int(pageSize) + FrameHeaderSize,
		step:      stepPower(1 + int(pageSize)/8),
		half:      stepPower(int(pageSize) / 16),
		s0:        c0,
		s1:        c1,
		hdr:       [2][2]uint32{{h.Checksum1, h.Checksum2}, {c0, c1}},
	}
	switch {
	case !h.ChecksumValid:
		s.headerReason = ReasonHeaderChecksum
	case h.FormatVersion != FormatVersion:
		s.headerReason = ReasonVersion
	}
	rep.InvalidReason = s.headerReason
	err = s.run(br)
	rep.Empty = rep.SizeBytes == HeaderSize
	end := int64(HeaderSize) + int64(rep.LastCommitFrame)*int64(s.frameSize)
	rep.BytesAfterLastCommit = rep.SizeBytes - end
	rep.UncommittedTail = rep.ValidFrames - rep.LastCommitFrame
	rep.Stale = rep.StaleFrames > 0 && rep.ValidLookingAfter == 0
	return rep, err
}

// decodeHeader fills h from hb, the 32 bytes of a WAL header
// (https://sqlite.org/fileformat2.html#walformat), and returns the checksum
// computed over bytes 0..23. A magic number that is not a WAL's is
// ErrNotWAL (wrapped), with only h.Magic set.
func decodeHeader(h *Header, hb []byte) (c0, c1 uint32, err error) {
	h.Magic = binary.BigEndian.Uint32(hb[0:])
	if h.Magic != MagicLittleEndian && h.Magic != MagicBigEndian {
		return 0, 0, fmt.Errorf("%w: magic 0x%08x", ErrNotWAL, h.Magic)
	}
	h.BigEndianChecksum = h.Magic == MagicBigEndian
	h.FormatVersion = binary.BigEndian.Uint32(hb[4:])
	h.PageSize = int(binary.BigEndian.Uint32(hb[8:]))
	h.CheckpointSeq = binary.BigEndian.Uint32(hb[12:])
	h.Salt1 = binary.BigEndian.Uint32(hb[16:])
	h.Salt2 = binary.BigEndian.Uint32(hb[20:])
	h.Checksum1 = binary.BigEndian.Uint32(hb[24:])
	h.Checksum2 = binary.BigEndian.Uint32(hb[28:])
	c0, c1 = sum(h.BigEndianChecksum, 0, 0, hb[:24])
	h.ChecksumValid = c0 == h.Checksum1 && c1 == h.Checksum2
	return c0, c1, nil
}

// skipUnlocatable reads the rest of a log whose header page size is
// invalid, so that no frame can be located: rep gets ReasonPageSize, the
// size, and every byte after the header as lying beyond the last commit.
// It returns a read error, wrapped.
func skipUnlocatable(rep *Report, br *bufio.Reader) error {
	rep.InvalidReason = ReasonPageSize
	n, err := io.Copy(io.Discard, br)
	rep.SizeBytes += n
	rep.Empty = rep.SizeBytes == HeaderSize
	if !rep.Empty {
		rep.FirstInvalidFrame = 1
	}
	rep.BytesAfterLastCommit = rep.SizeBytes - HeaderSize
	if err != nil {
		return fmt.Errorf("read wal: %w", err)
	}
	return nil
}

// scan is the state of the frame loop.
type scan struct {
	rep          *Report
	bigEndian    bool
	frameSize    int
	step         seedMatrix // A^(frame words/2): see seedMatrix
	half         seedMatrix // A^(page words/4), for sumPageLE
	headerReason string     // non-empty: the header is unusable, every frame is after the break
	broken       bool
	s0, s1       uint32 // running checksum of the valid prefix
	hdr          [2][2]uint32
	recent       [chainWindow][2]uint32 // stored checksums of the last frames, a ring
	nRecent      int                    // frames seen so far
	page1        int                    // last valid frame holding page 1
	carry        [2]uint32              // the carried chain after the break, see after
	carrying     bool                   // carry is live
}

// run checks frames until the end of the input.
func (s *scan) run(br *bufio.Reader) error {
	rep := s.rep
	salt1, salt2 := rep.Header.Salt1, rep.Header.Salt2
	for i := 1; ; i++ {
		buf, err := br.Peek(s.frameSize)
		if len(buf) < s.frameSize {
			rep.SizeBytes += int64(len(buf))
			if err != io.EOF {
				return fmt.Errorf("read wal frame %d: %w", i, err)
			}
			if len(buf) > 0 {
				s.partial(i, buf)
			}
			return nil
		}
		rep.SizeBytes += int64(s.frameSize)
		pgno := binary.BigEndian.Uint32(buf[0:])
		commit := binary.BigEndian.Uint32(buf[4:])
		fs1 := binary.BigEndian.Uint32(buf[8:])
		fs2 := binary.BigEndian.Uint32(buf[12:])
		k0 := binary.BigEndian.Uint32(buf[16:])
		k1 := binary.BigEndian.Uint32(buf[20:])
		if !s.broken {
			reason := s.headerReason
			if reason == "" {
				switch {
				case fs1 != salt1 || fs2 != salt2:
					reason = ReasonSalt
				case pgno == 0:
					reason = ReasonPageNumber
				default:
					a0, a1 := s.frameSum(s.s0, s.s1, buf)
					if a0 != k0 || a1 != k1 {
						reason = ReasonChecksum
					} else {
						s.s0, s.s1 = a0, a1
					}
				}
			}
			if reason == "" {
				rep.ValidFrames++
				if pgno == 1 {
					s.page1 = i
				}
				if commit != 0 {
					rep.CommittedTxns++
					rep.LastCommitFrame = i
					rep.DBSizePages = commit
					rep.Page1Frame = s.page1
				}
			} else {
				s.broken = true
				rep.FirstInvalidFrame = i
				rep.InvalidReason = reason
			}
		}
		if s.broken {
			rep.FramesAfterBreak++
			s.after(buf, rep.FirstInvalidFrame == i)
		}
		s.recent[s.nRecent%chainWindow] = [2]uint32{k0, k1}
		s.nRecent++
		if _, err := br.Discard(s.frameSize); err != nil {
			return fmt.Errorf("read wal frame %d: %w", i, err)
		}
	}
}

// partial handles the incomplete frame i at the end of the log.
func (s *scan) partial(i int, buf []byte) {
	rep := s.rep
	rep.FramesAfterBreak++
	var pgno, fs1, fs2 uint32
	full := len(buf) >= FrameHeaderSize
	if full {
		pgno = binary.BigEndian.Uint32(buf[0:])
		fs1 = binary.BigEndian.Uint32(buf[8:])
		fs2 = binary.BigEndian.Uint32(buf[12:])
	}
	current := fs1 == rep.Header.Salt1 && fs2 == rep.Header.Salt2
	if full && pgno != 0 && !current && s.older(fs1) {
		rep.StaleFrames++
	}
	if s.broken {
		return
	}
	s.broken = true
	rep.FirstInvalidFrame = i
	switch {
	case s.headerReason != "":
		rep.InvalidReason = s.headerReason
	case full && !current:
		rep.InvalidReason = ReasonSalt
	default:
		rep.InvalidReason = ReasonTruncated
	}
}

// older reports whether salt-1 value v precedes the header's in serial-number
// order, i.e. belongs to an earlier generation of the log.
func (s *scan) older(v uint32) bool {
	d := s.rep.Header.Salt1 - v
	return d != 0 && d < 1<<31
}

// frameSum continues the checksum (s0, s1) over the first 8 bytes of the
// frame in buf and its page data.
func (s *scan) frameSum(s0, s1 uint32, buf []byte) (uint32, uint32) {
	if s.bigEndian {
		s0, s1 = sumBE(s0, s1, buf[:8])
		return sumBE(s0, s1, buf[FrameHeaderSize:])
	}
	s0, s1 = sumLE(s0, s1, buf[:8])
	return sumPageLE(s0, s1, buf[FrameHeaderSize:], s.half)
}

// after classifies the frame in buf, at or after the break; first reports
// the break frame itself. Frames with other salts (stale, or damaged) are
// only looked at; the others are summed once from (0, 0), see chains.
//
// The carried chain is the running checksum continued over the bytes of
// every frame since the last one that chained, starting with the valid
// prefix's chain over the break frame: a frame whose stored checksum alone
// was damaged breaks SQLite's recovery there, and the frames the writer
// appended after it chain to the checksum it should have stored. A frame
// with other salts after the break ends the carried chain; stale frames
// are therefore never summed, and the next frame that chains restarts it.
func (s *scan) after(buf []byte, first bool) {
	rep := s.rep
	pgno := binary.BigEndian.Uint32(buf[0:])
	fs1 := binary.BigEndian.Uint32(buf[8:])
	current := fs1 == rep.Header.Salt1 && binary.BigEndian.Uint32(buf[12:]) == rep.Header.Salt2
	stale := !current && pgno != 0 && s.older(fs1)
	if !current && !first {
		s.carrying = false
		if stale {
			rep.StaleFrames++
		}
		return
	}
	f0, f1 := s.frameSum(0, 0, buf)
	k0 := binary.BigEndian.Uint32(buf[16:])
	k1 := binary.BigEndian.Uint32(buf[20:])
	if current && pgno != 0 && s.chains(f0, f1, k0, k1, !first) {
		rep.ValidLookingAfter++
		if binary.BigEndian.Uint32(buf[4:]) != 0 {
			rep.CommitsAfterBreak++
		}
		s.carry, s.carrying = [2]uint32{k0, k1}, true
		return
	}
	switch {
	case first:
		a0, a1 := s.step.apply(s.s0, s.s1)
		s.carry, s.carrying = [2]uint32{a0 + f0, a1 + f1}, true
	case s.carrying:
		a0, a1 := s.step.apply(s.carry[0], s.carry[1])
		s.carry = [2]uint32{a0 + f0, a1 + f1}
	}
	if stale {
		rep.StaleFrames++
	}
}

// chains reports whether a frame whose checksum from (0, 0) is (f0, f1) and
// whose stored checksum is (k0, k1) continues from the header, from one of
// the last chainWindow frames, or, with carried set, from the carried
// chain. Each candidate start is applied with the step matrix, so the frame
// is read once whatever the number of candidates.
func (s *scan) chains(f0, f1, k0, k1 uint32, carried bool) bool {
	match := func(seed [2]uint32) bool {
		a0, a1 := s.step.apply(seed[0], seed[1])
		return a0+f0 == k0 && a1+f1 == k1
	}
	if match(s.hdr[0]) || match(s.hdr[1]) || carried && s.carrying && match(s.carry) {
		return true
	}
	n := min(s.nRecent, chainWindow)
	for j := range n {
		if match(s.recent[j]) {
			return true
		}
	}
	return false
}
