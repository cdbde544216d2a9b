package main

import "testing"

// oneLine escapes only what a terminal would act on: a message that
// quotes "database is locked" beside a command line with a newline keeps
// its quotes as written.
func TestOneLine(t *testing.T) {
	for in, want := range map[string]string{
		`plain "quoted" \ text`:           `plain "quoted" \ text`,
		"holds \"database is locked\"\n!": `holds "database is locked"\n!`,
		"ansi \x1b[31mred":                `ansi \x1b[31mred`,
		"bidi \u202egnp.exe":              `bidi \u202egnp.exe`,
		"bad \xff byte":                   `bad \xff byte`,
		"C1 \u009b":                       `C1 \u009b`,
	} {
		if got := oneLine(in); got != want {
			t.Errorf("oneLine(%q) = %q, want %q", in, got, want)
		}
	}
}
