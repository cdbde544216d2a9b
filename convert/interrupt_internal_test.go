package convert

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/preflight-sqlite/preflight"
	"github.com/preflight-sqlite/preflight/internal/testdb"
	"github.com/preflight-sqlite/preflight/probe/mounts"
)

// An interrupted quiet period is reported as interrupted, not as the
// watch failing with "context canceled".
func TestFarSideInterrupted(t *testing.T) {
	path := filepath.Join(t.TempDir(), "app.db")
	testdb.Make(t, path, "wal", 1)
	db := &preflight.Database{}
	db.Path = path
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	opts := Options{Watch: time.Minute}
	dir := &preflight.DataDir{Path: filepath.Dir(path), Mount: &mounts.Mount{Class: mounts.ClassFUSE}}
	var d Database
	farSide(ctx, convertFacts(&preflight.Report{}, target{dir: dir, db: db}, opts), opts, &d)
	refs := d.Refusals
	if len(refs) != 1 || !strings.HasPrefix(refs[0].Message, "interrupted during the 1m0s quiet period") || strings.Contains(refs[0].Message, "context canceled") {
		t.Errorf("farSide(canceled context) = %+v, want one refusal saying the quiet period was interrupted", refs)
	}
}
