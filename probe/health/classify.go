package health

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
)

// SchemaEntry is one row of sqlite_schema
// (https://sqlite.org/schematab.html).
type SchemaEntry struct {
	// Type is "table", "index", "view" or "trigger".
	Type string `json:"type"`
	// Name is the object's name.
	Name string `json:"name"`
	// TblName is the table the object belongs to (the table itself for a
	// table).
	TblName string `json:"tbl_name"`
	// RootPage is the page number of the object's b-tree root; 0 for views,
	// triggers and virtual tables.
	RootPage int64 `json:"rootpage"`
	// SQL is the CREATE statement; empty for automatic indexes.
	SQL string `json:"sql"`
}

// objDatabase is the Damage.Object of damage to the whole file: SQLite
// could not load the database header or schema.
const objDatabase = "database"

var (
	reTree      = lazyRegexp(`^Tree (\d+) page \d+`)
	reOldTree   = lazyRegexp(`^On tree page (\d+)`)
	rePage      = lazyRegexp(`^Page (\d+)\b(.*)$`)
	reIndexMsg  = lazyRegexp(`(?:missing from index|wrong # of entries in index|non-unique entry in index) (.+)$`)
	reNull      = lazyRegexp(`^NULL value in (.+)\.[^.]+$`)
	reCheck     = lazyRegexp(`^CHECK constraint failed in (.+)$`)
	reFTS5Index = lazyRegexp(`malformed inverted index for FTS5 table (.+)$`)
	reFTS5Blob  = lazyRegexp(`fts5: .*from table "([^"]+)"`)
	reRTree     = lazyRegexp(`^In RTree (.+?):`)
	reUsing     = lazyRegexp(`(?is)\bUSING\s+(fts[345])\b`)
	reDriverErr = lazyRegexp(`^database disk image is malformed( \(\d+\))?$`)
)

// ftsShadows lists the shadow-table suffixes of each full-text module
// (https://sqlite.org/fts5.html, https://sqlite.org/fts3.html#shadow_tables).
var ftsShadows = map[string][]string{
	"fts3": {"_content", "_segments", "_segdir"},
	"fts4": {"_content", "_segments", "_segdir", "_docsize", "_stat"},
	"fts5": {"_data", "_idx", "_content", "_docsize", "_config"},
}

// Classify maps integrity-check messages to damaged objects. Messages are
// single lines as produced by PRAGMA quick_check or integrity_check of
// SQLite 3.40 and later (https://sqlite.org/pragma.html#pragma_integrity_check);
// schema is sqlite_schema of the same database (nil when it could not be
// read). It returns one Damage per object in order of first mention, nil
// for no messages or just "ok"; Damage.Repair is left empty (the rules
// layer words repairs from Kind, Object and Table).
//
// Mapping: "Tree N ..." names the b-tree rooted at page N; "On tree page N"
// (before 3.44) and "Page N: ..." name it when N is a root page; index
// messages ("row R missing from index I", "wrong # of entries in index I",
// "non-unique entry in index I") name the index; "NULL value in T.C" and
// "CHECK constraint failed in T" name a table; FTS5 messages name the
// full-text table; "malformed database schema" names sqlite_schema;
// "file is not a database" is KindUnknown with Object "database".
// Freelist messages, "Page N: never used" / "Page N is never used" and
// other page messages without an owner are KindStructural. An object that
// is an FTS3/4/5 shadow table (or an index on one) is KindFTS, except
// NAME_content, which holds the full-text table's rows and is KindTable.
// The statement error "database disk image is malformed" only counts when
// no other message was classified; unrecognised text is KindUnknown.
//
// Classify knows no page owners: of the messages about one page that name
// no b-tree, "Page N: ..." for a page that is not a root is KindStructural
// and the others ("Fragmentation ... on page N", "Multiple uses for byte B
// of page N", "2nd reference to page N") are KindUnknown. ClassifyOwned
// ties such pages to their b-trees.
func Classify(messages []string, schema []SchemaEntry) []Damage {
	return ClassifyOwned(messages, schema, nil)
}

