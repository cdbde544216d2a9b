package convert_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/preflight-sqlite/preflight"
	"github.com/preflight-sqlite/preflight/convert"
	"github.com/preflight-sqlite/preflight/internal/dirfd"
	"github.com/preflight-sqlite/preflight/internal/testdb"
	"github.com/preflight-sqlite/preflight/probe/docker"
)

// nobody is the uid and gid of the data directory's owner in the swap
// tests: another user than the root that converts.
const nobody = 65534

func init() {
	if dir := os.Getenv("CONVERT_TEST_SWAP_DIR"); dir != "" {
		err := swapLoop(dir, os.Getenv("CONVERT_TEST_SWAP_TARGET"), os.Getenv("CONVERT_TEST_SWAP_OUTER"), os.Getenv("CONVERT_TEST_SWAP_ON"))
		if err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
}

// swapLoop is the body of the data directory owner's process: it watches
// dir with inotify and, for each directory created in it, renames that
// directory away (NAME.moved) and puts a symlink to target in its place.
// With outer set it instead waits for the first file opened or created in
// dir and swaps outer (dir itself, or one of its parents) the same way.
// With on set, the directories created are swapped only when a file named
// on is opened in dir (later in the copy). It prints "watching", then
// "swapped NAME" per swap, and exits when stdin closes.
func swapLoop(dir, target, outer, on string) error {
	var pending []string
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC)
	if err != nil {
		return err
	}
	if _, err := unix.InotifyAddWatch(fd, dir, unix.IN_CREATE|unix.IN_OPEN); err != nil {
		return err
	}
	fmt.Println("watching")
	var mu sync.Mutex // held during a swap: stdin closing waits for it
	go func() {
		io.Copy(io.Discard, os.Stdin)
		mu.Lock()
		os.Exit(0)
	}()
	buf := make([]byte, 64<<10)
	for {
		n, err := unix.Read(fd, buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
			name := strings.TrimRight(string(buf[off+unix.SizeofInotifyEvent:off+unix.SizeofInotifyEvent+int(ev.Len)]), "\x00")
			off += unix.SizeofInotifyEvent + int(ev.Len)
			mu.Lock()
			switch {
			case outer != "" && name != "":
				if err := swap(outer, target); err != nil {
					fmt.Println("error:", err)
				}
				fmt.Println("swapped", outer)
				outer = "" // once
			case outer == "" && on != "" && ev.Mask&unix.IN_ISDIR != 0 && ev.Mask&unix.IN_CREATE != 0 && !strings.HasSuffix(name, ".moved"):
				pending = append(pending, name)
			case on != "" && name == on && ev.Mask&unix.IN_OPEN != 0:
				for _, name := range pending {
					if err := swap(filepath.Join(dir, name), target); err != nil {
						fmt.Println("error:", err)
					} else {
						fmt.Println("swapped", name)
					}
				}
				pending = nil
			case outer == "" && on == "" && ev.Mask&unix.IN_ISDIR != 0 && ev.Mask&unix.IN_CREATE != 0 && !strings.HasSuffix(name, ".moved"):
				if err := swap(filepath.Join(dir, name), target); err != nil {
					fmt.Println("error:", err)
				} else {
					fmt.Println("swapped", name)
				}
			}
			mu.Unlock()
		}
	}
}

// swap puts a symlink to target at p and p's directory at p.moved, in one
// step (renameat2 RENAME_EXCHANGE) where the filesystem can, so that no
// one sees p missing in between.
func swap(p, target string) error {
	if err := os.Symlink(target, p+".moved"); err != nil {
		return err
	}
	err := unix.Renameat2(unix.AT_FDCWD, p+".moved", unix.AT_FDCWD, p, unix.RENAME_EXCHANGE)
	if err == nil {
		return nil
	}
	os.Remove(p + ".moved")
	if err := os.Rename(p, p+".moved"); err != nil {
		return err
	}
	return os.Symlink(target, p)
}

