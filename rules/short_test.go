package rules_test

import (
	"strings"
	"testing"

	"github.com/preflight-sqlite/preflight/rules"
)

// TestShortEveryRule: every finding of the table has a short reason for
// run's container log, one phrase without a line break, and a docs
// address with its ID as the anchor.
func TestShortEveryRule(t *testing.T) {
	for _, r := range rules.Rules() {
		s := rules.Short(r.ID)
		if s == "" {
			t.Errorf("Short(%q) = \"\", want the rule's short reason (rules/short.go)", r.ID)
		}
		if strings.ContainsAny(s, "\n;") || strings.TrimSpace(s) != s {
			t.Errorf("Short(%q) = %q: want one phrase, no line break or ';', no outer spaces", r.ID, s)
		}
		if u := rules.FindingURL(r.ID); !strings.HasPrefix(u, rules.DocsURL) || !strings.HasSuffix(u, "#"+string(r.ID)) {
			t.Errorf("FindingURL(%q) = %q, want %s...#%s", r.ID, u, rules.DocsURL, r.ID)
		}
	}
	if got := rules.Short("no-such-finding"); got != "" {
		t.Errorf("Short(no-such-finding) = %q, want \"\"", got)
	}
}