// ClassifyOwned is Classify with owners, the roots of the b-trees that
// reach each page (PageOwners over the same database). A message about page
// N (see messagePage) is damage to each b-tree that owns N, classified like
// damage to that b-tree's root; a page in owners' walk that no b-tree
// reaches (absent from owners, owners not nil) is KindStructural. "2nd
// reference to page N" is page accounting as well: it adds KindStructural
// besides the owners. owners nil means no walk was made.
func ClassifyOwned(messages []string, schema []SchemaEntry, owners map[int64][]int64) []Damage {
	c := classifier{schemaOK: schema != nil, owners: owners, byName: map[string]SchemaEntry{}, byRoot: map[int64]SchemaEntry{}, fts: map[string]string{}}
	for _, e := range schema {
		c.byName[strings.ToLower(e.Name)] = e
		if e.RootPage > 0 && (e.Type == "table" || e.Type == "index") {
			c.byRoot[e.RootPage] = e
		}
		if e.Type == "table" && e.RootPage == 0 {
			if m := reUsing().FindStringSubmatch(e.SQL); m != nil {
				c.fts[strings.ToLower(e.Name)] = strings.ToLower(m[1])
			}
		}
	}
	schemaRoot := SchemaEntry{Type: "table", Name: "sqlite_schema", TblName: "sqlite_schema", RootPage: 1}
	c.byRoot[1] = schemaRoot

	var pending []string // terminal statement errors
	for _, m := range messages {
		m = strings.TrimSpace(m)
		switch {
		case m == "" || m == "ok" || strings.HasPrefix(m, "*** in database "):
			continue
		case reDriverErr().MatchString(m):
			pending = append(pending, m)
			continue
		}
		c.add(m)
	}
	if len(c.out) == 0 {
		for _, m := range pending {
			c.put(Damage{Kind: KindUnknown, Message: m})
		}
	}
	return c.out
}

type classifier struct {
	schemaOK bool
	byName   map[string]SchemaEntry
	byRoot   map[int64]SchemaEntry
	fts      map[string]string // lower-case full-text table name -> module
	owners   map[int64][]int64 // page -> roots of the b-trees reaching it
	out      []Damage
	seen     map[string]bool
}

func (c *classifier) add(m string) {
	if sm := reTree().FindStringSubmatch(m); sm != nil {
		c.root(sm[1], m, true)
		return
	}
	if sm := reOldTree().FindStringSubmatch(m); sm != nil {
		c.root(sm[1], m, false)
		return
	}
	if pg := messagePage(m); pg > 0 && c.owners != nil && c.schemaOK {
		c.owned(pg, m)
		return
	}
	if sm := rePage().FindStringSubmatch(m); sm != nil {
		if strings.Contains(sm[2], "never used") {
			c.structural(m)
			return
		}
		c.root(sm[1], m, false)
		return
	}
	if strings.HasPrefix(strings.ToLower(m), "freelist") || strings.Contains(m, "freelist leaf count") || strings.HasPrefix(m, "max rootpage") {
		c.structural(m)
		return
	}
	if sm := reIndexMsg().FindStringSubmatch(m); sm != nil {
		c.named(unqualify(sm[1]), m)
		return
	}
	if sm := reNull().FindStringSubmatch(m); sm != nil {
		c.named(unqualify(sm[1]), m)
		return
	}
	if sm := reCheck().FindStringSubmatch(m); sm != nil {
		c.named(unqualify(sm[1]), m)
		return
	}
	if sm := reFTS5Index().FindStringSubmatch(m); sm != nil {
		c.ftsTable(unqualify(sm[1]), m)
		return
	}
	if sm := reFTS5Blob().FindStringSubmatch(m); sm != nil {
		c.ftsTable(unqualify(sm[1]), m)
		return
	}
	if sm := reRTree().FindStringSubmatch(m); sm != nil {
		c.named(unqualify(sm[1]), m)
		return
	}
	if strings.Contains(m, "file is not a database") {
		c.put(Damage{Kind: KindUnknown, Object: objDatabase, Message: m})
		return
	}
	if strings.Contains(m, "malformed database schema") {
		c.entry(SchemaEntry{Type: "table", Name: "sqlite_schema", TblName: "sqlite_schema", RootPage: 1}, m)
		return
	}
	c.put(Damage{Kind: KindUnknown, Message: m})
}

