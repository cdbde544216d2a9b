package policy

import "github.com/preflight-sqlite/preflight/probe/mounts"

// AddClass gives class c the meaning m in the table until the returned
// function is called: a class added later, for the tests that every class
// is judged by its policy entry.
func AddClass(c mounts.Class, m Meaning) (remove func()) {
	table[c] = m
	return func() { delete(table, c) }
}
