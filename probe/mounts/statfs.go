package mounts

import (
	"fmt"
	"strings"
)

// Witness is what statfs(2) says about the filesystem under a path, set
// beside the mount table's entry as a second witness.
type Witness struct {
	// Magic is statfs's f_type (the superblock magic number, statfs(2)).
	Magic uint32 `json:"magic"`
	// Name names the filesystem family of Magic ("nfs", "ext2/3/4",
	// "fuse"...); empty when the magic is not in this package's table.
	Name string `json:"name,omitempty"`
	// Class is the class Magic alone implies; empty when it implies none
	// (an unknown magic, or overlay, whose class depends on its upper
	// directory).
	Class Class `json:"class,omitempty"`
	// Agrees is false when the mount table's fstype is not one Magic can
	// have (the table says ext4, statfs says NFS). An unknown magic
	// agrees: it contradicts nothing.
	Agrees bool `json:"agrees"`
}

// magic is one row of the statfs table: the family's name, the class the
// magic implies, and whether a mount table fstype fits it.
type magic struct {
	name  string
	class Class
	fits  func(fstype string) bool
}

func is(names ...string) func(string) bool {
	return func(f string) bool {
		for _, n := range names {
			if f == n {
				return true
			}
		}
		return false
	}
}

// magics are the f_type values of linux/magic.h (and the filesystems'
// own headers) that this package can name. Every FUSE filesystem,
// virtiofs included, reports FUSE_SUPER_MAGIC, so statfs cannot tell them
// apart; Docker Desktop's fakeowner has a magic of its own that is not
// documented, and is not here.
var magics = map[uint32]magic{
	0xEF53:     {"ext2/3/4", ClassLocal, is("ext2", "ext3", "ext4")},
	0x58465342: {"xfs", ClassLocal, is("xfs")},
	0x9123683E: {"btrfs", ClassLocal, is("btrfs")},
	0x2FC12FC1: {"zfs", ClassLocal, is("zfs")},
	0xF2F52010: {"f2fs", ClassLocal, is("f2fs")},
	0xCA451A4E: {"bcachefs", ClassLocal, is("bcachefs")},
	0x3153464A: {"jfs", ClassLocal, is("jfs")},
	0x52654973: {"reiserfs", ClassLocal, is("reiserfs")},
	0x794C7630: {"overlay", "", is("overlay")},
	0x01021994: {"tmpfs", ClassEphemeral, is("tmpfs")},
	0x858458F6: {"ramfs", ClassEphemeral, is("ramfs")},
	0x6969:     {"nfs", ClassNetwork, is("nfs", "nfs4")},
	0xFF534D42: {"cifs", ClassNetwork, is("cifs", "smb3", "smbfs")},
	0xFE534D42: {"smb2", ClassNetwork, is("cifs", "smb3", "smbfs")},
	0x517B:     {"smb", ClassNetwork, is("smbfs", "cifs")},
	0x00C36400: {"ceph", ClassNetwork, is("ceph")},
	0x5346414F: {"afs", ClassNetwork, is("afs")},
	0x01021997: {"9p", ClassCrossVM, is("9p")}, // gVisor's gofer reports it too
	0x7C7C6673: {"prl_fs", ClassCrossVM, is("prl_fs")},
	0x786F4256: {"vboxsf", ClassCrossVM, is("vboxsf")},
	0x65735546: {"fuse", ClassFUSE, func(f string) bool {
		return isFUSE(f) || f == "virtiofs" || strings.HasPrefix(f, "virtiofs.")
	}},
}

// CompareStatfs compares a mount table fstype with statfs's f_type for
// the same path. It is pure: the caller runs statfs ([StatfsType]).
func CompareStatfs(fstype string, fType uint32) Witness {
	w := Witness{Magic: fType, Agrees: true}
	row, ok := magics[fType]
	if !ok {
		return w
	}
	w.Name, w.Class = row.name, row.class
	w.Agrees = row.fits(strings.ToLower(fstype))
	return w
}

// String is "f_type 0xMAGIC (NAME)".
func (w Witness) String() string {
	if w.Name == "" {
		return fmt.Sprintf("f_type %#x", w.Magic)
	}
	return fmt.Sprintf("f_type %#x (%s)", w.Magic, w.Name)
}
