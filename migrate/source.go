package migrate

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/preflight-sqlite/preflight/probe/sqlitefile"
)

// immutable is the open mode for a quiescent WAL source (see
// quiescentWAL): read-only, and SQLite neither locks nor opens -wal or
// -shm (https://sqlite.org/uri.html#uriimmutable).
const immutable = "ro&immutable=1"

// quiescentWAL reports whether src is a WAL database (header bytes 18 and
// 19) whose -wal is absent or empty, so the main file holds every commit.
// A read-only connection to it would create an empty -wal and a -shm
// beside it, a write to the source; it is opened immutable instead. The
// stat it returns is src's, for unchangedSince; any error reads as false
// (the ordinary read-only open then decides).
func quiescentWAL(src string) (fs.FileInfo, bool) {
	if fi, err := os.Lstat(src + "-wal"); err == nil && fi.Size() > 0 || err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, false
	}
	f, err := os.Open(src)
	if err != nil {
		return nil, false
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, false
	}
	b := make([]byte, 100)
	if _, err := io.ReadFull(f, b); err != nil {
		return nil, false
	}
	h, err := sqlitefile.ParseHeader(b)
	return fi, err == nil && h.JournalMode() == sqlitefile.JournalWAL
}

// unchangedSince returns an error when src or its -wal changed after
// before was taken: an immutable connection takes no lock and keeps its
// cache, so a writer the guard missed shows only here.
func unchangedSince(src string, before fs.FileInfo) error {
	fi, err := os.Stat(src)
	if err == nil && (fi.Size() != before.Size() || !fi.ModTime().Equal(before.ModTime())) {
		err = errors.New("its size or modification time changed")
	}
	if w, werr := os.Lstat(src + "-wal"); err == nil && werr == nil && w.Size() > 0 {
		err = errors.New("a -wal with frames appeared")
	}
	if err != nil {
		return fmt.Errorf("%s changed while it was copied (%v): a writer the guard did not see is using it", src, err)
	}
	return nil
}
