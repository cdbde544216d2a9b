// Package mounts reads Linux mount tables and classifies the filesystem
// that holds a path, so that callers can tell whether SQLite's WAL mode is
// safe there.
//
// A mount table comes from the live system ([ReadSelf], which reads
// /proc/self/mountinfo as described in proc(5)) or from a saved copy
// ([ReadFile], [Parse]). Saved copies may be in any of four formats, detected
// line by line (see [Format]); lines that fit no format are counted, not
// fatal, because tables pasted into bug reports often carry a shell prompt
// or df output.
//
// [Table.Find] picks the mount that holds a path (longest mountpoint prefix,
// top of the stack on ties) and [Classify] maps its filesystem type, source
// and options to a [Class]. Both are pure string operations: classifying a
// path against a saved table never touches the local filesystem. Only
// [ResolvePath], [ReadSelf], [ReadSelfFor] and [StatfsType] do.
// [Table.ClassifyMount] classifies an overlay by the mount under its upper
// directory; [CompareStatfs] sets statfs(2)'s f_type beside the table as a
// second witness.
//
// The package states facts; it does not decide whether a class is good or
// bad for a given database.
package mounts

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/moby/sys/mountinfo"
)

// Class is a filesystem class: what kind of storage sits under a path, as
// far as locking and shared memory are concerned.
type Class string

// The classes, from the point of view of a SQLite database in the mount.
const (
	// ClassCrossVM is a host directory shared into a VM (virtiofs, 9p,
	// Docker Desktop's fakeowner/grpcfuse/osxfs, VirtualBox, VMware,
	// Parallels, WSL drives, Lima's reverse sshfs). POSIX locks and shared
	// memory are not coherent across the VM boundary.
	ClassCrossVM Class = "cross-vm"
	// ClassNetwork is a network or cluster filesystem (NFS, SMB, Ceph,
	// GlusterFS, object-store FUSE mounts...).
	ClassNetwork Class = "network"
	// ClassFUSE is a FUSE filesystem not known to be a network or cross-VM
	// share; its semantics depend on the daemon.
	ClassFUSE Class = "fuse"
	// ClassEphemeral is storage that vanishes with the container or at
	// reboot: the container's overlay root, tmpfs, ramfs.
	ClassEphemeral Class = "ephemeral"
	// ClassLocal is a disk filesystem in this kernel (ext4, xfs, btrfs...),
	// including block-device volumes and overlay mounts other than "/".
	ClassLocal Class = "local"
	// ClassUnknown is a filesystem type not in the classification table.
	ClassUnknown Class = "unknown"
	// ClassSandbox is a gVisor (runsc) gofer mount: the sandbox's own
	// kernel (the sentry) serves every process inside it, so locks and
	// the -shm shared memory are coherent among them, but not with
	// processes on the host or in another sandbox that open the same
	// files. gVisor shows these mounts as fstype 9p.
	ClassSandbox Class = "sandbox"
)

// Format is the format of a saved mount table.
type Format string

// The formats [Parse] recognises.
const (
	// FormatMountinfo is /proc/<pid>/mountinfo (proc(5)):
	// "ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS [OPTIONAL...] - FSTYPE SOURCE SUPEROPTS".
	FormatMountinfo Format = "mountinfo"
	// FormatProcMounts is /proc/mounts (and fstab-like lines):
	// "SOURCE MOUNTPOINT FSTYPE OPTS DUMP PASS".
	FormatProcMounts Format = "proc-mounts"
	// FormatMount is the output of mount(8) with no arguments:
	// "SOURCE on MOUNTPOINT type FSTYPE (OPTS)", optionally followed by " [LABEL]".
	FormatMount Format = "mount"
	// FormatFindmnt is findmnt(8)'s table output: a header line naming the
	// columns (by default TARGET SOURCE FSTYPE OPTIONS), then one row per
	// mount, with the tree drawn in the TARGET column in Unicode (├─ └─ │)
	// or ASCII (|- `- |). Bind mounts show as SOURCE[/subdir].
	FormatFindmnt Format = "findmnt"
)

// Table is a parsed mount table.
type Table struct {
	// Format is the format of most parsed lines (the first seen on a tie).
	Format Format
	// Mounts are the mounts in file order; later entries are mounted on
	// top of earlier ones with the same mountpoint. Mountpoint is always
	// absolute and unescaped. Lines in formats other than mountinfo leave
	// ID, Parent, Major, Minor and Optional zero, and Root empty unless
	// findmnt showed SOURCE[/subdir] or an FSROOT column. A mount whose
	// line could not be read has FSType [FSTypeUnreadable] and only the
	// fields its line's start gave.
	Mounts []*mountinfo.Info
	// Skipped counts non-blank, non-comment lines that fit no format (or
	// that fit one but had no absolute mountpoint). Blank lines and lines
	// starting with '#' are ignored and not counted.
	Skipped int
	// GVisor is set by ReadSelf and ReadSelfFor when /proc/version names
	// gVisor's kernel ("4.19.0-gvisor"): every 9p mount over a file
	// descriptor (trans=fd) is then the sandbox's gofer, whatever its
	// options. Parse leaves it false.
	GVisor bool
}

