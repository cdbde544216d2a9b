// Package dirfd creates, renames and removes files inside a directory that
// another user may own, relative to a descriptor of that directory instead
// of by path.
//
// A path is a name the directory's owner can change between two calls: it
// can rename a subdirectory away and put a symlink to any directory in its
// place, and a process running as root then creates its files there.
// O_EXCL and O_NOFOLLOW protect only the last component of a path. A Dir
// holds a descriptor opened O_DIRECTORY|O_NOFOLLOW, reached one component
// at a time without following a symlink, and every operation names one
// entry of it (openat, mkdirat, renameat, unlinkat): no name the owner can
// swap is ever resolved again.
//
// On Unix the guarantee holds; on other systems (Windows) the same API
// works by path, without it.
package dirfd

import "errors"

// ErrSwapped is returned (wrapped) when a directory is not the one that
// was resolved or created: an entry was replaced, moved or changed between
// two steps by someone else.
var ErrSwapped = errors.New("directory changed while in use")
