package salvage

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/preflight-sqlite/preflight/internal/rawfile"
	"github.com/preflight-sqlite/preflight/probe/health"
	"github.com/preflight-sqlite/preflight/probe/sqlitefile"
	"github.com/preflight-sqlite/preflight/probe/wal"
)

// errMissing says a page lies past the end of the file and is in no WAL
// frame.
var errMissing = errors.New("page past the end of the file")

// source reads the pages of a database as SQLite would see them: the main
// file's pages with the committed frames of a valid -wal laid over them.
// It only reads, through rawfile.Open (never SQLite).
type source struct {
	main, log *os.File
	size      int64 // main file bytes
	pageSize  int
	usable    int
	count     uint32           // pages in the database
	frames    map[uint32]int64 // page -> offset of its last committed frame's data
	enc       int              // text encoding, 1..3
	freelist  uint32           // first freelist trunk page (header offset 32)
	autoVac   bool             // largest root page (offset 52) set: pointer-map pages
	notes     []string
	guessed   bool // page size found from the b-tree pages
	walFrames int  // committed frames laid over the file
	// A hot rollback journal: the file, each page's original image's
	// offset in it, the database size before the transaction, and how
	// many pages it restores.
	journal      *os.File
	jpages       map[uint32]int64
	jInitial     uint32
	journalPages int
}

// openSource opens path and its -wal (when it holds committed frames)
// and works out the page size, reserved bytes, encoding and page count.
func openSource(path string) (*source, error) {
	f, err := rawfile.Open(path, false)
	if err != nil {
		return nil, err // an *fs.PathError: it names the path
	}
	s := &source{main: f, enc: 1}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	s.size = fi.Size()
	hdr := make([]byte, sqlitefile.HeaderSize)
	n, _ := f.ReadAt(hdr, 0)
	hdr = hdr[:n]
	wr, walOK := s.openWAL(path)
	if walOK && wr.Page1Frame > 0 {
		p1 := make([]byte, sqlitefile.HeaderSize)
		if _, err := s.log.ReadAt(p1, wal.HeaderSize+int64(wr.Page1Frame-1)*int64(wal.FrameHeaderSize+wr.Header.PageSize)+wal.FrameHeaderSize); err == nil {
			hdr = p1
		}
	}
	trusted := false
	if h, err := sqlitefile.ParseHeader(hdr); err == nil {
		ps, _ := health.HeaderBytesProblems(hdr, -1)
		trusted = h.PageSizeValid()
		for _, p := range ps {
			if p.ID == health.ProblemTorn || p.ID == health.ProblemPageSize {
				trusted = false
			}
		}
		if walOK && h.PageSize != wr.Header.PageSize {
			trusted = false
		}
		// A page size that is another valid power of two lies when the
		// header's page count fits the file only at the size the b-tree
		// pages show.
		if n := int64(h.DatabaseSizePages); trusted && !walOK && h.InHeaderSizeValid() && n*int64(h.PageSize) != s.size {
			if g := guessPageSize(f, s.size); g != h.PageSize && n*int64(g) == s.size {
				trusted = false
			}
		}
		if trusted {
			s.pageSize = h.PageSize
			s.usable = h.PageSize - int(h.ReservedBytes)
			s.freelist = binary.BigEndian.Uint32(hdr[32:36])
			s.autoVac = binary.BigEndian.Uint32(hdr[52:56]) != 0
		}
		if h.TextEncoding >= 1 && h.TextEncoding <= 3 {
			s.enc = int(h.TextEncoding)
		}
	}
	if !trusted {
		switch {
		case walOK:
			s.pageSize = wr.Header.PageSize
		default:
			s.pageSize = guessPageSize(f, s.size)
			s.guessed = true
		}
		s.usable = s.pageSize
		s.notes = append(s.notes, fmt.Sprintf("the database header is damaged: page size %d taken from %s", s.pageSize, map[bool]string{true: "the b-tree pages", false: "the -wal header"}[s.guessed]))
	}
	if s.pageSize == 0 {
		s.Close()
		return nil, fmt.Errorf("%s: no page size parses as b-tree pages: not a SQLite database", path)
	}
	if !walOK && s.log != nil {
		s.log.Close()
		s.log = nil
	}
	if s.log != nil {
		if err := s.indexWAL(wr); err != nil {
			s.Close()
			return nil, err
		}
	} else {
		s.openJournal(path)
	}
	// The pages are those the file holds and those the -wal adds: a
	// header that counts more (a truncated file) says so in a note, and
	// a page past both reads as missing.
	pages := (s.size + int64(s.pageSize) - 1) / int64(s.pageSize)
	if trusted {
		if h, err := sqlitefile.ParseHeader(hdr); err == nil && h.InHeaderSizeValid() && int64(h.DatabaseSizePages) > pages && !walOK {
			s.notes = append(s.notes, fmt.Sprintf("the file holds %d of the %d pages its header counts: it was truncated", pages, h.DatabaseSizePages))
		}
	}
	if walOK && wr.DBSizePages > 0 {
		// The size the last commit frame records is the database's
		// (SQLite's own rule), bounded by what the files can hold.
		pages = min(int64(wr.DBSizePages), pages+int64(len(s.frames)))
	}
	if s.jpages != nil && s.jInitial > 0 {
		pages = int64(s.jInitial) // a rollback truncates the database to its size before the transaction
	}
	if pages > 1<<31 {
		pages = 1 << 31
	}
	s.count = uint32(pages)
	return s, nil
}

