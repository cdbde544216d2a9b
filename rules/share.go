package rules

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/preflight-sqlite/preflight/policy"
	"github.com/preflight-sqlite/preflight/probe/mounts"
	"github.com/preflight-sqlite/preflight/probe/sqlitefile"
)

// shareRules are the findings about shares and network mounts that hold
// safe-looking data: appended to rules after the path rules and before the
// writer rules (init in rules.go).
var shareRules = []rule{
	{
		Rule: Rule{ShareWithoutLocks, LevelInfo, "a data directory on a cross-VM share, or on a network mount whose byte-range locks stay local (nolock, nobrl, local_lock=all): even in DELETE mode its databases must be opened from one side only"},
		match: func(s subject) (string, Level, bool) {
			m := s.dir.Mount
			// Not inspected: the journal modes are unknown, and
			// unsafe-fs-not-inspected says what to do.
			if m == nil || !s.dir.Inspected || !locksStayLocal(m) || hasUnsafeWAL(s) {
				return "", "", false
			}
			return fmt.Sprintf("%s is on %s (%s): journal_mode=DELETE needs no -shm, but SQLite's locks %s, so two sides writing a database here at once (%s) corrupt it",
				s.dir.Path, m.FSType, m.Source, localLocksWhy(m), twoSides(m)), "", true
		},
		remedy: func(s subject) []string {
			return []string{bothSidesRemedy(s.dir.Mount)}
		},
	},
	{
		Rule: Rule{NFSSoftMount, LevelWarn, "a data directory on an NFS mount with the soft (or softerr) option: a slow server makes writes fail with I/O errors mid-transaction"},
		match: func(s subject) (string, Level, bool) {
			m := s.dir.Mount
			if m == nil || !m.Soft {
				return "", "", false
			}
			return fmt.Sprintf("%s is on an NFS mount with the soft option (%s from %s, options %s): when the server does not answer within its retries (timeo, retrans) the client gives up and the write fails with an I/O error (SQLite: \"disk I/O error\"), possibly halfway through a transaction, and nfs(5) warns that soft mounts can silently corrupt data",
				s.dir.Path, m.FSType, m.Source, m.Options), "", true
		},
		remedy: func(s subject) []string {
			return []string{"Mount the export hard (the default: drop soft and softerr from the options; in Kubernetes the PersistentVolume's mountOptions, in compose the volume's driver_opts o:), so that a slow server makes writes wait instead of fail."}
		},
	},
	{
		Rule: Rule{NFSSillyRename, LevelWarn, "NFS silly-rename files (.nfs and hex digits) beside a database: a process on some NFS client may still hold a deleted file of that directory (an old database or -wal), or a crashed client left them; evidence, not proof"}, scope: ScopeDatabase,
		match: func(s subject) (string, Level, bool) {
			names := s.db.NFSSillyRenamed
			if len(names) == 0 || sameDirReported(s) {
				return "", "", false
			}
			files := "files"
			if len(names) == 1 {
				files = "file"
			}
			return fmt.Sprintf("%s has %d NFS silly-rename %s beside it (%s): an NFS client gives that name to a file deleted while one of its processes has it open, and removes it at the last close, so a process on some client (perhaps another machine, which no probe here sees) may still hold an old copy of a database or -wal of this directory and write to it; a client that crashed leaves such files too",
				filepath.Base(s.db.Path), len(names), files, listSome(names, 5)), "", true
		},
		remedy: func(s subject) []string {
			dir := filepath.Dir(s.db.Path)
			return []string{
				fmt.Sprintf("On every machine that mounts this export, find the process that holds them (lsof +D %s, or fuser on each .nfs file, on that client) and stop it before converting, moving or restoring the database.", dir),
				"Files left by a crashed client are held by no one: once every client is checked, remove them (they go by themselves when their holder closes them).",
			}
		},
	},
}

// locksStayLocal reports whether POSIX locks taken on m are not seen by
// the other processes that reach the same files: a cross-VM share (the
// host's processes), a network mount with NoLocks (other clients).
func locksStayLocal(m *mounts.Mount) bool {
	return m.Class == mounts.ClassCrossVM || m.Class == mounts.ClassNetwork && m.NoLocks
}

func localLocksWhy(m *mounts.Mount) string {
	if m.Class == mounts.ClassCrossVM {
		return "do not reach across the VM boundary"
	}
	return "stay on this client (the mount options " + strings.Join(noLockOptions(m.Options), ", ") + " keep byte-range locks local)"
}

