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
	refs := farSide(ctx, target{dir: &preflight.DataDir{Path: filepath.Dir(path)}, db: db}, mounts.ClassFUSE, Options{Watch: time.Minute}, &Database{})
	if len(refs) != 1 || !strings.HasPrefix(refs[0].Message, "interrupted during the 1m0s quiet period") || strings.Contains(refs[0].Message, "context canceled") {
		t.Errorf("farSide(canceled context) = %+v, want one refusal saying the quiet period was interrupted", refs)
	}
}
