package mounts

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/moby/sys/mountinfo"
)

// TestParseMountinfoPortable: the parser used off Linux gives what
// moby/sys/mountinfo gives on Linux, for every mountinfo capture here, in
// /work/shared/cases when present, this machine's own table, and escapes.
func TestParseMountinfoPortable(t *testing.T) {
	files, _ := filepath.Glob("testdata/*mountinfo*")
	files = append(files, "testdata/escaped-spaces.txt", "testdata/stacked-binds.txt", "/proc/self/mountinfo")
	more, _ := filepath.Glob("/work/shared/cases/mountinfo/*.txt")
	files = append(files, more...)
	inputs := map[string][]byte{
		"escapes": []byte(`36 35 98:0 /a\040b /mnt/x\011y\134z rw,noatime master:1 shared:2 - fuse.my\040fs src\040x rw` + "\n" +
			`37 35 0:5 / /tail\040 rw - ext4 /dev/vda rw` + "\n" + `38 35 0:5 / /odd\8x\400 rw - ext4 /dev/vda rw` + "\n"),
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		inputs[f] = b
	}
	for name, b := range inputs {
		if !strings.Contains(string(b), " - ") {
			continue
		}
		want, werr := mountinfo.GetMountsFromReader(bytes.NewReader(b), nil)
		got, gerr := parseMountinfoPortable(b)
		if (werr == nil) != (gerr == nil) {
			t.Errorf("%s: parseMountinfoPortable error %v; GetMountsFromReader error %v", name, gerr, werr)
			continue
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s: parseMountinfoPortable differs from GetMountsFromReader (-want +got):\n%s", name, diff)
		}
	}
	for _, bad := range []string{"1 2 3", "36 35 98:0 / / rw a b c d e", "36 35 980 / / rw - ext4 /dev/x rw"} {
		if _, err := parseMountinfoPortable([]byte(bad)); err == nil {
			t.Errorf("parseMountinfoPortable(%q) = nil error; want one", bad)
		}
	}
}
