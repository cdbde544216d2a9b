package main

import (
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestREADMEExitCodes: the README's exit-code table and --help's
// "Exit codes:" block list the same codes, and both hold every code of
// exitcode.go (130 and 143: exitSignal plus SIGINT's and SIGTERM's number).
func TestREADMEExitCodes(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	var readme []string
	in := false
	row := regexp.MustCompile(`^\| ([0-9]+(?:, [0-9]+)*) \|`)
	for _, line := range strings.Split(string(b), "\n") {
		switch {
		case line == "## Exit codes":
			in = true
		case strings.HasPrefix(line, "## "):
			in = false
		case in:
			if m := row.FindStringSubmatch(line); m != nil {
				readme = append(readme, strings.Split(m[1], ", ")...)
			}
		}
	}
	out, _, code := runMain(t, "--help")
	if code != 0 {
		t.Fatalf("--help: exit %d", code)
	}
	var help []string
	block := out[strings.Index(out, "Exit codes:"):]
	block = block[:strings.Index(block, "Flags:")]
	for _, m := range regexp.MustCompile(`(?m)^ {4}([0-9]+) `).FindAllStringSubmatch(block, -1) {
		help = append(help, m[1])
	}
	var want []string
	for _, c := range []int{exitOK, exitInternal, exitUsage, exitUnsafe, exitWarn, exitLoss, exitCannotExec, exitNotFound, exitSignal + 2, exitSignal + 15} {
		want = append(want, strconv.Itoa(c))
	}
	if !slices.Equal(readme, want) {
		t.Errorf("README.md's exit-code table lists %q, want %q", readme, want)
	}
	if !slices.Equal(help, want) {
		t.Errorf("--help lists exit codes %q, want %q", help, want)
	}
}
