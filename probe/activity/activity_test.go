package activity_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/preflight-sqlite/preflight/internal/fuseloop"
	"github.com/preflight-sqlite/preflight/probe/activity"
)

// sqlite3 starts Debian's sqlite3 on db with a pipe kept open: a live
// connection in another process.
func sqlite3(t *testing.T, db string) io.WriteCloser {
	t.Helper()
	if _, err := exec.LookPath("sqlite3"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("sqlite3 not on PATH")
		}
		t.Skip("sqlite3 not on PATH: install Debian's sqlite3 to run this test")
	}
	cmd := exec.Command("sqlite3", db)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { in.Close(); cmd.Wait() })
	fmt.Fprintln(in, "pragma journal_mode=wal; pragma wal_autocheckpoint=0; create table if not exists t(a); insert into t values (0);")
	waitFor(t, db+"-shm")
	return in
}

func waitFor(t *testing.T, path string) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(path); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not appear within 5s", path)
		}
	}
}

// writeLoop inserts a row every 50 ms until the test ends.
func writeLoop(t *testing.T, in io.Writer) {
	done := make(chan struct{})
	t.Cleanup(func() { close(done) })
	go func() {
		for i := 1; ; i++ {
			select {
			case <-done:
				return
			case <-time.After(50 * time.Millisecond):
				fmt.Fprintf(in, "insert into t values (%d);\n", i)
			}
		}
	}()
}

func TestWatchSeesWriter(t *testing.T) {
	db := filepath.Join(t.TempDir(), "app.db")
	in := sqlite3(t, db)
	time.Sleep(100 * time.Millisecond)

	quiet, err := activity.Watch(context.Background(), db, 300*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if quiet.Changed {
		t.Errorf("Watch(%s) on an idle connection: changed %v, want quiet", db, quiet.What)
	}
	if !quiet.After.HasIndex {
		t.Errorf("Watch(%s): no wal-index header read from -shm", db)
	}

	writeLoop(t, in)
	busy, err := activity.Watch(context.Background(), db, 400*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if !busy.Changed || busy.After.Change == busy.Before.Change {
		t.Errorf("Watch(%s) with a writer: changed=%v what=%v change %d -> %d; want the wal-index counter to move",
			db, busy.Changed, busy.What, busy.Before.Change, busy.After.Change)
	}
}

// TestWatchAcrossShare writes through the backing directory of a FUSE
// loopback mount and watches through the mount, as a host writer behind a
// VM share would be seen: no process or lock is visible, but the files move.
func TestWatchAcrossShare(t *testing.T) {
	if os.Geteuid() != 0 {
		skipOrFail(t, "needs root to mount FUSE")
	}
	if _, err := os.Stat("/dev/fuse"); err != nil {
		skipOrFail(t, "needs /dev/fuse")
	}
	backing, mnt := t.TempDir(), t.TempDir()
	unmount, err := fuseloop.Mount(backing, mnt, "grpcfuse")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unmount() })
	in := sqlite3(t, filepath.Join(backing, "app.db"))
	writeLoop(t, in)

	r, err := activity.Watch(context.Background(), filepath.Join(mnt, "app.db"), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if !r.Changed {
		t.Errorf("Watch through the FUSE mount while the backing file is written: no change seen")
	}
}

func skipOrFail(t *testing.T, why string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatal(why)
	}
	t.Skip(why)
}

func TestParseIndexHeader(t *testing.T) {
	hdr := make([]byte, 48)
	copy(hdr, []byte{0x18, 0xe2, 0x2d, 0x00}) // 3007000 little-endian
	hdr[8], hdr[16] = 7, 3
	if c, m, ok := activity.ParseIndexHeader(hdr); !ok || c != 7 || m != 3 {
		t.Errorf("ParseIndexHeader(le) = %d, %d, %v; want 7, 3, true", c, m, ok)
	}
	if _, _, ok := activity.ParseIndexHeader(hdr[:47]); ok {
		t.Errorf("ParseIndexHeader(47 bytes) ok, want not ok")
	}
	if _, _, ok := activity.ParseIndexHeader(make([]byte, 48)); ok {
		t.Errorf("ParseIndexHeader(zeros) ok, want not ok")
	}
}

func TestWatchCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := activity.Watch(ctx, filepath.Join(t.TempDir(), "none.db"), time.Hour); err == nil {
		t.Errorf("Watch with a cancelled context returned no error")
	}
}