var (
	// ErrNoMounts means that nothing in the input parses as a mount table.
	ErrNoMounts = errors.New("no mount table entries found")
	// ErrNotSupported means that the operation needs Linux: reading the
	// live table, or parsing mountinfo-format lines, on another GOOS.
	ErrNotSupported = errors.New("not supported on this operating system")
	// ErrNoMount means that no mount in the table holds the path: the
	// table has no "/" and no mountpoint that is a prefix of the path.
	ErrNoMount = errors.New("no mount holds the path")
)

// ReadFile opens the saved mount table at name and parses it with [Parse].
// Errors wrap [ErrNoMounts] (or [ErrNotSupported]) as Parse does, and the
// error from os.Open.
func ReadFile(name string) (*Table, error) {
	// A FIFO would block the open, and a device such as /dev/zero never
	// ends: only regular files (procfs files are regular, of size 0).
	fi, err := os.Stat(name)
	if err != nil {
		return nil, fmt.Errorf("read mount table: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("read mount table %s: not a regular file (%s)", name, fileKind(fi.Mode()))
	}
	f, err := os.Open(name)
	if err != nil {
		return nil, fmt.Errorf("read mount table: %w", err)
	}
	defer f.Close()
	lr := &io.LimitedReader{R: f, N: MaxTableBytes + 1}
	t, err := Parse(lr)
	if lr.N <= 0 {
		return nil, fmt.Errorf("read mount table %s: larger than %d bytes", name, MaxTableBytes)
	}
	if err != nil {
		return nil, fmt.Errorf("read mount table %s: %w", name, err)
	}
	return t, nil
}

// MaxTableBytes is the largest mount table ReadFile reads, in bytes.
const MaxTableBytes = 256 << 20

// Parse reads a mount table from r. Each line is matched against the
// formats in this order: mountinfo, findmnt header, mount(8), /proc/mounts,
// findmnt row (only after a findmnt header, by its column names). Lines
// may mix formats. Mountinfo lines are parsed by
// mountinfo.GetMountsFromReader, which exists only on Linux; on other
// systems Parse returns an error wrapping [ErrNotSupported] if the input
// holds any mountinfo line, rather than a table with those mounts missing.
// Parse never touches the filesystem.
//
// Escapes are undone in mountpoints, sources, roots and filesystem types:
// octal \NNN (\040 is a space) as the kernel writes them, and \xHH as
// findmnt writes them. Options are left as written.
//
// Lines are read whole up to 1 MiB (overlay lowerdir lists grow with the
// image's layer count, NFS and CIFS option strings can be long too): a
// mountinfo line over the library's 64 KiB limit is parsed with its long
// fields set aside and put back, so no option is lost. A longer line, or a
// mountinfo line that does not parse, is counted in Skipped; when its start
// shows a mountpoint it stays in the table with FSType [FSTypeUnreadable],
// so a path under it is classified unknown, never by a shorter prefix.
// mount(8) prints mountpoints unescaped: a mount(8) line is split at its
// last " type " and last " (", so a mountpoint may hold spaces; any other
// line that fits no format (or a mount(8) line with several " on /")
// leaves an unreadable entry at every mountpoint its text might name
// (after each " on /", or in a findmnt row's TARGET column: the text up
// to each space, and to the end of the line).
//
// Mountpoints are cleaned as written (a trailing slash, "//", "." and ".."
// components in a hand-edited table) before escapes are undone: an escaped
// "\056\056" is a directory named "..", not the parent.
//
// If no line parses, Parse returns [ErrNoMounts]. Read errors from r are
// returned wrapped.
func Parse(r io.Reader) (*Table, error) {
	p := newParser()
	if err := p.run(r); err != nil {
		return nil, err
	}
	return p.table()
}

// ResolvePath returns the absolute, symlink-free, clean form of name as the
// kernel would see it: filepath.Abs, then filepath.EvalSymlinks on the
// longest prefix that resolves, with the part that does not exist yet (a
// database not created yet, say) appended again. Unlike the other functions
// in this package it reads the local filesystem, so it only suits paths on
// this machine, not paths in a saved table from elsewhere.
//
// Errors other than "does not exist" and "not a directory" (permission
// denied, a symlink loop) are returned wrapped.
func ResolvePath(name string) (string, error) {
	// After a symlink, ".." is the parent of the link's target, not the
	// textual parent: resolve the path as written before cleaning it.
	if strings.Contains(name, "..") {
		raw := name
		if !filepath.IsAbs(raw) {
			if wd, err := os.Getwd(); err == nil {
				raw = wd + string(filepath.Separator) + raw
			}
		}
		if resolved, err := filepath.EvalSymlinks(raw); err == nil {
			return filepath.Abs(resolved)
		}
	}
	p, err := filepath.Abs(name)
	if err != nil {
		return "", fmt.Errorf("resolve path %s: %w", name, err)
	}
	var tail []string
	for {
		resolved, err := filepath.EvalSymlinks(p)
		if err == nil {
			parts := append([]string{resolved}, tail...)
			return filepath.Clean(filepath.Join(parts...)), nil
		}
		if !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR) {
			return "", fmt.Errorf("resolve path %s: %w", name, err)
		}
		parent := filepath.Dir(p)
		if parent == p {
			return "", fmt.Errorf("resolve path %s: %w", name, err)
		}
		tail = append([]string{filepath.Base(p)}, tail...)
		p = parent
	}
}