// attacker is the data directory owner's process of a swap test.
type attacker struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
}

// startAttacker runs swapLoop as uid 65534 (the test binary copied where
// that user can run it) over dir, and waits until it watches.
func startAttacker(t *testing.T, base, dir, target, outer, on string) *attacker {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(base, "owner.test")
	src, err := os.Open(self)
	if err != nil {
		t.Fatal(err)
	}
	dst, err := os.OpenFile(bin, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	_, err = io.Copy(dst, src)
	src.Close()
	if cerr := dst.Close(); err != nil || cerr != nil {
		t.Fatalf("copy the test binary: %v %v", err, cerr)
	}
	cmd := exec.Command(bin)
	cmd.Dir = base
	cmd.Env = append(os.Environ(), "CONVERT_TEST_SWAP_DIR="+dir, "CONVERT_TEST_SWAP_TARGET="+target, "CONVERT_TEST_SWAP_OUTER="+outer, "CONVERT_TEST_SWAP_ON="+on)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	cmd.Stderr = os.Stderr
	a := &attacker{cmd: cmd}
	if a.in, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	a.out = bufio.NewReader(stdout)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.in.Close(); cmd.Wait() })
	if line, err := a.out.ReadString('\n'); err != nil || line != "watching\n" {
		t.Fatalf("owner process: %q, %v", line, err)
	}
	return a
}

// stop ends the process and returns what it swapped.
func (a *attacker) stop(t *testing.T) []string {
	t.Helper()
	a.in.Close()
	var swapped []string
	for {
		line, err := a.out.ReadString('\n')
		if s, ok := strings.CutPrefix(strings.TrimSpace(line), "swapped "); ok {
			swapped = append(swapped, s)
		} else if line != "" {
			t.Logf("owner process: %s", strings.TrimSpace(line))
		}
		if err != nil {
			break
		}
	}
	a.cmd.Wait()
	return swapped
}