// root handles a message naming page n; exact says n is known to be a
// b-tree root ("Tree N").
func (c *classifier) root(n, m string, exact bool) {
	pg, _ := strconv.ParseInt(n, 10, 64)
	if e, ok := c.byRoot[pg]; ok && (c.schemaOK || pg == 1) {
		c.entry(e, m)
		return
	}
	if !exact {
		c.structural(m)
		return
	}
	why := "not in sqlite_schema"
	if !c.schemaOK {
		why = "sqlite_schema unreadable"
	}
	c.put(Damage{Kind: KindUnknown, Object: fmt.Sprintf("b-tree %d (%s)", pg, why), Message: m})
}

// owned handles a message about page pg, using the page owners.
func (c *classifier) owned(pg int64, m string) {
	roots := c.owners[pg]
	if len(roots) == 0 || strings.HasPrefix(m, "2nd reference") {
		c.structural(m)
	}
	for _, r := range roots {
		c.root(strconv.FormatInt(r, 10), m, true)
	}
}

func (c *classifier) named(name, m string) {
	if e, ok := c.byName[strings.ToLower(name)]; ok {
		c.entry(e, m)
		return
	}
	if _, ok := c.fts[strings.ToLower(name)]; ok {
		c.ftsTable(name, m)
		return
	}
	// Not in the schema we read (or no schema): guess from the message.
	if reIndexMsg().MatchString(m) {
		c.put(Damage{Kind: KindIndex, Object: name, Message: m})
		return
	}
	c.put(Damage{Kind: KindTable, Object: name, Table: name, Message: m})
}

// entry classifies a damaged sqlite_schema object.
func (c *classifier) entry(e SchemaEntry, m string) {
	owner := e.Name
	if e.Type == "index" {
		owner = e.TblName
	}
	if vt, suffix, ok := c.shadowOf(owner); ok {
		if suffix == "_content" && e.Type == "table" {
			c.put(Damage{Kind: KindTable, Object: e.Name, Table: vt, Message: m})
			return
		}
		c.put(Damage{Kind: KindFTS, Object: e.Name, Table: vt, Message: m})
		return
	}
	if e.Type == "index" {
		c.put(Damage{Kind: KindIndex, Object: e.Name, Table: e.TblName, Message: m})
		return
	}
	c.put(Damage{Kind: KindTable, Object: e.Name, Table: e.Name, Message: m})
}

// ftsTable records damage found by a full-text table's own check.
func (c *classifier) ftsTable(name, m string) {
	if e, ok := c.byName[strings.ToLower(name)]; ok {
		name = e.Name
	}
	c.put(Damage{Kind: KindFTS, Object: name, Table: name, Message: m})
}

// shadowOf reports whether table is a shadow table of a full-text table.
func (c *classifier) shadowOf(table string) (vtab, suffix string, ok bool) {
	lt := strings.ToLower(table)
	for vt, mod := range c.fts {
		for _, s := range ftsShadows[mod] {
			if lt == vt+s {
				if e, ok := c.byName[vt]; ok {
					vt = e.Name
				}
				return vt, s, true
			}
		}
	}
	return "", "", false
}

func (c *classifier) structural(m string) {
	c.put(Damage{Kind: KindStructural, Message: m})
}

// put adds d unless a Damage of the same kind and object exists.
func (c *classifier) put(d Damage) {
	if c.seen == nil {
		c.seen = map[string]bool{}
	}
	k := d.Kind + "\x00" + strings.ToLower(d.Object)
	if c.seen[k] {
		return
	}
	c.seen[k] = true
	c.out = append(c.out, d)
}

// unqualify strips a schema prefix ("main.t" -> "t") and surrounding quotes.
func unqualify(name string) string {
	name = strings.TrimSpace(name)
	if i := strings.IndexByte(name, '.'); i > 0 && !strings.HasPrefix(name, `"`) {
		if s := name[:i]; s == "main" || s == "temp" {
			name = name[i+1:]
		}
	}
	return strings.Trim(name, "\"'`[]")
}

// lazyRegexp compiles expr on first use: preflight run starts every
// container, and package-level regexps would be compiled at each start
// whether a health check runs or not.
func lazyRegexp(expr string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
}
