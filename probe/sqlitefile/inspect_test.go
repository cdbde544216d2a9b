//go:build linux

package sqlitefile_test

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/preflight-sqlite/preflight/probe/sqlitefile"
)

// ignoreIDs drops device and inode numbers from comparisons; tests that
// care check them against os.Stat.
var ignoreIDs = cmp.Options{
	cmpopts.IgnoreFields(sqlitefile.Database{}, "Dev", "Ino"),
	cmpopts.IgnoreFields(sqlitefile.Sidecar{}, "Dev", "Ino"),
}

func fileSize(t testing.TB, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

func TestInspectRealDatabases(t *testing.T) {
	tests := []struct {
		name     string
		stmts    []string
		wantMode sqlitefile.JournalMode
		wantPage int
		// journal_mode=truncate leaves a zero-length -journal behind.
		wantJournal sqlitefile.Sidecar
	}{
		{"delete-4096", []string{"pragma page_size=4096", "pragma journal_mode=delete"}, sqlitefile.JournalRollback, 4096, sqlitefile.Sidecar{}},
		{"wal-4096", []string{"pragma page_size=4096", "pragma journal_mode=wal"}, sqlitefile.JournalWAL, 4096, sqlitefile.Sidecar{}},
		{"delete-65536", []string{"pragma page_size=65536", "pragma journal_mode=delete"}, sqlitefile.JournalRollback, 65536, sqlitefile.Sidecar{}},
		{"wal-65536", []string{"pragma page_size=65536", "pragma journal_mode=wal"}, sqlitefile.JournalWAL, 65536, sqlitefile.Sidecar{}},
		{"truncate-1024", []string{"pragma page_size=1024", "pragma journal_mode=truncate"}, sqlitefile.JournalRollback, 1024, sqlitefile.Sidecar{Exists: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), tt.name+".db")
			stmts := append(tt.stmts, "create table t(a)", "insert into t values(1),(2)")
			version := createDB(t, path, stmts...)

			got, err := sqlitefile.Inspect(path)
			if err != nil {
				t.Fatalf("Inspect(%q): %v", path, err)
			}
			size := fileSize(t, path)
			wantMode := map[sqlitefile.JournalMode]uint8{sqlitefile.JournalRollback: 1, sqlitefile.JournalWAL: 2}[tt.wantMode]
			want := sqlitefile.Database{
				Path:      path,
				SizeBytes: size,
				Header: &sqlitefile.Header{
					PageSize:          tt.wantPage,
					WriteVersion:      wantMode,
					ReadVersion:       wantMode,
					DatabaseSizePages: uint32(size / int64(tt.wantPage)),
					TextEncoding:      1,
					SQLiteVersion:     version,
				},
				JournalMode: tt.wantMode,
				PageSize:    tt.wantPage,
				Journal:     tt.wantJournal,
			}
			opts := cmp.Options{ignoreIDs, cmpopts.IgnoreFields(sqlitefile.Header{}, "ChangeCounter", "VersionValidFor")}
			if diff := cmp.Diff(want, got, opts); diff != "" {
				t.Errorf("Inspect(%q) mismatch (-want +got):\n%s", path, diff)
			}
			if got.Header != nil && (!got.Header.InHeaderSizeValid() || !got.Header.PageSizeValid()) {
				t.Errorf("Inspect(%q).Header = %+v: InHeaderSizeValid %v, PageSizeValid %v, want both true",
					path, *got.Header, got.Header.InHeaderSizeValid(), got.Header.PageSizeValid())
			}
			if got.Dev == 0 && got.Ino == 0 {
				t.Errorf("Inspect(%q): Dev and Ino are 0", path)
			}
		})
	}
}

