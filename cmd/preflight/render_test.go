package main

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/preflight-sqlite/preflight"
	"github.com/preflight-sqlite/preflight/rules"
)

func TestProbesChecked(t *testing.T) {
	for _, tc := range []struct {
		p    preflight.WriterProbes
		want string
	}{
		{preflight.WriterProbes{Processes: "ran", Locks: "ran", Docker: "ran", Activity: "off"}, "processes, locks, containers checked"},
		{preflight.WriterProbes{Processes: "ran", Locks: "ran", Docker: "off", Activity: "off"}, "processes, locks checked; not checked: containers (--docker off)"},
		{preflight.WriterProbes{Processes: "unsure", Locks: "ran", Docker: "off", Activity: "off"}, "processes (partly), locks checked; not checked: containers (--docker off)"},
		{preflight.WriterProbes{Processes: "ran", Locks: "ran", Docker: "no-daemon", Activity: "quiet"}, "processes, locks, containers (no Docker engine here), file activity checked"},
		{preflight.WriterProbes{Processes: "unsupported", Locks: "unsupported", Docker: "unreachable", Activity: "off"}, "nothing checked; not checked: processes (unsupported), locks (unsupported), containers (unreachable)"},
	} {
		if got := probesChecked(tc.p); got != tc.want {
			t.Errorf("probesChecked(%+v) = %q, want %q", tc.p, got, tc.want)
		}
	}
}

// TestFindingLineBound: at container start, run logs each finding as one
// line of at most 200 characters (ID, path, short reason, docs link), for
// every rule of the table at its worst level, on a typical path.
func TestFindingLineBound(t *testing.T) {
	for _, r := range preflight.Rules() {
		f := preflight.Finding{ID: r.ID, Level: preflight.LevelError, Path: "/data/app.db", Message: strings.Repeat("long message ", 100), Remedy: []string{"remedy"}}
		line := findingLine(f)
		if n := utf8.RuneCountInString(line); n > 200 {
			t.Errorf("findingLine(%s) is %d characters, want at most 200: %s", r.ID, n, line)
		}
		if !strings.Contains(line, "/data/app.db") || !strings.Contains(line, rules.FindingURL(r.ID)) || strings.Contains(line, "long message") {
			t.Errorf("findingLine(%s) = %q, want the path, the short reason and %s", r.ID, line, rules.FindingURL(r.ID))
		}
	}
}
