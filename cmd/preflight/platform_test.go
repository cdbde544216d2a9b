package main

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

// TestLinuxOnly: off Linux, the commands that read this machine's /proc,
// locks or mount table, or exec an application, stop with exit 1 and say
// that they need Linux and what runs instead; compose, kube, writers, and
// check or mounts of a saved table run.
func TestLinuxOnly(t *testing.T) {
	for _, tc := range []struct {
		goos, command string
		mountinfo     bool
		fails         bool
	}{
		{"windows", "run", false, true},
		{"windows", "convert", false, true},
		{"windows", "migrate", false, true},
		{"darwin", "locks", false, true},
		{"darwin", "bundle", false, true},
		{"darwin", "bundle", true, false},
		{"windows", "recover", false, true},
		{"windows", "check", false, true},
		{"windows", "mounts", false, true},
		{"darwin", "check", false, true},
		{"windows", "check", true, false},
		{"windows", "mounts", true, false},
		{"windows", "compose", false, false},
		{"windows", "writers", false, false},
		{"windows", "kube", false, false},
		{"darwin", "kube", false, false},
		{"darwin", "writers", false, false},
		{"linux", "run", false, false},
		{"linux", "check", false, false},
	} {
		err := linuxOnly(tc.goos, tc.command, tc.mountinfo)
		if (err != nil) != tc.fails {
			t.Errorf("linuxOnly(%s, %s, mountinfo %v) = %v; want fails %v", tc.goos, tc.command, tc.mountinfo, err, tc.fails)
			continue
		}
		if err == nil {
			continue
		}
		var stderr bytes.Buffer
		code := report(&stderr, err)
		out := stderr.String()
		if code != exitInternal || !errors.Is(err, errNeedsLinux) ||
			!strings.Contains(out, "preflight: error: "+tc.command+" needs Linux") ||
			!strings.Contains(out, "this is "+tc.goos) || !strings.Contains(out, "preflight: hint: on "+tc.goos+", compose, kube, writers") {
			t.Errorf("linuxOnly(%s, %s): exit %d, stderr:\n%s\nwant exit 1, the command, the system and a hint", tc.goos, tc.command, code, out)
		}
		if wantFlag := tc.command == "check" || tc.command == "mounts" || tc.command == "bundle"; wantFlag != strings.Contains(out, "--mountinfo mounts.txt") {
			t.Errorf("linuxOnly(%s, %s): stderr %q; --mountinfo hint only for check, mounts and bundle", tc.goos, tc.command, out)
		}
	}
}