func TestInspectLiveWAL(t *testing.T) {
	path := filepath.Join(t.TempDir(), "live.db")
	startLiveWAL(t, path)

	got, err := sqlitefile.Inspect(path)
	if err != nil {
		t.Fatalf("Inspect(%q): %v", path, err)
	}
	if got.JournalMode != sqlitefile.JournalWAL {
		t.Errorf("Inspect(%q).JournalMode = %q, want %q", path, got.JournalMode, sqlitefile.JournalWAL)
	}
	for _, sc := range []struct {
		suffix string
		got    sqlitefile.Sidecar
	}{{"-wal", got.WAL}, {"-shm", got.SHM}} {
		fi, err := os.Stat(path + sc.suffix)
		if err != nil {
			t.Fatalf("live connection has no %s: %v", sc.suffix, err)
		}
		st := fi.Sys().(*syscall.Stat_t)
		want := sqlitefile.Sidecar{Exists: true, SizeBytes: fi.Size(), Dev: uint64(st.Dev), Ino: st.Ino}
		if diff := cmp.Diff(want, sc.got); diff != "" {
			t.Errorf("Inspect(%q) %s sidecar mismatch (-want +got):\n%s", path, sc.suffix, diff)
		}
	}
	if got.WAL.SizeBytes <= 32 {
		t.Errorf("Inspect(%q).WAL.SizeBytes = %d, want frames after the 32-byte WAL header", path, got.WAL.SizeBytes)
	}
	if got.SHM.SizeBytes == 0 || got.SHM.SizeBytes%32768 != 0 {
		t.Errorf("Inspect(%q).SHM.SizeBytes = %d, want a non-zero multiple of 32768", path, got.SHM.SizeBytes)
	}
	if got.Journal.Exists {
		t.Errorf("Inspect(%q).Journal.Exists = true for a WAL database", path)
	}
}

func TestInspectHotJournal(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.db")
	createDB(t, path, "pragma journal_mode=delete", "create table t(a)")
	// A rollback journal header (https://sqlite.org/fileformat2.html#rollbackjournal)
	// padded past the 512 bytes a hot journal needs.
	journal := make([]byte, 4096)
	copy(journal, "\xd9\xd5\x05\xf9\x20\xa1\x63\xd7")
	writeFile(t, path+"-journal", journal)

	got, err := sqlitefile.Inspect(path)
	if err != nil {
		t.Fatalf("Inspect(%q): %v", path, err)
	}
	want := sqlitefile.Sidecar{Exists: true, SizeBytes: 4096}
	if diff := cmp.Diff(want, got.Journal, ignoreIDs); diff != "" {
		t.Errorf("Inspect(%q).Journal mismatch (-want +got):\n%s", path, diff)
	}
	if got.JournalMode != sqlitefile.JournalRollback || got.WAL.Exists || got.SHM.Exists {
		t.Errorf("Inspect(%q) = mode %q, WAL %v, SHM %v; want rollback without WAL or SHM", path, got.JournalMode, got.WAL.Exists, got.SHM.Exists)
	}
}

// TestInspectSQLiteCLI cross-checks against a database written by the C
// library through Debian's sqlite3 CLI.
func TestInspectSQLiteCLI(t *testing.T) {
	sqlite3 := requireTool(t, "sqlite3")
	path := filepath.Join(t.TempDir(), "x.db")
	out, err := exec.Command(sqlite3, path, "pragma journal_mode=wal; create table t(a);").CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "wal" {
		t.Fatalf("sqlite3 %s 'pragma journal_mode=wal; ...' = %q, %v; want \"wal\"", path, out, err)
	}
	out, err = exec.Command(sqlite3, "-version").Output()
	if err != nil {
		t.Fatalf("sqlite3 -version: %v", err)
	}
	version := versionNumber(t, strings.Fields(string(out))[0])

	got, err := sqlitefile.Inspect(path)
	if err != nil {
		t.Fatalf("Inspect(%q): %v", path, err)
	}
	if got.JournalMode != sqlitefile.JournalWAL {
		t.Errorf("Inspect(%q).JournalMode = %q, want %q", path, got.JournalMode, sqlitefile.JournalWAL)
	}
	if got.Header == nil || got.Header.SQLiteVersion != version || got.PageSize != 4096 {
		t.Errorf("Inspect(%q) = header %+v, page size %d; want sqlite_version_number %d, page size 4096", path, got.Header, got.PageSize, version)
	}
	if got.WAL.Exists || got.SHM.Exists {
		t.Errorf("Inspect(%q): WAL %v, SHM %v after the CLI exited; want both gone", path, got.WAL.Exists, got.SHM.Exists)
	}
}