// swapLayout makes, under a fresh directory others can search: data,
// owned by uid 65534 (the application's user), and target, root's alone
// (mode 0700), where nothing may appear.
func swapLayout(t *testing.T) (base, data, target string) {
	t.Helper()
	requireRoot(t)
	base, err := os.MkdirTemp("", "preflight-priv-swap-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	data, target = filepath.Join(base, "data"), filepath.Join(base, "target")
	for _, err := range []error{os.Chmod(base, 0o755), os.Mkdir(data, 0o755), os.Chown(data, nobody, nobody), os.Mkdir(target, 0o700)} {
		if err != nil {
			t.Fatal(err)
		}
	}
	return base, data, target
}

// bigWAL makes path a WAL database of about mainMiB MiB in the database
// file and walMiB MiB more only in its -wal, as a crash leaves them.
func bigWAL(t *testing.T, path string, mainMiB, walMiB int) {
	t.Helper()
	src := filepath.Join(t.TempDir(), "src.db")
	db, err := sql.Open("sqlite", testdb.DSN(src, "_pragma=journal_mode(WAL)", "_pragma=wal_autocheckpoint(0)"))
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	defer db.Close()
	fill := func(mib int) {
		mustExec(t, db, fmt.Sprintf(`with recursive c(x) as (select 1 union all select x+1 from c where x<%d) insert into b(v) select randomblob(4000) from c`, mib*256))
	}
	mustExec(t, db, `create table b(id integer primary key, v blob)`)
	fill(mainMiB)
	mustExec(t, db, `pragma wal_checkpoint(truncate)`)
	fill(walMiB)
	for _, s := range []string{"", "-wal"} {
		in, err := os.Open(src + s)
		if err != nil {
			t.Fatal(err)
		}
		out, err := os.Create(path + s)
		if err == nil {
			_, err = io.Copy(out, in)
			if cerr := out.Close(); err == nil {
				err = cerr
			}
		}
		in.Close()
		if err != nil {
			t.Fatal(err)
		}
		os.Chown(path+s, nobody, nobody)
	}
}

// sums returns the SHA-256 of path, -wal and -journal ("" when absent).
func sums(t *testing.T, path string) map[string]string {
	t.Helper()
	m := map[string]string{}
	for _, s := range []string{"", "-wal", "-journal"} {
		f, err := os.Open(path + s)
		if err != nil {
			m[s] = ""
			continue
		}
		h := sha256.New()
		_, err = io.Copy(h, f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		m[s] = hex.EncodeToString(h.Sum(nil))
	}
	return m
}

// wantSwapOutcome checks a conversion that ran while the data directory's
// owner swapped its directories: nothing in target, and either a refusal
// that says a directory changed with the database as it was, or a
// conversion whose backup is a real directory holding the files as they
// were.
func wantSwapOutcome(t *testing.T, d convert.Database, path, target string, before map[string]string) {
	t.Helper()
	if ents, err := os.ReadDir(target); err != nil || len(ents) != 0 {
		t.Errorf("the root-only directory holds %v (%v), want nothing", ents, err)
	}
	switch d.Status {
	case convert.StatusFailed:
		if !strings.Contains(d.Error, dirfd.ErrSwapped.Error()) || !strings.Contains(d.Error, "not touched") {
			t.Errorf("error %q, want that a directory changed and the database was not touched", d.Error)
		}
		if got := sums(t, path); fmt.Sprint(got) != fmt.Sprint(before) {
			t.Errorf("database changed after a refusal: %v, want %v", got, before)
		}
	case convert.StatusConverted:
		fi, err := os.Lstat(d.Backup.Dir)
		if err != nil || !fi.IsDir() {
			t.Fatalf("backup %s: %v, %v; want a directory", d.Backup.Dir, fi, err)
		}
		got := sums(t, filepath.Join(d.Backup.Dir, filepath.Base(path)))
		if got[""] != before[""] || got["-wal"] != before["-wal"] {
			t.Errorf("backup %v, want the files as they were %v", got, before)
		}
	default:
		t.Errorf("status %q (%s, %+v), want failed or converted", d.Status, d.Error, d.Refusals)
	}
}

// The data directory's owner swaps each directory convert creates there
// for a symlink to a root-only directory while a database with a WAL of
// 256 MiB is backed up: nothing may be created through the symlink. The
// swap comes right after the directory is created, or once the copy has
// begun (when the backup opens the -wal to read it).
func TestConvertBackupDirSwapped(t *testing.T) {
	for _, on := range []string{"", "x-wal"} {
		t.Run("on="+on, func(t *testing.T) {
			base, data, target := swapLayout(t)
			path := filepath.Join(data, "x")
			bigWAL(t, path, 16, 256)
			before := sums(t, path)
			a := startAttacker(t, base, data, target, "", on)
			res := run(t, opts(path))
			swapped := a.stop(t)
			if len(swapped) == 0 || len(res.Databases) != 1 {
				t.Fatalf("the owner process swapped %v; result %+v", swapped, res.Databases)
			}
			d := res.Databases[0]
			t.Logf("swapped %v; convert: %s %s", swapped, d.Status, d.Error)
			wantSwapOutcome(t, d, path, target, before)
		})
	}
}

// The same over a FUSE share, through the entrypoint's --on-unsafe
// convert policy.
func TestPolicyBackupDirSwappedFUSE(t *testing.T) {
	base, _, target := swapLayout(t)
	backing, mnt := grpcfuse(t)
	// The owner reaches the mountpoint; the backing directory is its.
	if err := os.Chmod(filepath.Dir(mnt), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(backing, nobody, nobody); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(mnt, "x")
	bigWAL(t, filepath.Join(backing, "x"), 8, 64)
	before := sums(t, path)
	check := preflight.Options{Paths: []string{mnt}, Writers: preflight.WriterOptions{Docker: docker.Options{Mode: docker.ModeOff}}}
	ctx := context.Background()
	rep, err := preflight.Check(ctx, check)
	if err != nil {
		t.Fatal(err)
	}
	a := startAttacker(t, base, mnt, target, "", "")
	res, stateErrs, err := convert.Policy(ctx, rep, check)
	swapped := a.stop(t)
	if err != nil || res == nil {
		t.Fatalf("Policy: %v, %v (findings %v)", res, err, rep.Findings)
	}
	if len(swapped) == 0 || len(res.Databases) != 1 {
		t.Fatalf("the owner process swapped %v; result %+v", swapped, res.Databases)
	}
	d := res.Databases[0]
	t.Logf("swapped %v; convert: %s %s; state errors %v", swapped, d.Status, d.Error, stateErrs)
	wantSwapOutcome(t, d, path, target, before)
}

// The state file: the owner of the directory above the data directory
// swaps the data directory for a symlink as soon as Record opens the
// state file in it. The record lands in the data directory Record
// opened, or Record fails; nothing appears in the root-only directory.
func TestStateFileDirSwapped(t *testing.T) {
	base, owned, target := swapLayout(t)
	data := filepath.Join(owned, "app")
	if err := os.Mkdir(data, 0o755); err != nil {
		t.Fatal(err)
	}
	os.Chown(data, nobody, nobody)
	// A long history (100 conversions of long paths, about 400 KB) gives
	// the swap time to land while Record parses it.
	var history []convert.Conversion
	for i := range 100 {
		history = append(history, convert.Conversion{Path: fmt.Sprintf("/data/%04d/%s.db", i, strings.Repeat("d", 4000)), From: "wal", To: "delete"})
	}
	if err := convert.Record(data, history...); err != nil {
		t.Fatal(err)
	}
	a := startAttacker(t, base, data, target, data, "")
	err := convert.Record(data, convert.Conversion{Path: "/data/b.db", From: "wal", To: "delete"})
	swapped := a.stop(t)
	if len(swapped) != 1 {
		t.Fatalf("the owner process swapped %v, want the data directory", swapped)
	}
	if ents, rerr := os.ReadDir(target); rerr != nil || len(ents) != 0 {
		t.Errorf("the root-only directory holds %v (%v), want nothing", ents, rerr)
	}
	if err != nil {
		t.Logf("Record: %v", err)
		return
	}
	s, rerr := convert.ReadState(data + ".moved")
	if rerr != nil || len(s.Conversions) != 100 || s.Conversions[99].Path != "/data/b.db" {
		t.Errorf("state in the directory Record opened: %d conversions, %v; want the last 100, /data/b.db last", len(s.Conversions), rerr)
	}
}

// A database in a subdirectory of a data directory that another user owns
// is refused: that user can replace the subdirectory with a symlink while
// SQLite creates the -journal, -wal and -shm by path. Nothing changes.
func TestConvertRefusesSwappableSubdir(t *testing.T) {
	_, data, target := swapLayout(t)
	sub := filepath.Join(data, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(sub, "x.db")
	bigWAL(t, path, 1, 1)
	before := sums(t, path)
	res := run(t, opts(path))
	if len(res.Databases) != 1 {
		t.Fatalf("convert(%s) databases = %+v, want one", path, res.Databases)
	}
	d := res.Databases[0]
	if d.Status != convert.StatusRefused || len(d.Refusals) == 0 || d.Refusals[len(d.Refusals)-1].Reason != "swappable-dir" {
		t.Fatalf("convert(%s under a directory uid %d owns) = %s %+v, want refused: swappable-dir", path, nobody, d.Status, d.Refusals)
	}
	if !strings.Contains(d.Refusals[len(d.Refusals)-1].Message, sub) {
		t.Errorf("refusal %q does not name %s", d.Refusals[len(d.Refusals)-1].Message, sub)
	}
	if after := sums(t, path); !maps.Equal(before, after) {
		t.Errorf("files changed: before %v, after %v", before, after)
	}
	if ents, _ := os.ReadDir(target); len(ents) != 0 {
		t.Errorf("the root-only directory holds %d entries", len(ents))
	}
}

// A symlink the data directory's owner planted in it, naming a database in
// a directory only root may enter: root's convert refuses it (it would
// convert and back up a database that user cannot touch), and nothing in
// that directory changes.
func TestConvertRefusesPlantedSymlink(t *testing.T) {
	_, data, target := swapLayout(t)
	secret := filepath.Join(target, "secret.db")
	bigWAL(t, secret, 1, 1)
	for _, s := range []string{"", "-wal"} {
		if err := os.Lchown(secret+s, 0, 0); err != nil {
			t.Fatal(err)
		}
	}
	link := filepath.Join(data, "app.db")
	if err := os.Symlink(secret, link); err != nil {
		t.Fatal(err)
	}
	if err := os.Lchown(link, nobody, nobody); err != nil {
		t.Fatal(err)
	}
	before := sums(t, secret)
	res := run(t, opts(data))
	if len(res.Databases) != 1 {
		t.Fatalf("convert(%s) databases = %+v, want one", data, res.Databases)
	}
	d := res.Databases[0]
	var reasons []string
	for _, r := range d.Refusals {
		reasons = append(reasons, r.Reason)
	}
	if d.Status != convert.StatusRefused || !slices.Contains(reasons, "swappable-dir") {
		t.Fatalf("convert(%s -> %s) = %s, refusals %v; want refused: swappable-dir", link, secret, d.Status, reasons)
	}
	if after := sums(t, secret); !maps.Equal(before, after) {
		t.Errorf("%s changed: before %v, after %v", secret, before, after)
	}
	ents, _ := os.ReadDir(target)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if !slices.Equal(names, []string{"secret.db", "secret.db-wal"}) {
		t.Errorf("the root-only directory holds %v, want only secret.db and its -wal", names)
	}
}

// A FIFO in place of a -wal: check names it (sidecar-not-regular) instead
// of hanging in open(2) or calling the database safe, --deep returns too,
// and convert refuses with nothing changed.
func TestFIFOSidecar(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "app.db")
	testdb.Make(t, db, "wal", 3)
	os.Remove(db + "-wal")
	os.Remove(db + "-shm")
	if err := syscall.Mkfifo(db+"-wal", 0o600); err != nil {
		t.Fatal(err)
	}
	before, err := os.ReadFile(db)
	if err != nil {
		t.Fatal(err)
	}
	type out struct {
		r   *preflight.Report
		res *convert.Result
		err error
	}
	done := make(chan out, 1)
	go func() {
		o := opts(db).Check
		o.Paths = []string{dir}
		o.Health.Deep = true
		r, err := preflight.Check(context.Background(), o)
		if err != nil {
			done <- out{err: err}
			return
		}
		res, err := convert.Run(context.Background(), opts(db))
		done <- out{r, res, err}
	}()
	var o out
	select {
	case o = <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("check --deep and convert of a database whose -wal is a FIFO did not return within 60 s")
	}
	if o.err != nil {
		t.Fatal(o.err)
	}
	var ids []string
	for _, f := range o.r.Findings {
		ids = append(ids, string(f.ID))
	}
	if !slices.Contains(ids, "sidecar-not-regular") || o.r.Verdict != preflight.VerdictUnsafe {
		t.Errorf("check --deep (app.db-wal a FIFO) = %s %v, want unsafe with sidecar-not-regular", o.r.Verdict, ids)
	}
	d := o.res.Databases[0]
	if d.Status != convert.StatusRefused {
		t.Errorf("convert (app.db-wal a FIFO) = %s %s %+v, want refused", d.Status, d.Error, d.Refusals)
	}
	if after, err := os.ReadFile(db); err != nil || !bytes.Equal(before, after) {
		t.Errorf("app.db changed (%v)", err)
	}
	if fi, err := os.Lstat(db + "-wal"); err != nil || fi.Mode()&fs.ModeNamedPipe == 0 {
		t.Errorf("app.db-wal is no longer the FIFO: %v %v", fi, err)
	}
}

// A FIFO in place of the -journal of a rollback-mode database: check
// --deep does not open the database through SQLite (whose hot-journal test
// would block opening the FIFO forever); it says why the integrity check
// did not run.
func TestFIFOJournalDeep(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "j.db")
	testdb.Make(t, db, "delete", 3)
	if err := syscall.Mkfifo(db+"-journal", 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan *preflight.Report, 1)
	go func() {
		o := opts(db).Check
		o.Paths = []string{dir}
		o.Health.Deep = true
		r, err := preflight.Check(context.Background(), o)
		if err != nil {
			t.Error(err)
		}
		done <- r
	}()
	var r *preflight.Report
	select {
	case r = <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("check --deep of a database whose -journal is a FIFO did not return within 60 s")
	}
	if r == nil {
		return
	}
	var ids []string
	for _, f := range r.Findings {
		ids = append(ids, string(f.ID))
	}
	if !slices.Contains(ids, "sidecar-not-regular") || !slices.Contains(ids, "integrity-not-checked") {
		t.Errorf("check --deep (j.db-journal a FIFO) findings %v, want sidecar-not-regular and integrity-not-checked", ids)
	}
}

// The data directory's owner cannot delete root's secrets/ (0700, a key
// inside) but can rename it to the name of a backup an earlier run did
// not finish. Root's convert leaves it, names it in a note, and still
// removes a real unfinished backup of its own.
func TestPartialBackupRenamedByOwner(t *testing.T) {
	_, data, _ := swapLayout(t)
	path := filepath.Join(data, "app.db")
	bigWAL(t, path, 1, 1)
	secrets := filepath.Join(data, "secrets")
	if err := os.Mkdir(secrets, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(secrets, "key"), []byte("root's key"), 0o600); err != nil {
		t.Fatal(err)
	}
	renamed := filepath.Join(data, "app.db.preflight-backup-20000101T000000Z.partial")
	testdb.AsOwner(t, "mv", secrets, renamed)
	// One that only holds a backup's names, but the owner's own.
	theirs := filepath.Join(data, "app.db.preflight-backup-20000101T000001Z.partial")
	testdb.AsOwner(t, "mkdir", theirs)
	testdb.AsOwner(t, "touch", filepath.Join(theirs, "app.db"))
	ours := filepath.Join(data, "app.db.preflight-backup-20000101T000002Z.partial")
	if err := os.Mkdir(ours, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ours, "app.db-wal"), []byte("cut short"), 0o600); err != nil {
		t.Fatal(err)
	}

	res := run(t, opts(path))
	if len(res.Databases) != 1 || res.Databases[0].Status != convert.StatusConverted {
		t.Fatalf("convert(%s) = %+v, want converted", path, res.Databases)
	}
	notes := strings.Join(res.Databases[0].Notes, "; ")
	if b, err := os.ReadFile(filepath.Join(renamed, "key")); err != nil || string(b) != "root's key" {
		t.Errorf("root's key in the renamed directory after convert: %q, %v; want it kept", b, err)
	}
	if _, err := os.Stat(filepath.Join(theirs, "app.db")); err != nil {
		t.Errorf("uid %d's directory %s after convert: %v, want it kept", nobody, theirs, err)
	}
	for _, want := range []string{"left " + renamed + `: it holds "key"`, "left " + theirs + ": it belongs to uid 65534"} {
		if !strings.Contains(notes, want) {
			t.Errorf("notes %q, want %q", notes, want)
		}
	}
	if _, err := os.Lstat(ours); !errors.Is(err, fs.ErrNotExist) || !strings.Contains(notes, "removed "+ours) {
		t.Errorf("root's own unfinished backup %s: %v, notes %q; want it removed and said so", ours, err, notes)
	}
}

// --backup-dir DATA/backups, where the data directory's owner planted
// DATA/backups as a symlink to a root-only directory, or where that owner
// could replace it once made: convert refuses (swappable-dir) and writes
// nothing there. A --backup-dir only root can change is made and used.
func TestConvertRefusesSwappableBackupDir(t *testing.T) {
	base, data, target := swapLayout(t)
	path := filepath.Join(data, "app.db")
	bigWAL(t, path, 1, 1)
	before := sums(t, path)
	planted := filepath.Join(data, "backups")
	testdb.AsOwner(t, "ln", "-s", target, planted)
	for _, tc := range []struct{ name, dir, through string }{
		{"planted symlink", planted, planted},
		{"to be made in the owner's directory", filepath.Join(data, "new", "backups"), data},
	} {
		o := opts(path)
		o.BackupDir = tc.dir
		res := run(t, o)
		if len(res.Databases) != 1 {
			t.Fatalf("%s: convert databases = %+v, want one", tc.name, res.Databases)
		}
		d := res.Databases[0]
		var msgs []string
		for _, r := range d.Refusals {
			if r.Reason == "swappable-dir" {
				msgs = append(msgs, r.Message)
			}
		}
		if d.Status != convert.StatusRefused || len(msgs) != 1 || !strings.Contains(msgs[0], "the backup directory "+tc.dir+" is reached through "+tc.through) {
			t.Errorf("%s: convert --backup-dir %s = %s %+v, want refused: swappable-dir naming %s", tc.name, tc.dir, d.Status, d.Refusals, tc.through)
		}
		if ents, err := os.ReadDir(target); err != nil || len(ents) != 0 {
			t.Errorf("%s: the root-only directory holds %v (%v), want nothing", tc.name, ents, err)
		}
		if _, err := os.Lstat(filepath.Join(data, "new")); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s: %s/new made (%v), want nothing made", tc.name, data, err)
		}
		if after := sums(t, path); !maps.Equal(before, after) {
			t.Errorf("%s: files changed: before %v, after %v", tc.name, before, after)
		}
	}
	o := opts(path)
	o.BackupDir = filepath.Join(base, "root", "backups")
	res := run(t, o)
	if len(res.Databases) != 1 || res.Databases[0].Status != convert.StatusConverted || filepath.Dir(res.Databases[0].Backup.Dir) != o.BackupDir {
		t.Fatalf("convert --backup-dir %s (root's) = %+v, want converted with the backup there", o.BackupDir, res.Databases)
	}
}