func twoSides(m *mounts.Mount) string {
	if m.Class == mounts.ClassCrossVM {
		return "a program on the host and this container, or containers on both sides"
	}
	return "two machines or containers that mount this export"
}

// bothSidesRemedy is the fix for a database on a share whose locks stay
// local (locksStayLocal).
func bothSidesRemedy(m *mounts.Mount) string {
	if m.Class == mounts.ClassCrossVM {
		return "Open the databases from one side only: nothing on the host (sqlite3, a backup or sync tool, an editor) while the container uses them; or move the data to a named volume or a local path inside the VM, where locks work."
	}
	return "Open the databases from one client only, or mount without " + strings.Join(noLockOptions(m.Options), ", ") + " so that locks reach the server; or move the data to a named volume or a local path."
}

// lowerFirst lower-cases the first letter of an ASCII sentence, to
// continue another.
func lowerFirst(s string) string {
	if s != "" && 'A' <= s[0] && s[0] <= 'Z' {
		return string(s[0]+'a'-'A') + s[1:]
	}
	return s
}

// noLockOptions lists the options of opts that keep byte-range locks
// local (mounts.LocalLockOptions), or "nolock" when none is written.
func noLockOptions(opts string) []string {
	if o := mounts.LocalLockOptions(opts); len(o) > 0 {
		return o
	}
	return []string{"nolock"}
}

// hasUnsafeWAL reports whether a database of s's directory is in WAL mode
// on a filesystem unsafe for WAL: its wal-on-* error says what to do, and
// its remedy carries the one-side caveat (walUnsafeRemedy).
func hasUnsafeWAL(s subject) bool {
	for i := range s.dir.Databases {
		db := &s.dir.Databases[i]
		if db.JournalMode == sqlitefile.JournalWAL && policy.WALUnsafe(subject{dir: s.dir, db: db}.class()) {
			return true
		}
	}
	return false
}

// sameDirReported reports whether a database before s.db in its data
// directory keeps its -wal in the same directory: the silly-rename files
// there are reported once.
func sameDirReported(s subject) bool {
	dir := filepath.Dir(s.db.ResolvedPath)
	for i := range s.dir.Databases {
		db := &s.dir.Databases[i]
		if db == s.db {
			return false
		}
		if filepath.Dir(db.ResolvedPath) == dir && len(db.NFSSillyRenamed) > 0 {
			return true
		}
	}
	return false
}

// listSome joins the first n of names, and says how many more there are.
func listSome(names []string, n int) string {
	if len(names) <= n {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:n], ", "), len(names)-n)
}

// unraidPlatform is mounts.Mount.Platform for an Unraid user share.
const unraidPlatform = "Unraid user share"

// unraidPoolRemedy is the fix for data on an Unraid user share (fuse.shfs):
// the same directory by its pool path, which bypasses shfs. ok is false on
// other filesystems.
func unraidPoolRemedy(s subject) (string, bool) {
	m := s.mount()
	if m == nil || m.Platform != unraidPlatform {
		return "", false
	}
	dir := s.dir.Path
	if s.db != nil {
		dir = filepath.Dir(s.db.Path)
	} else if s.dir.DBFile {
		dir = filepath.Dir(dir)
	}
	where := "/mnt/cache/SHARE/... (or /mnt/POOL/... for another pool)"
	if rel := shareRelative(m, dir); rel != "" {
		where = fmt.Sprintf("/mnt/cache%s (or /mnt/POOL%s for another pool)", rel, rel)
	}
	return fmt.Sprintf("Map the data to its pool path instead of the user share: %s in the container's path mapping (docker run -v, the template's host path), with the share kept on that pool (primary storage the pool, no secondary storage, so the mover never moves it to the array). The pool's own filesystem (xfs, btrfs or zfs) bypasses shfs, and WAL is safe there.", where), true
}

// shareRelative is dir's path inside the Unraid user share mounted at m
// ("/appdata/app" for /mnt/user/appdata/app, or for a container path
// mapped from it); empty when the mount table does not show it.
func shareRelative(m *mounts.Mount, dir string) string {
	rel, err := filepath.Rel(m.Mountpoint, dir)
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		rel = "."
	}
	root := m.Root
	if root == "" {
		if m.Mountpoint != "/mnt/user" {
			return ""
		}
		root = "/"
	}
	if p := filepath.Join(root, rel); p != "/" {
		return p
	}
	return ""
}
