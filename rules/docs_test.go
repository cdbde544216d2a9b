package rules_test

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/preflight-sqlite/preflight/policy"
	"github.com/preflight-sqlite/preflight/rules"
)

// The findings are documented twice on the docs site: the generated
// reference (docs/reference/findings.md, one entry per ID from this
// table; TestDocs in cmd/preflight keeps it fresh) and the hand-kept
// tables of the topic pages (docs/findings-table.md, check.md's database
// health, kube-manifests.md's manifest findings, convert.md's refusals),
// which say more than a rule's Doc. These tests keep both in step with
// the rules table.

// docsTable is a row of a hand-kept findings table ("| ID | level | ...")
// or refusals table ("| reason | meaning |") on a docs page.
type docsTable struct {
	page    string
	refusal bool
	id      string
	cells   []string // the cells after the ID, trimmed
}

// handPages are the docs pages written by hand (docs/reference/ is
// generated, apart from json.md, which has no findings table).
func handPages(t *testing.T) []string {
	t.Helper()
	var pages []string
	for _, glob := range []string{"../docs/*.md", "../docs/guides/*.md"} {
		p, err := filepath.Glob(glob)
		if err != nil {
			t.Fatal(err)
		}
		pages = append(pages, p...)
	}
	if len(pages) < 10 {
		t.Fatalf("%d hand-written docs pages, want at least 10", len(pages))
	}
	return pages
}

// docsRows returns every row of the hand-kept findings and refusals
// tables whose first cell is a backquoted name.
func docsRows(t *testing.T) []docsTable {
	t.Helper()
	row := regexp.MustCompile("^\\| `([a-z0-9-]+)` \\|(.*)\\|$")
	var out []docsTable
	for _, p := range handPages(t) {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		kind := "" // "finding", "refusal", or "" outside such a table
		for _, line := range strings.Split(string(b), "\n") {
			switch {
			case strings.HasPrefix(line, "| ID | level |"):
				kind = "finding"
				continue
			case strings.HasPrefix(line, "| reason | meaning |"):
				kind = "refusal"
				continue
			case !strings.HasPrefix(line, "|"):
				kind = ""
				continue
			}
			m := row.FindStringSubmatch(line)
			if m == nil || kind == "" {
				continue
			}
			var cells []string
			for _, c := range strings.Split(m[2], " | ") {
				cells = append(cells, strings.TrimSpace(c))
			}
			out = append(out, docsTable{page: filepath.Base(p), refusal: kind == "refusal", id: m[1], cells: cells})
		}
	}
	return out
}

// reference returns the generated findings reference's entries: ID ->
// level, for the findings and for the refusals section.
func reference(t *testing.T) (findings, refusals map[string]string) {
	t.Helper()
	b, err := os.ReadFile("../docs/reference/findings.md")
	if err != nil {
		t.Fatal(err)
	}
	findings, refusals = map[string]string{}, map[string]string{}
	head := regexp.MustCompile(`^### ([a-z0-9-]+) \{#[a-z0-9-]+\}$`)
	level := regexp.MustCompile(`^\*\*Level:\*\* ([a-z]+) `)
	in, id := findings, ""
	for _, line := range strings.Split(string(b), "\n") {
		if line == "## Convert's refusals" {
			in = refusals
		}
		if m := head.FindStringSubmatch(line); m != nil {
			id = m[1]
		} else if m := level.FindStringSubmatch(line); m != nil && id != "" {
			in[id] = m[1]
			id = ""
		}
	}
	return findings, refusals
}

// TestDocsFindings: every finding ID has an entry at its level in the
// generated reference, and a row in a hand-kept findings table whose
// level column lists the rule's default level ("error / warn" for a rule
// that is an error in some cases).
func TestDocsFindings(t *testing.T) {
	ref, _ := reference(t)
	rows := docsRows(t)
	for _, r := range rules.Rules() {
		if got := ref[string(r.ID)]; got != string(r.Level) {
			t.Errorf("docs/reference/findings.md gives %s level %q, the rules table %q: run go test ./cmd/preflight -run TestDocs -update", r.ID, got, r.Level)
		}
		found := false
		for _, row := range rows {
			if !row.refusal && row.id == string(r.ID) && len(row.cells) >= 2 && slices.Contains(strings.Split(row.cells[0], " / "), string(r.Level)) {
				found = true
			}
		}
		if !found {
			t.Errorf("no hand-kept findings table in docs/ has a row for %s at level %s", r.ID, r.Level)
		}
	}
}

