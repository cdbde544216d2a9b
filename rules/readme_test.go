package rules_test

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/preflight-sqlite/preflight/policy"
	"github.com/preflight-sqlite/preflight/rules"
)

// readmeRows returns the README's table rows whose first cell is a
// backquoted name: name -> the other cells of each such row, trimmed (a
// finding and a refusal of the same fact share a name).
func readmeRows(t *testing.T) map[string][][]string {
	t.Helper()
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("^\\| `([a-z0-9-]+)` \\|(.*)\\|$")
	out := map[string][][]string{}
	for _, line := range strings.Split(string(b), "\n") {
		m := row.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		var cells []string
		for _, c := range strings.Split(m[2], " | ") {
			cells = append(cells, strings.TrimSpace(c))
		}
		out[m[1]] = append(out[m[1]], cells)
	}
	return out
}

// TestREADMEFindings: every finding ID has a row in the README's findings
// tables (ID, level, meaning, and for manifests the patch) whose level column lists the rule's default
// level ("error / warn" for a rule that is an error in some cases).
func TestREADMEFindings(t *testing.T) {
	rows := readmeRows(t)
	for _, r := range rules.Rules() {
		found := false
		for _, cells := range rows[string(r.ID)] {
			if len(cells) >= 2 && slices.Contains(strings.Split(cells[0], " / "), string(r.Level)) {
				found = true
			}
		}
		if !found {
			t.Errorf("README.md has no findings row for %s at level %s (rows: %q)", r.ID, r.Level, rows[string(r.ID)])
		}
	}
}

// TestREADMERefusals: every refusal reason of convert has a row.
func TestREADMERefusals(t *testing.T) {
	rows := readmeRows(t)
	ids := rules.Refusals()
	if len(ids) < 17 {
		t.Fatalf("Refusals() = %d reasons, want at least 17", len(ids))
	}
	for _, r := range ids {
		if _, ok := rows[string(r.ID)]; !ok {
			t.Errorf("README.md has no row for convert's refusal %s", r.ID)
		}
	}
}

// TestREADMEClasses: every class of the policy table has a row in the
// README's classes table, with the policy's meaning.
func TestREADMEClasses(t *testing.T) {
	rows := readmeRows(t)
	for _, c := range policy.Classes() {
		if len(rows[string(c)]) != 1 {
			t.Errorf("README.md has %d rows for class %s, want 1", len(rows[string(c)]), c)
			continue
		}
		if cells, want := rows[string(c)][0], policy.Of(c).Doc; cells[0] != want {
			t.Errorf("README.md says class %s means %q, the policy table %q", c, cells[0], want)
		}
	}
}

// readmeSection returns the README's lines from the one equal to start up
// to the next line that begins a section of the same or a higher level
// (a "## " heading for a "## " start); a start not found fails the test.
func readmeSection(t *testing.T, start string) []string {
	t.Helper()
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	i := slices.Index(lines, start)
	if i < 0 {
		t.Fatalf("README.md has no line %q", start)
	}
	end := i + 1
	for end < len(lines) && !strings.HasPrefix(lines[end], "## ") {
		end++
	}
	return lines[i:end]
}

// TestREADMEFindingRowsAreIDs: every row of the README's findings and
// refusals tables names a finding or a refusal of the rules table (a row
// left behind by a renamed or removed ID fails), and every refusal has a
// row in the refusals table itself, not only a findings row of its name.
func TestREADMEFindingRowsAreIDs(t *testing.T) {
	known := map[rules.ID]bool{}
	for _, r := range slices.Concat(rules.Rules(), rules.Refusals()) {
		known[r.ID] = true
	}
	row := regexp.MustCompile("^\\| `([a-z0-9-]+)` \\|")
	inRefusals, refusalRows := false, map[rules.ID]bool{}
	for _, line := range readmeSection(t, "## Findings") {
		if strings.HasPrefix(line, "| reason | meaning |") {
			inRefusals = true
		} else if !strings.HasPrefix(line, "|") {
			inRefusals = false
		}
		m := row.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		if id := rules.ID(m[1]); !known[id] {
			t.Errorf("README.md's findings tables have a row for %s, which is no finding or refusal ID", id)
		} else if inRefusals {
			refusalRows[id] = true
		}
	}
	for _, r := range rules.Refusals() {
		if !refusalRows[r.ID] {
			t.Errorf("README.md's refusals table has no row for %s", r.ID)
		}
	}
}
