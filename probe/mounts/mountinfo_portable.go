package mounts

import (
	"bufio"
	"bytes"
	"fmt"
	"strconv"
	"strings"

	"github.com/moby/sys/mountinfo"
)

// parseMountinfoPortable parses mountinfo lines (proc(5),
// /proc/PID/mountinfo) the way mountinfo.GetMountsFromReader does, field
// for field, on any system: that function exists only on Linux, and
// `check --mountinfo FILE` classifies a table saved on a Linux machine
// from Windows or macOS too. Root, mountpoint, fstype and source have their
// octal escapes ("\040") undone. It returns an error for a line with fewer
// than 10 fields, no "-" separator or no major:minor pair.
func parseMountinfoPortable(lines []byte) ([]*mountinfo.Info, error) {
	s := bufio.NewScanner(bytes.NewReader(lines))
	s.Buffer(make([]byte, 0, 64*1024), 1<<20)
	out := []*mountinfo.Info{}
	for s.Scan() {
		text := s.Text()
		f := strings.Split(text, " ")
		if len(f) < 10 {
			return nil, fmt.Errorf("parse mountinfo line %q: not enough fields (%d)", text, len(f))
		}
		sep := len(f) - 4
		for f[sep] != "-" {
			if sep--; sep == 5 {
				return nil, fmt.Errorf("parse mountinfo line %q: missing - separator", text)
			}
		}
		major, minor, ok := strings.Cut(f[2], ":")
		if !ok {
			return nil, fmt.Errorf("parse mountinfo line %q: unexpected major:minor pair %s", text, f[2])
		}
		out = append(out, &mountinfo.Info{
			ID: atoi(f[0]), Parent: atoi(f[1]), Major: atoi(major), Minor: atoi(minor),
			Root: unescapeOctal(f[3]), Mountpoint: unescapeOctal(f[4]), Options: f[5],
			Optional: strings.Join(f[6:sep], " "),
			FSType:   unescapeOctal(f[sep+1]), Source: unescapeOctal(f[sep+2]), VFSOptions: f[sep+3],
		})
	}
	return out, s.Err()
}

// atoi is strconv.Atoi with 0 for anything that is not a number, as
// moby/sys/mountinfo's toInt.
func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}
