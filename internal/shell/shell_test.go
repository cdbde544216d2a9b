package shell_test

import (
	"os/exec"
	"testing"

	"github.com/preflight-sqlite/preflight/internal/shell"
)

// TestQuote round-trips awkward words through a real sh.
func TestQuote(t *testing.T) {
	for _, s := range []string{"/data/app.db", "", "a b", "it's", "$HOME", "a\nb", "x;rm -rf /", `back\slash`, "ünï"} {
		out, err := exec.Command("sh", "-c", "printf %s "+shell.Quote(s)).Output()
		if err != nil || string(out) != s {
			t.Errorf("sh printf %s = %q, %v; want %q", shell.Quote(s), out, err, s)
		}
	}
	if got := shell.Quote("/data/app.db"); got != "/data/app.db" {
		t.Errorf("Quote(/data/app.db) = %q, want it unquoted", got)
	}
}
