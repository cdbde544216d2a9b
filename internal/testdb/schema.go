package testdb

import "github.com/preflight-sqlite/preflight/probe/health"

// Schema returns sqlite_schema of a database with a table (notes), an
// index (notes_body), an FTS5 table (ft, shadow tables on root pages 4 to
// 8), an FTS4 table (old, old_segdir on page 9 with its automatic index on
// page 10) and a table with a space in its name (odd name, page 11), as
// SQLite 3.53.3 lists it; a fresh slice on each call.
func Schema() []health.SchemaEntry {
	return []health.SchemaEntry{
		{Type: "table", Name: "notes", TblName: "notes", RootPage: 2, SQL: "CREATE TABLE notes(id integer primary key, body text)"},
		{Type: "index", Name: "notes_body", TblName: "notes", RootPage: 3, SQL: "CREATE INDEX notes_body on notes(body)"},
		{Type: "table", Name: "ft", TblName: "ft", RootPage: 0, SQL: "CREATE VIRTUAL TABLE ft USING fts5(body)"},
		{Type: "table", Name: "ft_data", TblName: "ft_data", RootPage: 4, SQL: "CREATE TABLE 'ft_data'(id INTEGER PRIMARY KEY, block BLOB)"},
		{Type: "table", Name: "ft_idx", TblName: "ft_idx", RootPage: 5, SQL: "CREATE TABLE 'ft_idx'(segid, term, pgno, PRIMARY KEY(segid, term)) WITHOUT ROWID"},
		{Type: "table", Name: "ft_content", TblName: "ft_content", RootPage: 6, SQL: "CREATE TABLE 'ft_content'(id INTEGER PRIMARY KEY, c0)"},
		{Type: "table", Name: "ft_docsize", TblName: "ft_docsize", RootPage: 7, SQL: "CREATE TABLE 'ft_docsize'(id INTEGER PRIMARY KEY, sz BLOB)"},
		{Type: "table", Name: "ft_config", TblName: "ft_config", RootPage: 8, SQL: "CREATE TABLE 'ft_config'(k PRIMARY KEY, v) WITHOUT ROWID"},
		{Type: "table", Name: "old", TblName: "old", RootPage: 0, SQL: "CREATE VIRTUAL TABLE old USING fts4(body)"},
		{Type: "table", Name: "old_segdir", TblName: "old_segdir", RootPage: 9, SQL: "CREATE TABLE 'old_segdir'(level INTEGER,idx INTEGER,start_block INTEGER,leaves_end_block INTEGER,end_block INTEGER,root BLOB,PRIMARY KEY(level, idx))"},
		{Type: "index", Name: "sqlite_autoindex_old_segdir_1", TblName: "old_segdir", RootPage: 10},
		{Type: "table", Name: "odd name", TblName: "odd name", RootPage: 11, SQL: `CREATE TABLE "odd name"(x)`},
	}
}
