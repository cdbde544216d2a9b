package convert

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/preflight-sqlite/preflight/internal/dirfd"
	"github.com/preflight-sqlite/preflight/internal/rawfile"
	"github.com/preflight-sqlite/preflight/probe/sqlitefile"
	"github.com/preflight-sqlite/preflight/probe/wal"
)

// removePartialBackups removes the backups of the database at path that an
// earlier run began in parent and did not finish (DIR.partial: the process
// was killed, the machine went down; see backup) and returns their paths,
// and the paths of the directories with such a name it left, each with
// why. A name is only a claim: whoever owns the data directory can rename
// any directory there (one of root's it cannot read or delete) to
// <database name>.preflight-backup-<time>.partial. So a directory is
// removed only when it is what backup makes: owned by this process's
// user, holding nothing but regular files named as the database and its
// -wal and -shm. Every step goes through descriptors of parent and of the
// directory (internal/dirfd), never following a symlink. It runs once the
// guard found no writer: a run still copying would hold the database open.
func removePartialBackups(path, parent string) (removed, left []string, err error) {
	if parent == "" {
		parent = filepath.Dir(path)
	}
	pd, err := dirfd.Open(parent)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("open %s: %w", parent, err)
	}
	defer pd.Close()
	names, err := pd.ReadDirNames()
	if err != nil {
		return nil, nil, fmt.Errorf("list %s: %w", parent, err)
	}
	slices.Sort(names)
	base := filepath.Base(path)
	prefix := base + sqlitefile.BackupDirMarker
	for _, n := range names {
		if !strings.HasPrefix(n, prefix) || !strings.HasSuffix(n, ".partial") {
			continue
		}
		if fi, err := pd.Lstat(n); err != nil || !fi.IsDir() {
			continue
		}
		why, err := removePartial(pd, n, base)
		switch {
		case err != nil:
			return removed, left, fmt.Errorf("remove %s: %w", filepath.Join(parent, n), err)
		case why != "":
			left = append(left, filepath.Join(parent, n)+": "+why)
		default:
			removed = append(removed, filepath.Join(parent, n))
		}
	}
	return removed, left, nil
}

// removePartial removes the directory name in pd, a backup of the
// database named base that was not finished, when it is one backup made:
// owned by this process's user and holding only regular files named base,
// base-wal and base-shm. Otherwise it leaves it and says why.
func removePartial(pd *dirfd.Dir, name, base string) (string, error) {
	sub, err := pd.OpenDir(name)
	if err != nil {
		return "", err
	}
	defer sub.Close()
	if fi, err := pd.Lstat(name); err != nil || !sub.Same(fi) {
		return "it changed while it was examined", nil
	}
	owner, err := sub.Owner()
	if err != nil {
		return "", err
	}
	if owner != os.Geteuid() {
		return fmt.Sprintf("it belongs to uid %d, not to this user, who makes these backups", owner), nil
	}
	files, err := sub.ReadDirNames()
	if err != nil {
		return "", err
	}
	slices.Sort(files)
	for _, f := range files {
		if f != base && f != base+"-wal" && f != base+"-shm" {
			return fmt.Sprintf("it holds %q, which no backup of %s writes", f, base), nil
		}
		fi, err := sub.Lstat(f)
		if err != nil {
			return "", err
		}
		if !fi.Mode().IsRegular() {
			return fmt.Sprintf("its %s is a %s, not a regular file", f, rawfile.TypeName(fi.Mode())), nil
		}
	}
	for _, f := range files {
		if err := sub.Remove(f); err != nil {
			return "", err
		}
	}
	if !pd.Is(name, sub) {
		return "it was moved or replaced while its files were removed", nil
	}
	return "", pd.RemoveDir(name)
}

// reusableBackup returns the complete backup in dir of the database at
// path when it holds the data as it is now. Its -wal (when it has one) is
// the current -wal byte for byte (a commit always appends frames or
// restarts the log with new salts, so none came since), or the current
// database has no -wal left (the interrupted attempt's connection
// checkpointed it on close). Its database file is the current one page by
// page, except for pages the interrupted attempt's checkpoint copied in
// from the -wal: each such page equal to the page's last committed frame,
// and, with no -wal left, every page the -wal holds copied in. A -shm in
// it is listed but not compared (SQLite rebuilds the WAL index from the
// -wal). The backup's files are read through a descriptor of dir
// (internal/dirfd), the current ones with rawfile.Open (a FIFO or device
// put in their place is an error, never a blocking open). The error says why it does not hold the data as it is.
func reusableBackup(dir, path string) (*Backup, error) {
	d, err := dirfd.Open(dir)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", dir, err)
	}
	defer d.Close()
	b := &Backup{Dir: dir}
	name := filepath.Base(path)
	add := func(fi fs.FileInfo) {
		b.Files = append(b.Files, BackupFile{Name: fi.Name(), Bytes: fi.Size()})
		b.Bytes += fi.Size()
	}
	var idx *walIndex
	if w, fi, err := d.OpenRegular(name + "-wal"); err == nil {
		defer w.Close()
		cur, err := rawfile.Open(path+"-wal", true)
		gone := errors.Is(err, fs.ErrNotExist)
		switch {
		case err == nil:
			same, err := sameContent(w, cur)
			cur.Close()
			if err != nil || !same {
				return nil, fmt.Errorf("%s-wal changed since", name)
			}
		case !gone:
			return nil, err
		}
		if idx, err = indexWAL(w, gone); err != nil {
			return nil, fmt.Errorf("read %s-wal: %w", filepath.Join(dir, name), err)
		}
		add(fi)
	} else if _, cerr := os.Lstat(path + "-wal"); !errors.Is(err, fs.ErrNotExist) || cerr == nil {
		return nil, fmt.Errorf("%s-wal is not in it as it is now", name)
	}
	old, fi, err := d.OpenRegular(name)
	if err != nil {
		return nil, fmt.Errorf("%s is not in it: %w", name, err)
	}
	defer old.Close()
	cur, err := rawfile.Open(path, false)
	if err != nil {
		return nil, err
	}
	defer cur.Close()
	if same, err := sameDatabase(old, cur, idx); err != nil || !same {
		return nil, fmt.Errorf("%s changed since (%v)", name, err)
	}
	add(fi)
	if fi, err := d.Lstat(name + "-shm"); err == nil && fi.Mode().IsRegular() {
		add(fi)
	}
	return b, nil
}

