package migrate

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// resolve returns p with its symlinks resolved (filepath.EvalSymlinks).
// When p does not exist, its deepest existing ancestor is resolved and the
// missing components are joined to it; a dangling symlink on the way is
// followed to where it points (os.MkdirAll would create that).
func resolve(p string) (string, error) {
	var rest []string
	for hops := 0; ; {
		r, err := filepath.EvalSymlinks(p)
		if err == nil {
			return filepath.Join(append([]string{r}, rest...)...), nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
		if fi, lerr := os.Lstat(p); lerr == nil && fi.Mode()&fs.ModeSymlink != 0 {
			if hops++; hops > 40 {
				return "", fmt.Errorf("resolve %s: too many symlinks", p)
			}
			target, err := os.Readlink(p)
			if err != nil {
				return "", err
			}
			if !filepath.IsAbs(target) {
				target = filepath.Join(filepath.Dir(p), target)
			}
			p = target
			continue
		}
		parent := filepath.Dir(p)
		if parent == p {
			return "", err
		}
		rest = append([]string{filepath.Base(p)}, rest...)
		p = parent
	}
}

// inside reports whether the directory dir (an os.Stat) is p itself or
// one of p's ancestors, compared by device and inode (os.SameFile), not by
// name: a bind mount of dir or a second spelling of it is found too. p has
// its symlinks resolved; ancestors of p that do not exist are skipped.
func inside(p string, dir fs.FileInfo) bool {
	for {
		if fi, err := os.Stat(p); err == nil && os.SameFile(fi, dir) {
			return true
		}
		parent := filepath.Dir(p)
		if parent == p {
			return false
		}
		p = parent
	}
}

// checkOverlap refuses a destination inside the source or a source inside
// the destination, after resolving symlinks of both and comparing
// directories by device and inode. It returns the resolved destination;
// errors wrap ErrBadInput.
func checkOverlap(from, to, fromArg, toArg string) (string, error) {
	rf, err := filepath.EvalSymlinks(from)
	if err != nil {
		return "", fmt.Errorf("%w: resolve --from %s: %w", ErrBadInput, fromArg, err)
	}
	rt, err := resolve(to)
	if err != nil {
		return "", fmt.Errorf("%w: resolve --to %s: %w", ErrBadInput, toArg, err)
	}
	fromFI, err := os.Stat(rf)
	if err != nil {
		return "", fmt.Errorf("%w: --from %s: %w", ErrBadInput, fromArg, err)
	}
	if inside(rt, fromFI) {
		return "", fmt.Errorf("%w: --to %s (%s) is --from %s or inside it: the copy would copy itself", ErrBadInput, toArg, rt, fromArg)
	}
	if toFI, err := os.Stat(rt); err == nil && inside(rf, toFI) {
		return "", fmt.Errorf("%w: --from %s is inside --to %s (%s): the copy would copy itself", ErrBadInput, fromArg, toArg, rt)
	}
	return rt, nil
}