// TestBackupOfSparseDatabase: the data directory's owner extends a small
// database into a hole of 1 GiB (truncate), which takes no blocks. The
// backup root makes of it must not turn the hole into a GiB of zeros on
// disk (root-owned, past the owner's quota, kept after the conversion):
// it is copied sparsely, and holds the same bytes.
func TestBackupOfSparseDatabase(t *testing.T) {
	_, data, _ := swapLayout(t)
	path := filepath.Join(data, "app.db")
	bigWAL(t, path, 1, 1)
	for _, p := range []string{path, path + "-wal"} {
		if err := os.Chown(p, nobody, nobody); err != nil {
			t.Fatal(err)
		}
	}
	testdb.AsOwner(t, "truncate", "-s", "1G", path)

	res := run(t, opts(path))
	if len(res.Databases) != 1 || res.Databases[0].Status != convert.StatusConverted || res.Databases[0].Backup == nil {
		t.Fatalf("convert(%s) = %+v, want converted with a backup", path, res.Databases)
	}
	b := filepath.Join(res.Databases[0].Backup.Dir, "app.db")
	fi, err := os.Stat(b)
	if err != nil {
		t.Fatal(err)
	}
	if used := fi.Sys().(*syscall.Stat_t).Blocks * 512; fi.Size() != 1<<30 || used > 16<<20 {
		t.Errorf("backup %s: %d bytes long, %d bytes on disk; want 1 GiB long in at most 16 MiB (the hole kept)", b, fi.Size(), used)
	}
}
