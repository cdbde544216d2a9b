package convert

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"testing"
)

// missingDefinition is given SQLite's own errors from real statements: a
// name this SQLite does not define is missing; an error that only reads
// like one, or about a name SQLite knows, is not.
func TestMissingDefinition(t *testing.T) {
	ctx := context.Background()
	errOf := func(q string) error {
		t.Helper()
		var err error
		werr := withConn(ctx, "file::memory:", func(c *sql.Conn) error {
			_, err = c.ExecContext(ctx, q)
			return nil
		})
		if werr != nil || err == nil {
			t.Fatalf("%s: want an error, got %v (open %v)", q, err, werr)
		}
		return err
	}
	for _, tt := range []struct {
		err  error
		want appDefinition
		ok   bool
	}{
		{errOf("select myf(1)"), appDefinition{"function", "myf"}, true},
		{sqlErr("quick_check", errOf("select 'a' < 'b' collate appcoll")), appDefinition{"collation", "appcoll"}, true},
		{errOf("create virtual table v using appmod(x)"), appDefinition{"module", "appmod"}, true},
		{errOf("select lower()"), appDefinition{}, false},                                                  // wrong number of arguments
		{errors.New("unknown function: myf()"), appDefinition{}, false},                                    // not SQLite's
		{errOf("select * from no_such_table"), appDefinition{}, false},                                     // SQLITE_ERROR, another cause
		{errOf("select 1 from (select 'no such function: x' as m) where m = 1 +"), appDefinition{}, false}, // syntax error
	} {
		got, ok := missingDefinition(ctx, tt.err)
		if got != tt.want || ok != tt.ok {
			t.Errorf("missingDefinition(%q) = %+v, %v; want %+v, %v", tt.err, got, ok, tt.want, tt.ok)
		}
	}
}

// sqlErr and readOnlyDatabase tell SQLITE_BUSY and SQLITE_READONLY by
// their result codes, on real errors.
func TestSQLiteCodes(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "a.db")
	if err := withConn(ctx, "file:"+path, func(c *sql.Conn) error {
		_, err := c.ExecContext(ctx, "create table t(a)")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	var busy, ro error
	if err := withConn(ctx, "file:"+path, func(a *sql.Conn) error {
		if _, err := a.ExecContext(ctx, "begin exclusive"); err != nil {
			return err
		}
		defer a.ExecContext(ctx, "rollback")
		busy = withConn(ctx, "file:"+path+"?_pragma=busy_timeout(0)", func(b *sql.Conn) error {
			_, err := b.ExecContext(ctx, "select * from t")
			return sqlErr("read", err)
		})
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(busy, ErrLocked) {
		t.Errorf("sqlErr(read under an exclusive lock) = %v, want ErrLocked", busy)
	}
	ro = withConn(ctx, dsnMode(path, "ro"), func(c *sql.Conn) error {
		_, err := c.ExecContext(ctx, "insert into t values (1)")
		return sqlErr("insert", err)
	})
	if !readOnlyDatabase(ro) || errors.Is(ro, ErrLocked) {
		t.Errorf("insert on a read-only connection: %v: readOnlyDatabase %v, want true and not ErrLocked", ro, readOnlyDatabase(ro))
	}
	if readOnlyDatabase(busy) {
		t.Errorf("readOnlyDatabase(%v) = true, want false", busy)
	}
}