func TestInspectEdgeCases(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "real.db")
	createDB(t, real, "create table t(a)")
	header := readFile(t, real)[:sqlitefile.HeaderSize]

	writeFile(t, filepath.Join(dir, "truncated.db"), header[:50])
	writeFile(t, filepath.Join(dir, "empty.db"), nil)
	text := []byte("this is not a database, just a long enough text file\n")
	writeFile(t, filepath.Join(dir, "text.db"), text)
	writeFile(t, filepath.Join(dir, "orphan.db-wal"), make([]byte, 32))
	weird := append([]byte(nil), header...)
	weird[16], weird[17], weird[18], weird[19] = 0x03, 0x00, 3, 1 // page size 768, versions 3/1
	writeFile(t, filepath.Join(dir, "weird.db"), weird)
	if err := os.Mkdir(filepath.Join(dir, "dir.db"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo.db"), 0o644); err != nil {
		t.Fatal(err)
	}

	weirdHeader, err := sqlitefile.ParseHeader(weird)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		want    sqlitefile.Database
		wantErr error  // errors.Is target, or nil
		errText string // exact error text; "" means no error
	}{
		{
			name: "missing.db",
			want: sqlitefile.Database{New: true},
		},
		{
			name: "empty.db",
			want: sqlitefile.Database{New: true},
		},
		{
			name: "orphan.db",
			want: sqlitefile.Database{New: true, WAL: sqlitefile.Sidecar{Exists: true, SizeBytes: 32}},
		},
		{
			name:    "truncated.db",
			want:    sqlitefile.Database{SizeBytes: 50, NotSQLite: true, Format: sqlitefile.FormatSQLiteTruncated},
			wantErr: sqlitefile.ErrTruncated,
			errText: "read header DIR/truncated.db: truncated header: 50 of 100 bytes",
		},
		{
			name:    "text.db",
			want:    sqlitefile.Database{SizeBytes: int64(len(text)), NotSQLite: true, Format: sqlitefile.FormatText},
			wantErr: sqlitefile.ErrNotSQLite,
			errText: `read header DIR/text.db: not a SQLite database: header string "this is not a da"`,
		},
		{
			name: "weird.db",
			want: sqlitefile.Database{SizeBytes: 100, Header: &weirdHeader, JournalMode: sqlitefile.JournalUnknown, PageSize: 768},
		},
		{
			name:    "dir.db",
			errText: "inspect DIR/dir.db: not a regular file (mode d---------)",
		},
		{
			name:    "fifo.db",
			errText: "inspect DIR/fifo.db: not a regular file (mode p---------)",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(dir, tt.name)
			got, err := sqlitefile.Inspect(path)
			wantText := strings.ReplaceAll(tt.errText, "DIR", dir)
			if (err == nil) != (wantText == "") || err != nil && err.Error() != wantText {
				t.Fatalf("Inspect(%q) error = %v, want %q", path, err, wantText)
			}
			if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Errorf("Inspect(%q) error = %v, want errors.Is %v", path, err, tt.wantErr)
			}
			tt.want.Path = path
			tt.want.Err = wantText
			if diff := cmp.Diff(tt.want, got, ignoreIDs, cmpopts.IgnoreFields(sqlitefile.Database{}, "SizeBytes")); diff != "" {
				t.Errorf("Inspect(%q) mismatch (-want +got):\n%s", path, diff)
			}
			if tt.want.SizeBytes != 0 && got.SizeBytes != tt.want.SizeBytes {
				t.Errorf("Inspect(%q).SizeBytes = %d, want %d", path, got.SizeBytes, tt.want.SizeBytes)
			}
		})
	}

	t.Run("empty path", func(t *testing.T) {
		if _, err := sqlitefile.Inspect(""); err == nil {
			t.Errorf(`Inspect("") error = nil, want an error`)
		}
	})
	t.Run("unclean path", func(t *testing.T) {
		got, err := sqlitefile.Inspect(dir + "/./sub/../real.db")
		if err != nil || got.Path != real {
			t.Errorf("Inspect(unclean path) = %q, %v; want %q, nil", got.Path, err, real)
		}
	})
}

