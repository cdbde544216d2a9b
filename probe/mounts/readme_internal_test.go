package mounts

import (
	"os"
	"strings"
	"testing"
)

// TestREADMEFSTypes: every fstype of the network and local tables appears,
// as `fstype`, in the fstypes column of its class's row of the README's
// "Filesystem classes" table, so a new map entry cannot go undocumented.
func TestREADMEFSTypes(t *testing.T) {
	rows := readmeClassRows(t)
	for _, tc := range []struct {
		class Class
		types map[string]bool
	}{{ClassNetwork, networkTypes}, {ClassLocal, localTypes}} {
		row, ok := rows[tc.class]
		if !ok {
			t.Errorf("README.md has no row for class %s", tc.class)
			continue
		}
		for fstype := range tc.types {
			if !strings.Contains(row, "`"+fstype+"`") {
				t.Errorf("README.md's %s row does not list `%s`", tc.class, fstype)
			}
		}
	}
}

// readmeClassRows returns the fstypes cell of each row of the README's
// "## Filesystem classes" table, by the class in its first cell.
func readmeClassRows(t *testing.T) map[Class]string {
	t.Helper()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "\n## Filesystem classes\n")
	if !ok {
		t.Fatal("README.md has no \"## Filesystem classes\" section")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	rows := map[Class]string{}
	for _, line := range strings.Split(section, "\n") {
		cells := strings.Split(line, " | ")
		if len(cells) < 3 || !strings.HasPrefix(cells[0], "| `") {
			continue
		}
		rows[Class(strings.Trim(cells[0], "| `"))] = strings.Join(cells[2:], " | ")
	}
	return rows
}
