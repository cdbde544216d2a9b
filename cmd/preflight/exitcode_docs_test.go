package main

import (
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestDocsExitCodes: the docs site's exit-code page (generated from
// exitTable, kept fresh by TestDocs) and --help's "Exit codes:" block list
// the same codes, and both hold every code of exitcode.go's constants
// (130 and 143: exitSignal plus SIGINT's and SIGTERM's number), so a code
// added to the constants but not to the table fails.
func TestDocsExitCodes(t *testing.T) {
	b, err := os.ReadFile("../../docs/reference/exit-codes.md")
	if err != nil {
		t.Fatal(err)
	}
	var docs []string
	row := regexp.MustCompile(`^\| ([0-9]+(?:, [0-9]+)*) \|`)
	for _, line := range strings.Split(string(b), "\n") {
		if m := row.FindStringSubmatch(line); m != nil {
			docs = append(docs, strings.Split(m[1], ", ")...)
		}
	}
	out, _, code := runMain(t, "--help")
	if code != 0 {
		t.Fatalf("--help: exit %d", code)
	}
	var help []string
	block := out[strings.Index(out, "Exit codes:"):]
	block = block[:strings.Index(block, "After ")]
	for _, m := range regexp.MustCompile(`(?m)^ {4}([0-9]+) `).FindAllStringSubmatch(block, -1) {
		help = append(help, m[1])
	}
	var want []string
	for _, c := range []int{exitOK, exitInternal, exitUsage, exitUnsafe, exitWarn, exitLoss, exitCannotExec, exitNotFound, exitSignal + 2, exitSignal + 15} {
		want = append(want, strconv.Itoa(c))
	}
	if !slices.Equal(docs, want) {
		t.Errorf("docs/reference/exit-codes.md lists %q, want %q", docs, want)
	}
	if !slices.Equal(help, want) {
		t.Errorf("--help lists exit codes %q, want %q", help, want)
	}
}