// BenchmarkInspectSparse shows that the cost of Inspect does not depend on
// the database size: a 2 GiB sparse file costs what a 1 MiB file costs.
func BenchmarkInspectSparse(b *testing.B) {
	dir := b.TempDir()
	src := filepath.Join(dir, "src.db")
	createDB(b, src, "create table t(a)")
	header := readFile(b, src)[:sqlitefile.HeaderSize]

	for _, bm := range []struct {
		name string
		size int64
	}{
		{"1MiB", 1 << 20},
		{"2GiB-sparse", 2 << 30},
	} {
		path := filepath.Join(dir, bm.name+".db")
		writeFile(b, path, header)
		if err := os.Truncate(path, bm.size); err != nil {
			b.Fatal(err)
		}
		b.Run(bm.name, func(b *testing.B) {
			for b.Loop() {
				db, err := sqlitefile.Inspect(path)
				if err != nil || db.SizeBytes != bm.size {
					b.Fatalf("Inspect(%q) = size %d, %v; want %d, nil", path, db.SizeBytes, err, bm.size)
				}
			}
		})
	}
}

// TestDatabaseJSON pins the JSON shape, which the report renders as is.
func TestDatabaseJSON(t *testing.T) {
	h, err := sqlitefile.ParseHeader(readFixture(t, "wal-4096.bin"))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		in   sqlitefile.Database
		want string
	}{
		{
			in: sqlitefile.Database{Path: "/data/app.db", SizeBytes: 8192, Header: &h, JournalMode: h.JournalMode(), PageSize: h.PageSize,
				WAL: sqlitefile.Sidecar{Exists: true, SizeBytes: 4152, Dev: 1, Ino: 2}, SHM: sqlitefile.Sidecar{Exists: true, SizeBytes: 32768}, Dev: 1, Ino: 3},
			want: `{"path":"/data/app.db","size_bytes":8192,"header":{"page_size":4096,"write_version":2,"read_version":2,"reserved_bytes":0,` +
				`"change_counter":2,"database_size_pages":2,"text_encoding":1,"version_valid_for":2,"sqlite_version_number":3040001},` +
				`"journal_mode":"wal","page_size":4096,"wal":{"exists":true,"size_bytes":4152},"shm":{"exists":true,"size_bytes":32768},` +
				`"journal":{"exists":false,"size_bytes":0}}`,
		},
		{
			in: sqlitefile.Database{Path: "/data/new.db", New: true},
			want: `{"path":"/data/new.db","size_bytes":0,"new":true,"journal_mode":"",` +
				`"wal":{"exists":false,"size_bytes":0},"shm":{"exists":false,"size_bytes":0},"journal":{"exists":false,"size_bytes":0}}`,
		},
		{
			in: sqlitefile.Database{Path: "/data/x.db", SizeBytes: 5, NotSQLite: true, Err: "read header /data/x.db: truncated header: 5 of 100 bytes"},
			want: `{"path":"/data/x.db","size_bytes":5,"not_sqlite":true,"error":"read header /data/x.db: truncated header: 5 of 100 bytes","journal_mode":"",` +
				`"wal":{"exists":false,"size_bytes":0},"shm":{"exists":false,"size_bytes":0},"journal":{"exists":false,"size_bytes":0}}`,
		},
	}
	for _, tt := range tests {
		got, err := json.Marshal(tt.in)
		if err != nil {
			t.Fatalf("json.Marshal(%q): %v", tt.in.Path, err)
		}
		if diff := cmp.Diff(tt.want, string(got)); diff != "" {
			t.Errorf("json.Marshal(%q) mismatch (-want +got):\n%s", tt.in.Path, diff)
		}
	}
	res, err := json.Marshal(sqlitefile.Result{Databases: []sqlitefile.Database{}})
	if err != nil || string(res) != `{"databases":[]}` {
		t.Errorf(`json.Marshal(empty Result) = %s, %v; want {"databases":[]}`, res, err)
	}
}
