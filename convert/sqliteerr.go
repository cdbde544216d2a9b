package convert

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	sqlite "github.com/glebarez/go-sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// sqliteCode returns the extended result code of the SQLite error err
// wraps (https://sqlite.org/rescode.html), or 0.
func sqliteCode(err error) int {
	var se *sqlite.Error
	if errors.As(err, &se) {
		return se.Code()
	}
	return 0
}

// shmUnavailable reports whether err is SQLite failing to open, size, lock
// or map a WAL database's -shm (SQLITE_IOERR_SHMOPEN, _SHMSIZE, _SHMLOCK,
// _SHMMAP): a filesystem without shared mmap, such as mergerfs with
// cache.files=off, where SQLite says "disk I/O error".
func shmUnavailable(err error) bool {
	switch sqliteCode(err) {
	case sqlite3.SQLITE_IOERR_SHMOPEN, sqlite3.SQLITE_IOERR_SHMSIZE, sqlite3.SQLITE_IOERR_SHMLOCK, sqlite3.SQLITE_IOERR_SHMMAP:
		return true
	}
	return false
}

// readOnlyDatabase reports whether err is SQLite's "attempt to write a
// readonly database" (SQLITE_READONLY and its extended codes): the
// database, its -wal or -shm, or their directory is not writable here.
func readOnlyDatabase(err error) bool {
	return sqliteCode(err)&0xff == sqlite3.SQLITE_READONLY
}

// appDefinition is a name the schema uses that this SQLite does not define.
type appDefinition struct {
	Kind string // "function", "collation" or "module" (virtual table)
	Name string
}

func (a appDefinition) String() string {
	return fmt.Sprintf("the schema uses %s %s, which only the application defines", a.Kind, a.Name)
}

// appDefs are SQLite's messages for a name it does not know, by kind
// (sqlite3's resolve.c, callback.c, vtab.c). The message is the only place
// the name is given; the result code (SQLITE_ERROR) is checked first and
// the name is confirmed against this SQLite's own lists (missingDefinition).
var appDefs = []struct{ prefix, kind, list string }{
	{"unknown function: ", "function", "pragma_function_list"},
	{"no such function: ", "function", "pragma_function_list"},
	{"no such collation sequence: ", "collation", "pragma_collation_list"},
	{"no such module: ", "module", "pragma_module_list"},
}

// missingDefinition reports whether err is SQLITE_ERROR for a function,
// collation or virtual-table module the schema names and this SQLite does
// not define (the application registers it on its own connections), and
// which. The name in the message is looked up in this SQLite's
// pragma_function_list, pragma_collation_list or pragma_module_list on a
// connection to an in-memory database: a name found there is not missing,
// and err is a real failure.
func missingDefinition(ctx context.Context, err error) (appDefinition, bool) {
	if err == nil || sqliteCode(err)&0xff != sqlite3.SQLITE_ERROR {
		return appDefinition{}, false
	}
	for _, d := range appDefs {
		_, name, ok := strings.Cut(err.Error(), d.prefix)
		if !ok {
			continue
		}
		if i := strings.IndexAny(name, " ("); i > 0 {
			name = name[:i]
		}
		if name == "" {
			return appDefinition{}, false
		}
		var n int
		qerr := withConn(ctx, "file::memory:", func(c *sql.Conn) error {
			return c.QueryRowContext(ctx, "SELECT count(*) FROM "+d.list+" WHERE lower(name) = lower(?)", name).Scan(&n)
		})
		if qerr != nil || n > 0 {
			return appDefinition{}, false
		}
		return appDefinition{Kind: d.kind, Name: name}, true
	}
	return appDefinition{}, false
}