// openWAL validates path's -wal with the WAL reader and keeps it open
// when SQLite would replay frames from it.
func (s *source) openWAL(path string) (wal.Report, bool) {
	lf, err := rawfile.Open(path+"-wal", false)
	if err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			s.notes = append(s.notes, fmt.Sprintf("the -wal could not be read: %v", err))
		}
		return wal.Report{}, false
	}
	wr, err := wal.Validate(io.NewSectionReader(lf, 0, 1<<62))
	if err != nil || wr.LastCommitFrame == 0 || !wr.Header.ChecksumValid {
		if err == nil && !wr.Empty {
			s.notes = append(s.notes, "the -wal holds no committed frames SQLite would replay: ignored")
		}
		lf.Close()
		return wr, false
	}
	s.log = lf
	return wr, true
}

// indexWAL maps each page to its last committed frame.
func (s *source) indexWAL(wr wal.Report) error {
	s.frames = map[uint32]int64{}
	fsz := int64(wal.FrameHeaderSize + wr.Header.PageSize)
	var fh [wal.FrameHeaderSize]byte
	for i := range wr.LastCommitFrame {
		off := wal.HeaderSize + int64(i)*fsz
		if _, err := s.log.ReadAt(fh[:], off); err != nil {
			return fmt.Errorf("read -wal frame %d: %w", i+1, err)
		}
		s.frames[binary.BigEndian.Uint32(fh[:])] = off + wal.FrameHeaderSize
	}
	s.walFrames = wr.LastCommitFrame
	s.notes = append(s.notes, fmt.Sprintf("%d committed -wal frames laid over the file (%d pages)", wr.LastCommitFrame, len(s.frames)))
	return nil
}

// Close closes the files.
func (s *source) Close() {
	s.main.Close()
	if s.log != nil {
		s.log.Close()
	}
	if s.journal != nil {
		s.journal.Close()
	}
}

// page reads page pgno (1-based) into buf (s.pageSize bytes).
func (s *source) page(pgno uint32, buf []byte) error {
	if pgno == 0 || pgno > s.count {
		return errMissing
	}
	if off, ok := s.jpages[pgno]; ok {
		_, err := s.journal.ReadAt(buf, off)
		return err
	}
	if off, ok := s.frames[pgno]; ok {
		_, err := s.log.ReadAt(buf, off)
		return err
	}
	off := int64(pgno-1) * int64(s.pageSize)
	if off+int64(s.pageSize) > s.size {
		return errMissing
	}
	_, err := s.main.ReadAt(buf, off)
	return err
}

