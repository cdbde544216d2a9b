package main

import (
	"testing"

	"github.com/preflight-sqlite/preflight"
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
