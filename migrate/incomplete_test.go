package migrate_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/preflight-sqlite/preflight/internal/testdb"
	"github.com/preflight-sqlite/preflight/migrate"
	"github.com/preflight-sqlite/preflight/probe/docker"
)

// The incomplete marker: gone after a verified copy; a --to holding it
// is refused as an incomplete copy, a --from holding it as bad input.
func TestIncompleteMarker(t *testing.T) {
	from := t.TempDir()
	testdb.Make(t, filepath.Join(from, "app.db"), "delete", 3)
	o := migrate.Options{From: from, Docker: docker.Options{Mode: docker.ModeOff}, AllowUnverified: true}

	o.To = filepath.Join(t.TempDir(), "done")
	res, err := migrate.Run(context.Background(), o)
	if err != nil || res.Incomplete != "" {
		t.Fatalf("Run = %v, incomplete %q; want a verified copy", err, res.Incomplete)
	}
	if _, err := os.Lstat(filepath.Join(o.To, migrate.IncompleteMarker)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s after a verified copy: %v, want removed", migrate.IncompleteMarker, err)
	}

	o.To = t.TempDir()
	if err := os.WriteFile(filepath.Join(o.To, migrate.IncompleteMarker), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	res, err = migrate.Run(context.Background(), o)
	if !errors.Is(err, migrate.ErrNotEmpty) || !strings.Contains(strings.Join(res.Refused, " "), "incomplete copy") {
		t.Errorf("Run into a marked --to = %v (%q), want ErrNotEmpty naming the incomplete copy", err, res.Refused)
	}

	o.From, o.To = o.To, filepath.Join(t.TempDir(), "v")
	if _, err = migrate.Run(context.Background(), o); !errors.Is(err, migrate.ErrBadInput) {
		t.Errorf("Run from a marked --from = %v, want ErrBadInput", err)
	}
}
