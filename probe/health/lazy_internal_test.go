package health

import (
	"regexp"
	"testing"
)

// Every expression compiled on first use compiles: a typo would otherwise
// panic only when a damaged database reaches that line.
func TestLazyRegexpsCompile(t *testing.T) {
	for i, re := range []func() *regexp.Regexp{reTree, reOldTree, rePage, reIndexMsg, reNull, reCheck,
		reFTS5Index, reFTS5Blob, reRTree, reUsing, reDriverErr, reFSProbe} {
		first := re()
		if first == nil || re() != first {
			t.Errorf("lazy regexp %d: not compiled once", i)
		}
	}
}
