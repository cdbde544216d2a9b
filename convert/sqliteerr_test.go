package convert

import (
	"context"
	"database/sql"
	"errors"
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
