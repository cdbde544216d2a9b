package mounts

import (
	"os"
	"strings"
	"testing"
)

// TestDocsFSTypes: every fstype of the network and local tables appears,
// as `fstype`, in the fstypes column of its class's row of the classes
// table on the docs site (docs/filesystems.md), so a new map entry cannot
// go undocumented.
func TestDocsFSTypes(t *testing.T) {
	rows := docsClassRows(t)
	for _, tc := range []struct {
		class Class
		types map[string]bool
	}{{ClassNetwork, networkTypes}, {ClassLocal, localTypes}} {
		row, ok := rows[tc.class]
		if !ok {
			t.Errorf("docs/filesystems.md has no row for class %s", tc.class)
			continue
		}
		for fstype := range tc.types {
			if !strings.Contains(row, "`"+fstype+"`") {
				t.Errorf("docs/filesystems.md's %s row does not list `%s`", tc.class, fstype)
			}
		}
	}
}

// docsClassRows returns the fstypes cell of each row of the classes
// table in docs/filesystems.md, by the class in its first cell.
func docsClassRows(t *testing.T) map[Class]string {
	t.Helper()
	b, err := os.ReadFile("../../docs/filesystems.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := map[Class]string{}
	for _, line := range strings.Split(string(b), "\n") {
		cells := strings.Split(line, " | ")
		if len(cells) < 3 || !strings.HasPrefix(cells[0], "| `") {
			continue
		}
		rows[Class(strings.Trim(cells[0], "| `"))] = strings.Join(cells[2:], " | ")
	}
	return rows
}
