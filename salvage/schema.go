package salvage

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
)

// object is one row of sqlite_schema (section 2.6).
type object struct {
	typ, name, tbl string
	root           uint32
	sql            string
}

// schemaObject reads a sqlite_schema record: type, name, tbl_name,
// rootpage, sql.
func schemaObject(vals []Value) (object, bool) {
	if len(vals) != 5 {
		return object{}, false
	}
	typ, ok1 := vals[0].V.(string)
	name, ok2 := vals[1].V.(string)
	tbl, _ := vals[2].V.(string)
	switch typ {
	case "table", "index", "view", "trigger":
	default:
		return object{}, false
	}
	if !ok1 || !ok2 || name == "" {
		return object{}, false
	}
	o := object{typ: typ, name: name, tbl: tbl}
	if r, ok := vals[3].V.(int64); ok && r > 0 && r < 1<<31 {
		o.root = uint32(r)
	}
	o.sql, _ = vals[4].V.(string)
	return o, true
}

// schemaFrom reads the schema of the database at path (one the
// application creates empty), read-only and immutable: SQLite makes no
// journal, -wal or -shm for it.
func schemaFrom(ctx context.Context, path string) ([]object, error) {
	db, err := sql.Open("sqlite", fileURI(path, "mode=ro&immutable=1"))
	if err != nil {
		return nil, fmt.Errorf("open --schema-from %s: %w", path, err)
	}
	defer db.Close()
	rows, err := db.QueryContext(ctx, "SELECT type, name, tbl_name, sql FROM sqlite_schema WHERE sql IS NOT NULL OR type = 'table'")
	if err != nil {
		return nil, fmt.Errorf("read the schema of --schema-from %s: %w", path, err)
	}
	defer rows.Close()
	var out []object
	for rows.Next() {
		var o object
		var s sql.NullString
		if err := rows.Scan(&o.typ, &o.name, &o.tbl, &s); err != nil {
			return nil, fmt.Errorf("read the schema of --schema-from %s: %w", path, err)
		}
		o.sql = s.String
		out = append(out, o)
	}
	return out, rows.Err()
}

// Column affinities (https://sqlite.org/datatype3.html section 3.1).
const (
	affBlob = iota
	affText
	affNumeric
	affInteger
	affReal
)

func affinity(decl string) int {
	d := strings.ToUpper(decl)
	switch {
	case strings.Contains(d, "INT"):
		return affInteger
	case strings.Contains(d, "CHAR"), strings.Contains(d, "CLOB"), strings.Contains(d, "TEXT"):
		return affText
	case d == "", strings.Contains(d, "BLOB"):
		return affBlob
	case strings.Contains(d, "REAL"), strings.Contains(d, "FLOA"), strings.Contains(d, "DOUB"):
		return affReal
	}
	return affNumeric
}

// fits reports whether a stored value of kind k can be in a column of
// affinity aff: the kinds SQLite stores after applying the affinity to a
// typical value (a text that is not a number in a numeric column, or a
// blob, also could be, but such pages are rare and attributing by them
// would be a guess).
func fits(aff, k int) bool {
	if k == KindNull {
		return true
	}
	switch aff {
	case affInteger:
		return k == KindInt || k == KindReal
	case affReal:
		return k == KindReal || k == KindInt
	case affText:
		return k == KindText
	case affNumeric:
		return k != KindBlob
	}
	return true
}

// shadowSuffixes are the shadow tables of the full-text modules
// (fts3.c, fts5_storage.c): SQLite creates them with the virtual table.
var shadowSuffixes = map[string][]string{
	"fts3": {"content", "segments", "segdir", "docsize", "stat"},
	"fts4": {"content", "segments", "segdir", "docsize", "stat"},
	"fts5": {"data", "idx", "content", "docsize", "config"},
}

// module returns the module name of a CREATE VIRTUAL TABLE statement,
// lower case, or "".
func module(sqlText string) string {
	u := strings.ToUpper(sqlText)
	i := strings.Index(u, " USING ")
	if !strings.HasPrefix(strings.TrimSpace(u), "CREATE VIRTUAL TABLE") || i < 0 {
		return ""
	}
	rest := strings.TrimSpace(sqlText[i+7:])
	end := strings.IndexAny(rest, "( \t\n")
	if end < 0 {
		end = len(rest)
	}
	return strings.ToLower(rest[:end])
}

// quote quotes an SQL identifier.
func quote(name string) string { return `"` + strings.ReplaceAll(name, `"`, `""`) + `"` }

// fileURI is the driver's file: URI for path (?, # and % escaped, which
// it would otherwise take for the query) with the query.
func fileURI(path, query string) string {
	return "file:" + strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23").Replace(path) + "?" + query
}
