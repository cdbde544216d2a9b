package mounts

import (
	"bytes"
	"fmt"
	"os"

	"github.com/moby/sys/mountinfo"
)

// selfMountinfo is the mount table of the calling process (proc(5)).
const selfMountinfo = "/proc/self/mountinfo"

// ReadSelf reads and parses the mount table of the calling process from
// /proc/self/mountinfo (proc(5)), as seen from its mount namespace. It is
// Linux-only; on other systems it returns an error wrapping
// [ErrNotSupported].
func ReadSelf() (*Table, error) {
	t, err := ReadFile(selfMountinfo)
	if err != nil {
		return nil, err
	}
	t.GVisor = underGVisor()
	return t, nil
}

// procVersion is the kernel banner (proc(5)); gVisor's sentry writes
// "Linux version 4.19.0-gvisor ...".
const procVersion = "/proc/version"

// underGVisor reports whether /proc/version names gVisor's kernel. An
// unreadable banner is not gVisor.
func underGVisor() bool {
	b, err := os.ReadFile(procVersion)
	return err == nil && IsGVisorBanner(string(b))
}

// ReadSelfFor reads /proc/self/mountinfo like [ReadSelf] but keeps only the
// mounts that can matter: "/", the mounts at or above each path in holding
// (the mount that holds it), the mounts at or below each path in under
// (also single-file binds inside a data directory), and the mounts that
// hold the upper directory of a kept overlay (see [Table.ClassifyMount]:
// the table is read again for those, at most once per level of overlay).
// Paths must be absolute and clean, with symlinks resolved (see
// [ResolvePath]). Skipping the other lines before they are parsed keeps the
// cost of a check low on hosts with thousands of mounts.
func ReadSelfFor(holding, under []string) (*Table, error) {
	holding = append([]string(nil), holding...)
	for range maxOverlayDepth {
		t, err := readSelfKeeping(holding, under)
		if err != nil {
			return nil, err
		}
		more := t.missingUppers(holding)
		if len(more) == 0 {
			t.GVisor = underGVisor()
			return t, nil
		}
		holding = append(holding, more...)
	}
	t, err := readSelfKeeping(holding, under)
	if err != nil {
		return nil, err
	}
	t.GVisor = underGVisor()
	return t, nil
}

// readSelfKeeping parses /proc/self/mountinfo, keeping the lines relevant
// to holding and under.
func readSelfKeeping(holding, under []string) (*Table, error) {
	f, err := os.Open(selfMountinfo)
	if err != nil {
		return nil, fmt.Errorf("read mount table: %w", err)
	}
	defer f.Close()
	p := newParser()
	p.keep = func(raw []byte) bool { return relevant(raw, holding, under) }
	if err := p.run(f); err != nil {
		return nil, fmt.Errorf("read mount table %s: %w", selfMountinfo, err)
	}
	return p.table()
}

// parseMountinfo parses mountinfo lines with the moby/sys/mountinfo
// parser, which exists only on Linux.
func parseMountinfo(lines []byte) ([]*mountinfo.Info, error) {
	return mountinfo.GetMountsFromReader(bytes.NewReader(lines), nil)
}