// guessPageSize returns the power of two in 512..65536 at which the most
// pages of f parse as b-tree pages whose cells reach into the upper half of
// the page (cells are written from the end of a page down), sampling at
// most 4096 pages; 0 when none does.
func guessPageSize(f *os.File, size int64) int {
	best, bestScore := 0, 0.0
	for ps := 512; ps <= 65536; ps *= 2 {
		pages := size / int64(ps)
		if pages == 0 {
			continue
		}
		step := max(pages/4096, 1)
		buf := make([]byte, ps)
		good, tried := 0, 0
		for pg := int64(0); pg < pages; pg += step {
			tried++
			if _, err := f.ReadAt(buf, pg*int64(ps)); err != nil {
				continue
			}
			if plausible(buf, uint32(pg+1), ps) {
				good++
			}
		}
		score := float64(good) / float64(tried)
		if good > 0 && score >= bestScore {
			best, bestScore = ps, score
		}
	}
	return best
}

// plausible reports whether data parses as a b-tree page with at least one
// cell, the highest of them in the upper half of the page.
func plausible(data []byte, pgno uint32, usable int) bool {
	p, err := ParsePage(data, pgno, usable)
	if err != nil || len(p.Cells) == 0 {
		return false
	}
	hi := 0
	for _, c := range p.Cells {
		if _, err := ParseCell(data, c, p.Type, usable); err != nil {
			return false
		}
		hi = max(hi, c)
	}
	return hi >= usable/2
}

// openJournal lays a hot rollback journal's original page images over the
// file, as the rollback SQLite's next writer makes would, without making
// it (https://sqlite.org/fileformat2.html#the_rollback_journal): each
// segment's records up to the first whose checksum fails (pager.c
// pager_playback), the database then cut to its size before the
// transaction. A journal that is not hot (a writer holds the RESERVED
// lock, a zeroed or invalid header) is left alone, with a note.
func (s *source) openJournal(path string) {
	j, err := health.InspectJournal(path)
	if err != nil || !j.Exists || j.SizeBytes == 0 {
		return
	}
	if !j.Hot || !j.HeaderValid || int(j.Header.PageSize) != s.pageSize {
		s.notes = append(s.notes, "the -journal is not a hot journal of this database: not applied")
		return
	}
	f, err := rawfile.Open(path+"-journal", false)
	if err != nil {
		s.notes = append(s.notes, fmt.Sprintf("the hot -journal could not be read: %v", err))
		return
	}
	s.journal, s.jpages, s.jInitial = f, map[uint32]int64{}, j.Header.InitialPages
	h, off, ps := j.Header, int64(0), int64(s.pageSize)
	rec := make([]byte, ps+8)
	var hb [health.JournalHeaderSize]byte
	for {
		sector := int64(h.SectorSize)
		at := off + sector
		n := h.Records(j.SizeBytes - off)
		for i := int64(0); i < n; i++ {
			if _, err := f.ReadAt(rec, at); err != nil {
				return
			}
			pg := binary.BigEndian.Uint32(rec)
			sum := h.Nonce
			for k := ps - 200; k > 0; k -= 200 {
				sum += uint32(rec[4+k])
			}
			if sum != binary.BigEndian.Uint32(rec[4+ps:]) {
				s.notes = append(s.notes, fmt.Sprintf("hot -journal: a record's checksum fails at byte %d: the records from there on are not applied, as SQLite would not", at))
				return
			}
			if _, dup := s.jpages[pg]; !dup && pg != 0 {
				s.jpages[pg] = at + 4
				s.journalPages++
			}
			at += ps + 8
		}
		next := (at + sector - 1) / sector * sector
		if n == 0 || next+health.JournalHeaderSize > j.SizeBytes {
			break
		}
		if _, err := f.ReadAt(hb[:], next); err != nil {
			break
		}
		nh, err := health.ParseJournalHeader(hb[:])
		if err != nil || int(nh.PageSize) != s.pageSize {
			break
		}
		h, off = nh, next
	}
	s.notes = append(s.notes, fmt.Sprintf("a hot -journal was applied to what is read (not to the source): %d original pages, the database cut to %d pages", s.journalPages, s.jInitial))
}