// TestDocsRefusals: every refusal reason of convert has an entry in the
// generated reference's refusals section and a row in a refusals table.
func TestDocsRefusals(t *testing.T) {
	_, ref := reference(t)
	rows := docsRows(t)
	ids := rules.Refusals()
	if len(ids) < 17 {
		t.Fatalf("Refusals() = %d reasons, want at least 17", len(ids))
	}
	for _, r := range ids {
		if _, ok := ref[string(r.ID)]; !ok {
			t.Errorf("docs/reference/findings.md has no refusal entry for %s: run go test ./cmd/preflight -run TestDocs -update", r.ID)
		}
		if !slices.ContainsFunc(rows, func(row docsTable) bool { return row.refusal && row.id == string(r.ID) }) {
			t.Errorf("no refusals table in docs/ has a row for convert's refusal %s", r.ID)
		}
	}
}

// TestDocsFindingRowsAreIDs: every row of the hand-kept findings tables
// names a finding of the rules table, and every row of a refusals table a
// refusal (a row left behind by a renamed or removed ID fails).
func TestDocsFindingRowsAreIDs(t *testing.T) {
	findings, refusals := map[rules.ID]bool{}, map[rules.ID]bool{}
	for _, r := range rules.Rules() {
		findings[r.ID] = true
	}
	for _, r := range rules.Refusals() {
		refusals[r.ID] = true
	}
	rows := docsRows(t)
	if len(rows) < len(findings) {
		t.Fatalf("%d rows in the hand-kept findings and refusals tables, want at least %d", len(rows), len(findings))
	}
	for _, row := range rows {
		if id := rules.ID(row.id); row.refusal && !refusals[id] {
			t.Errorf("docs/%s's refusals table has a row for %s, which is no refusal", row.page, id)
		} else if !row.refusal && !findings[id] {
			t.Errorf("docs/%s's findings table has a row for %s, which is no finding", row.page, id)
		}
	}
}

// TestDocsClasses: every class of the policy table has one row in
// docs/filesystems.md, with the policy's meaning.
func TestDocsClasses(t *testing.T) {
	b, err := os.ReadFile("../docs/filesystems.md")
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("^\\| `([a-z0-9-]+)` \\| ([^|]*) \\|")
	rows := map[string][]string{}
	for _, line := range strings.Split(string(b), "\n") {
		if m := row.FindStringSubmatch(line); m != nil {
			rows[m[1]] = append(rows[m[1]], m[2])
		}
	}
	for _, c := range policy.Classes() {
		if len(rows[string(c)]) != 1 {
			t.Errorf("docs/filesystems.md has %d rows for class %s, want 1", len(rows[string(c)]), c)
			continue
		}
		if got, want := rows[string(c)][0], policy.Of(c).Doc; got != want {
			t.Errorf("docs/filesystems.md says class %s means %q, the policy table %q", c, got, want)
		}
	}
}

// TestEntryCommands: every entry names the commands that raise it, and a
// rule that needs a live cluster's facts names kube audit alone (kube -f
// reads no pods and no bound PersistentVolumes), a duplicate key kube
// alone (the API server's JSON has none).
func TestEntryCommands(t *testing.T) {
	for _, e := range rules.Entries() {
		if len(e.Commands) == 0 {
			t.Errorf("entry %s: no command raises it", e.ID)
		}
	}
	for id, want := range map[rules.ID][]string{
		rules.LivePodsOnSQLiteClaim:      {"kube audit"},
		rules.SQLiteClaimOnNetwork:       {"kube audit"},
		rules.DuplicateManifestKey:       {"kube"},
		rules.ReplicasOnSQLiteClaim:      {"check", "run", "convert", "kube", "kube audit"},
		rules.RollingUpdateOnSQLiteClaim: {"check", "run", "convert", "kube", "kube audit"},
		rules.RWXOnNetworkClass:          {"kube", "kube audit"},
	} {
		e, ok := rules.Lookup(id)
		if !ok || !slices.Equal(e.Commands, want) {
			t.Errorf("Lookup(%s) commands = %q (found %v), want %q", id, e.Commands, ok, want)
		}
	}
}