// Find returns the mount that holds p: among mounts whose mountpoint is "/",
// p itself, or a directory prefix of p, the one with the longest mountpoint;
// of several with the same mountpoint, the last in the table (the top of the
// stack). "/foo" does not hold "/foobar".
//
// Find compares strings only. p must be absolute (Linux syntax) and is
// cleaned first; symlinks are not resolved (see [ResolvePath]). It returns
// [ErrNoMount] if no mount holds p, and a different error if p is not
// absolute.
func (t *Table) Find(p string) (*mountinfo.Info, error) {
	if !path.IsAbs(p) {
		return nil, fmt.Errorf("find mount for %q: path is not absolute", p)
	}
	p = path.Clean(p)
	var best *mountinfo.Info
	bestLen := -1
	for _, m := range t.Mounts {
		// Parse cleaned the mountpoints as written; a "." or ".." that
		// came from an escape (\056) is a name, and holds nothing.
		mp := m.Mountpoint
		if !path.IsAbs(mp) {
			continue
		}
		if !(mp == "/" || p == mp || strings.HasPrefix(p, mp+"/")) {
			continue
		}
		if len(mp) >= bestLen {
			best, bestLen = m, len(mp)
		}
	}
	if best == nil {
		return nil, fmt.Errorf("find mount for %s: %w", p, ErrNoMount)
	}
	return best, nil
}

// Classify finds the mount that holds p (see [Table.Find]) and classifies it
// (see [Table.ClassifyMount]). Errors are those of Find.
func (t *Table) Classify(p string) (Mount, error) {
	m, err := t.Find(p)
	if err != nil {
		return Mount{}, err
	}
	return t.ClassifyMount(m), nil
}

// relevant reports whether a mount at the raw (escaped) mountpoint holds
// one of holding or under, or sits below one of under. Mountpoints with
// escapes are always kept, so nothing is lost to an unescaped comparison.
func relevant(raw []byte, holding, under []string) bool {
	mp := string(raw)
	if mp == "/" || strings.IndexByte(mp, '\\') >= 0 {
		return true
	}
	above := func(p string) bool { return p == mp || strings.HasPrefix(p, mp+"/") }
	for _, p := range holding {
		if above(p) {
			return true
		}
	}
	for _, p := range under {
		if above(p) || p == "/" || strings.HasPrefix(mp, p+"/") {
			return true
		}
	}
	return false
}

// FindDev is Find for a path that exists on this machine, with dev its
// st_dev from stat(2): of the mounts that hold p by prefix, it prefers those
// whose major:minor is dev, so a mount hidden under a later mount on a
// parent directory is not taken for the one that serves p. When no
// candidate has that device (btrfs subvolumes and overlay can report other
// devices), it returns Find(p).
func (t *Table) FindDev(p string, dev uint64) (*mountinfo.Info, error) {
	best, err := t.Find(p)
	if err != nil {
		return nil, err
	}
	major, minor := int(dev>>8&0xfff|dev>>32&^0xfff), int(dev&0xff|dev>>12&^0xff)
	if best.Major == major && best.Minor == minor {
		return best, nil
	}
	p = path.Clean(p)
	var match *mountinfo.Info
	for _, m := range t.Mounts {
		mp := m.Mountpoint
		if m.Major != major || m.Minor != minor || !(mp == "/" || p == mp || strings.HasPrefix(p, mp+"/")) {
			continue
		}
		if match == nil || len(mp) >= len(match.Mountpoint) {
			match = m
		}
	}
	if match == nil {
		return best, nil
	}
	return match, nil
}

// fileKind names the type of a file that is not a regular file.
func fileKind(m os.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&os.ModeNamedPipe != 0:
		return "a FIFO"
	case m&os.ModeSocket != 0:
		return "a socket"
	case m&os.ModeCharDevice != 0:
		return "a character device"
	case m&os.ModeDevice != 0:
		return "a block device"
	}
	return "mode " + m.Type().String()
}