// walIndex is where a -wal holds each page's last committed version.
type walIndex struct {
	f        *os.File
	pageSize int64
	dbPages  int64            // database size after the last commit, in pages
	frame    map[uint32]int64 // page number -> offset of its frame's page data
	gone     bool             // the -wal is gone from beside the database: checkpointed
}

// indexWAL reads the frame headers of w up to its last commit frame (nil
// when it has none). Memory: one map entry per page the -wal holds.
func indexWAL(w *os.File, gone bool) (*walIndex, error) {
	rep, err := wal.Validate(io.NewSectionReader(w, 0, 1<<62))
	if err != nil {
		return nil, err
	}
	if rep.LastCommitFrame == 0 || rep.Header.PageSize <= 0 {
		return nil, nil
	}
	ix := &walIndex{f: w, pageSize: int64(rep.Header.PageSize), dbPages: int64(rep.DBSizePages), frame: map[uint32]int64{}, gone: gone}
	hdr := make([]byte, 4)
	for k := int64(0); k < int64(rep.LastCommitFrame); k++ {
		off := 32 + k*(24+ix.pageSize)
		if _, err := w.ReadAt(hdr, off); err != nil {
			return nil, err
		}
		ix.frame[binary.BigEndian.Uint32(hdr)] = off + 24
	}
	return ix, nil
}

// sameDatabase reports whether the database file cur holds what the
// backup's file old does with the backup's -wal (ix, nil without one):
// every page equal to old's or to its last committed frame in the -wal
// (only the latter when the -wal is gone, and then no page past the
// database size the last commit names).
func sameDatabase(old, cur *os.File, ix *walIndex) (bool, error) {
	if ix == nil {
		return sameContent(old, cur)
	}
	oi, err := old.Stat()
	if err != nil {
		return false, err
	}
	ci, err := cur.Stat()
	if err != nil {
		return false, err
	}
	ps := ix.pageSize
	if ix.gone && ci.Size() != ix.dbPages*ps {
		return false, nil
	}
	pa, pb := make([]byte, ps), make([]byte, ps)
	for pg := uint32(1); int64(pg-1)*ps < max(oi.Size(), ci.Size()); pg++ {
		off := int64(pg-1) * ps
		nb, err := cur.ReadAt(pb, off)
		if err != nil && err != io.EOF {
			return false, err
		}
		fo, inWAL := ix.frame[pg]
		if !inWAL || !ix.gone {
			na, err := old.ReadAt(pa, off)
			if err != nil && err != io.EOF {
				return false, err
			}
			if na == nb && bytes.Equal(pa[:na], pb[:nb]) {
				continue
			}
		}
		if !inWAL || int64(nb) != ps {
			return false, nil
		}
		if _, err := ix.f.ReadAt(pa, fo); err != nil {
			return false, err
		}
		if !bytes.Equal(pa, pb) {
			return false, nil
		}
	}
	return true, nil
}

// sameContent reports whether a and b hold the same bytes.
func sameContent(a, b *os.File) (bool, error) {
	bufA, bufB := make([]byte, copyBufSize), make([]byte, copyBufSize)
	for {
		na, ea := io.ReadFull(a, bufA)
		nb, eb := io.ReadFull(b, bufB)
		if !bytes.Equal(bufA[:na], bufB[:nb]) {
			return false, nil
		}
		aDone := ea == io.EOF || ea == io.ErrUnexpectedEOF
		bDone := eb == io.EOF || eb == io.ErrUnexpectedEOF
		switch {
		case ea != nil && !aDone:
			return false, ea
		case eb != nil && !bDone:
			return false, eb
		case aDone || bDone:
			return aDone && bDone, nil
		}
	}
}

func closeAll(files ...*os.File) {
	for _, f := range files {
		if f != nil {
			f.Close()
		}
	}
}

// newestBackup returns the newest complete backup directory of the
// database at path in parent (the database's directory when parent is
// empty): named <database name>.preflight-backup-<UTC time>, a real
// directory (not a symlink) that this process's user owns, as backup makes
// them; "" when there is none.
func newestBackup(path, parent string) string {
	if parent == "" {
		parent = filepath.Dir(path)
	}
	ents, err := os.ReadDir(parent)
	if err != nil {
		return ""
	}
	prefix := filepath.Base(path) + sqlitefile.BackupDirMarker
	newest := ""
	for _, e := range ents {
		n := e.Name()
		if !e.IsDir() || !strings.HasPrefix(n, prefix) || strings.HasSuffix(n, ".partial") || n <= newest {
			continue
		}
		fi, err := e.Info()
		if err != nil {
			continue
		}
		if uid, _, ok := dirfd.Owner(fi); !ok || uid != os.Geteuid() {
			continue
		}
		newest = n
	}
	if newest == "" {
		return ""
	}
	return filepath.Join(parent, newest)
}
