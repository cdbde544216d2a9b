package mounts_test

import (
	"bufio"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/preflight-sqlite/preflight/probe/mounts"
)

// sharedCases is the real-world corpus beside the repository (CI checks it
// out next to the repo). Its files are never edited to fit the code.
var sharedCases = filepath.Join("..", "..", "..", "shared", "cases", "mountinfo")

// caseFile is a saved mount table with "# format: F" and
// "# case: PATH => CLASS[|CLASS...]" lines.
type caseFile struct {
	format string
	cases  []tableCase
}

type tableCase struct {
	path    string
	classes []mounts.Class
}

func readCaseFile(t *testing.T, name string) caseFile {
	t.Helper()
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var cf caseFile
	s := bufio.NewScanner(f)
	s.Buffer(nil, 1<<20)
	for s.Scan() {
		line := s.Text()
		if v, ok := strings.CutPrefix(line, "# format:"); ok {
			cf.format = strings.TrimSpace(v)
		}
		v, ok := strings.CutPrefix(line, "# case:")
		if !ok {
			continue
		}
		p, classes, ok := strings.Cut(v, " => ")
		if !ok {
			t.Fatalf("%s: bad case line %q", name, line)
		}
		c := tableCase{path: strings.TrimLeft(p, " ")}
		for cl := range strings.SplitSeq(strings.TrimSpace(classes), "|") {
			c.classes = append(c.classes, mounts.Class(cl))
		}
		cf.cases = append(cf.cases, c)
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	return cf
}

// runCaseDir checks every "# case:" line of every file in dir.
func runCaseDir(t *testing.T, dir string) {
	files, err := filepath.Glob(filepath.Join(dir, "*.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatalf("no case files in %s", dir)
	}
	for _, name := range files {
		t.Run(filepath.Base(name), func(t *testing.T) {
			cf := readCaseFile(t, name)
			if len(cf.cases) == 0 {
				t.Fatalf("%s has no # case: lines", name)
			}
			tab, err := mounts.ReadFile(name)
			if errors.Is(err, mounts.ErrNotSupported) {
				t.Skipf("ReadFile(%q): %v", name, err)
			}
			if err != nil {
				t.Fatalf("ReadFile(%q) error: %v", name, err)
			}
			t.Logf("ReadFile(%q): format %s, %d mounts, %d skipped", filepath.Base(name), tab.Format, len(tab.Mounts), tab.Skipped)
			if cf.format != "" && string(tab.Format) != cf.format {
				t.Errorf("ReadFile(%q).Format = %q, want %q", name, tab.Format, cf.format)
			}
			for _, c := range cf.cases {
				m, err := tab.Classify(c.path)
				if err != nil {
					t.Errorf("Classify(%q) error: %v", c.path, err)
					continue
				}
				t.Logf("Classify(%q) = %v %q: %s", c.path, m.Class, m.Platform, m.Reason)
				if !slices.Contains(c.classes, m.Class) {
					t.Errorf("Classify(%q) = %v (%s), want one of %v", c.path, m.Class, m.Reason, c.classes)
				}
				if m.Reason == "" || !strings.Contains(m.Reason, m.FSType) {
					t.Errorf("Classify(%q).Reason = %q, want one naming fstype %q", c.path, m.Reason, m.FSType)
				}
			}
		})
	}
}

func TestSharedCases(t *testing.T) {
	if _, err := os.Stat(sharedCases); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("shared case corpus missing at %s: %v", sharedCases, err)
		}
		t.Skipf("SKIPPING THE REAL-WORLD CORPUS: %s not found (%v); check out shared/ beside the repository", sharedCases, err)
	}
	runCaseDir(t, sharedCases)
}

func TestTestdataCases(t *testing.T) {
	runCaseDir(t, "testdata")
}
