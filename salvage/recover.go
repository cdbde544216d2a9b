package salvage

import (
	"fmt"
	"os"
	"sort"
	"strings"
)

// Kinds of target: what is done with the rows of a b-tree.
const (
	kindTable   = iota // a table: rows go into it
	kindContent        // a full-text table's content shadow: rows go into the full-text table
	kindDiscard        // a shadow table or sqlite_schema: its rows are rebuilt or already read
)

// target is a table of the schema, with its columns as the new file has
// them, in the order its records store them.
type target struct {
	obj     object
	kind    int
	into    string // the table inserted into (the full-text table for kindContent)
	cols    []string
	affs    []int
	skip    []bool // a stored generated column: in the record, not inserted
	alias   int    // record index of the rowid alias (INTEGER PRIMARY KEY), -1 if none
	noRowid bool   // WITHOUT ROWID: an index b-tree; the record is the row
	ftsCols []string
	res     *Table
	gaps    []gap // rowid ranges under the unreadable pages of its b-tree
}

// inGap reports whether every rowid of rows lies in one of t's gaps: the
// page was reachable from t's b-tree through a page now unreadable.
func (t *target) inGap(rows []row) bool {
	if len(t.gaps) == 0 || t.noRowid {
		return false
	}
	lo, hi := rows[0].rowid, rows[0].rowid
	for _, r := range rows {
		lo, hi = min(lo, r.rowid), max(hi, r.rowid)
	}
	for _, g := range t.gaps {
		if g.lo < lo && hi <= g.hi {
			return true
		}
	}
	return false
}

func createExcl(path string, mode os.FileMode) (*os.File, error) {
	return os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
}

// recover reads the schema, creates the tables, copies the rows, scans
// for orphan pages and creates what follows the data.
func (r *run) recover(opts Options) error {
	var objs []object
	schemaRows := map[string]object{}
	st, err := r.w.tree(1, func(rw row) error {
		if o, ok := schemaObject(rw.vals); ok {
			objs = append(objs, o)
			schemaRows[o.typ+"\x00"+o.name] = o
		}
		return nil
	})
	if err != nil {
		return err
	}
	r.res.SchemaUnreadable = st.badPages
	if st.badPages > 0 {
		// Leaves of a schema b-tree whose interior page is gone.
		found, err := r.w.schemaLeaves()
		if err != nil {
			return err
		}
		for _, o := range found {
			if _, dup := schemaRows[o.typ+"\x00"+o.name]; !dup {
				objs = append(objs, o)
				schemaRows[o.typ+"\x00"+o.name] = o
			}
		}
		if len(found) > 0 {
			r.res.Notes = append(r.res.Notes, fmt.Sprintf("%d schema rows found on pages the damaged schema b-tree no longer reaches", len(found)))
		}
	}
	if opts.SchemaFrom != "" {
		from, err := schemaFrom(r.ctx, opts.SchemaFrom)
		if err != nil {
			return badInputf("%v", err)
		}
		for i := range from {
			from[i].root = schemaRows[from[i].typ+"\x00"+from[i].name].root
		}
		objs = from
		r.res.Notes = append(r.res.Notes, fmt.Sprintf("schema taken from %s; %d of its objects found in the source's schema", opts.SchemaFrom, len(schemaRows)))
	} else if st.badPages > 0 {
		r.res.Notes = append(r.res.Notes, "the schema (sqlite_schema) is damaged: tables it no longer names are not recreated; give --schema-from a database the application creates empty")
	}
	if r.src.freelist != 0 {
		r.w.freelist(r.src.freelist)
	}
	targets := r.createTables(objs)
	if err := r.exec("BEGIN"); err != nil {
		return err
	}
	for _, t := range targets {
		if t.obj.root == 0 {
			if t.res != nil && t.obj.name != "sqlite_schema" {
				// Its b-tree cannot be walked: what comes back comes
				// from pages by shape, and nothing says it is all.
				t.res.PagesUnreadable++
				r.res.Notes = append(r.res.Notes, fmt.Sprintf("table %s: no root page in the source's schema: its rows come only from pages attributed by shape", t.obj.name))
			}
			continue
		}
		tst, err := r.w.tree(t.obj.root, func(rw row) error { return r.put(t, rw, false) })
		if err != nil {
			return err
		}
		t.gaps = tst.gaps
		if t.res != nil {
			t.res.PagesUnreadable += tst.badPages
			t.res.CellsUnreadable += tst.badCells
		}
	}
	for _, o := range objs {
		if o.typ == "index" && o.root != 0 {
			ist, err := r.w.tree(o.root, func(row) error { return nil })
			if err != nil {
				return err
			}
			if ist.badPages > 0 {
				r.res.Notes = append(r.res.Notes, fmt.Sprintf("index %s: %d pages unreadable (indexes are rebuilt from the rows)", o.name, ist.badPages))
			}
		}
	}
	if err := r.orphans(targets); err != nil {
		return err
	}
	if err := r.flush(); err != nil {
		return err
	}
	if err := r.exec("COMMIT"); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	r.after(objs)
	var ic string
	if err := r.conn.QueryRowContext(r.ctx, "PRAGMA integrity_check").Scan(&ic); err != nil {
		return fmt.Errorf("integrity_check of %s: %w", r.res.To, err)
	}
	r.res.IntegrityCheck = ic
	return nil
}

// createTables creates the schema's tables (and full-text tables) in the
// new file and returns them as targets, sqlite_schema's first.
func (r *run) createTables(objs []object) []*target {
	virtual := map[string]string{} // full-text table -> module
	for _, o := range objs {
		if o.typ == "table" {
			if m := module(o.sql); m != "" {
				virtual[o.name] = m
			}
		}
	}
	shadow := map[string]string{} // shadow table -> its full-text table
	for v, m := range virtual {
		for _, suf := range shadowSuffixes[m] {
			shadow[v+"_"+suf] = v
		}
	}
	var tables []object
	for _, o := range objs {
		if o.typ == "table" {
			tables = append(tables, o)
		}
	}
	for _, o := range tables {
		if _, ok := shadow[o.name]; ok || strings.HasPrefix(o.name, "sqlite_") || o.sql == "" {
			continue
		}
		m := virtual[o.name]
		if m != "" && shadowSuffixes[m] == nil {
			r.res.Failed = append(r.res.Failed, fmt.Sprintf("virtual table %s (%s): not recovered, only full-text tables are", o.name, m))
			continue
		}
		res := Table{Name: o.name}
		if err := r.exec(o.sql); err != nil {
			res.Error = err.Error()
		}
		r.res.Tables = append(r.res.Tables, res)
	}
	for _, o := range tables {
		if o.name == "sqlite_sequence" && r.exists(o.name) {
			r.res.Tables = append(r.res.Tables, Table{Name: o.name})
		}
	}
	byName := map[string]*Table{}
	for i := range r.res.Tables {
		byName[r.res.Tables[i].Name] = &r.res.Tables[i]
	}
	created := func(name string) bool { return byName[name] != nil && byName[name].Error == "" }
	sch := &target{obj: object{name: "sqlite_schema"}, kind: kindDiscard, alias: -1,
		cols: []string{"type", "name", "tbl_name", "rootpage", "sql"}, affs: []int{affText, affText, affText, affInteger, affText}, skip: make([]bool, 5)}
	targets := []*target{sch}
	for _, o := range tables {
		v, isShadow := shadow[o.name]
		var t *target
		switch {
		case isShadow && strings.HasSuffix(o.name, "_content") && created(v):
			t = &target{obj: o, kind: kindContent, into: v, res: byName[v], alias: -1}
			t.ftsCols = r.columnNames(v)
			r.columns(t, o.name, true)
		case isShadow:
			t = &target{obj: o, kind: kindDiscard, alias: -1}
			r.columns(t, o.name, true)
		case virtual[o.name] != "":
			continue // filled through its content table
		case created(o.name):
			t = &target{obj: o, kind: kindTable, into: o.name, res: byName[o.name], alias: -1}
			r.columns(t, o.name, false)
		default:
			continue
		}
		targets = append(targets, t)
	}
	return targets
}

// columnNames returns the columns of table name in the new file.
func (r *run) columnNames(name string) []string {
	rows, err := r.conn.QueryContext(r.ctx, "SELECT name FROM pragma_table_info(?)", name)
	if err != nil {
		return nil
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var n string
		if rows.Scan(&n) == nil {
			out = append(out, n)
		}
	}
	return out
}

// columns fills t's columns in record order from the new file's schema
// (pragma table_xinfo; for a WITHOUT ROWID table, its primary key's
// index_xinfo). With shadowOnly the table is the source's own (a
// full-text content table, not created here): its columns are read from
// its CREATE statement by SQLite in a scratch schema instead.
func (r *run) columns(t *target, name string, shadowOnly bool) {
	schema := "main"
	if shadowOnly {
		if err := r.scratch(t.obj.sql); err != nil {
			return
		}
		schema = "scratch"
	}
	var wr int
	r.conn.QueryRowContext(r.ctx, "SELECT wr FROM pragma_table_list WHERE name = ? AND schema = ?", name, schema).Scan(&wr)
	t.noRowid = wr == 1
	type col struct {
		name, typ    string
		pk, hidden   int
		cid, ordinal int
	}
	rows, err := r.conn.QueryContext(r.ctx, "SELECT cid, name, type, pk, hidden FROM pragma_table_xinfo(?, ?)", name, schema)
	if err != nil {
		return
	}
	var cols []col
	for rows.Next() {
		var c col
		if rows.Scan(&c.cid, &c.name, &c.typ, &c.pk, &c.hidden) == nil {
			cols = append(cols, c)
		}
	}
	rows.Close()
	order := make([]int, 0, len(cols))
	if t.noRowid {
		var pkIndex string
		r.conn.QueryRowContext(r.ctx, "SELECT name FROM pragma_index_list(?, ?) WHERE origin = 'pk'", name, schema).Scan(&pkIndex)
		xr, err := r.conn.QueryContext(r.ctx, "SELECT cid FROM pragma_index_xinfo(?, ?) ORDER BY seqno", pkIndex, schema)
		if err == nil {
			for xr.Next() {
				var cid int
				if xr.Scan(&cid) == nil && cid >= 0 && cid < len(cols) {
					order = append(order, cid)
				}
			}
			xr.Close()
		}
	} else {
		pks := 0
		for _, c := range cols {
			if c.pk > 0 {
				pks++
			}
		}
		for i, c := range cols {
			if c.hidden == 2 {
				continue // a virtual generated column is not stored
			}
			if pks == 1 && c.pk == 1 && strings.EqualFold(c.typ, "INTEGER") {
				t.alias = len(order)
			}
			order = append(order, i)
		}
	}
	for _, i := range order {
		c := cols[i]
		t.cols = append(t.cols, c.name)
		t.affs = append(t.affs, affinity(c.typ))
		t.skip = append(t.skip, c.hidden == 3)
	}
	if shadowOnly {
		r.exec("DETACH scratch")
	}
}

// scratch attaches an in-memory schema named scratch holding the table
// createSQL makes.
func (r *run) scratch(createSQL string) error {
	if err := r.exec("ATTACH ':memory:' AS scratch"); err != nil {
		return err
	}
	stmt := strings.Replace(createSQL, "CREATE TABLE ", "CREATE TABLE scratch.", 1)
	if err := r.exec(stmt); err != nil {
		r.exec("DETACH scratch")
		return err
	}
	return nil
}

// shapeFits reports whether the record vals can be a row of t: no more
// fields than its stored columns, each of a kind its column's affinity
// stores, a NULL in the rowid alias.
func (t *target) shapeFits(vals []Value) bool {
	if len(vals) == 0 || len(vals) > len(t.cols) {
		return false
	}
	for i, v := range vals {
		if i == t.alias && v.Kind != KindNull {
			return false
		}
		if !fits(t.affs[i], v.Kind) {
			return false
		}
	}
	return true
}

// orphans reads every page no walk reached, and puts the rows of each
// leaf page into the table whose shape all its records fit (the one with
// the most records of exactly its column count), or into lost_and_found
// when no table or more than one fits as well.
func (r *run) orphans(targets []*target) error {
	for pg := uint32(1); pg <= r.src.count; pg++ {
		if pg%256 == 0 {
			if err := r.ctx.Err(); err != nil {
				return err
			}
		}
		typ, rows, st, ok, err := r.w.orphan(pg)
		if err != nil {
			return err
		}
		if !ok || len(rows) == 0 {
			continue
		}
		// The best fit is the table whose b-tree lost the page (its rowids
		// lie under one of its unreadable pages); then the one with the
		// most records of exactly its column count, then the most values
		// whose column has a declared type (a typeless shadow table fits
		// anything).
		best, bestExact, bestTyped, bestGap, tie := (*target)(nil), -1, -1, false, false
		for _, t := range targets {
			if len(t.cols) == 0 || t.noRowid != (typ != typeTableLeaf) {
				continue
			}
			exact, typed, all := 0, 0, true
			for _, rw := range rows {
				if !t.shapeFits(rw.vals) {
					all = false
					break
				}
				if len(rw.vals) == len(t.cols) {
					exact++
				}
				for i, v := range rw.vals {
					if v.Kind != KindNull && t.affs[i] != affBlob {
						typed++
					}
				}
			}
			if !all {
				continue
			}
			inGap := t.inGap(rows)
			switch {
			case inGap && !bestGap,
				inGap == bestGap && (exact > bestExact || exact == bestExact && typed > bestTyped):
				best, bestExact, bestTyped, bestGap, tie = t, exact, typed, inGap, false
			case inGap == bestGap && exact == bestExact && typed == bestTyped:
				tie = true
			}
		}
		if typ != typeTableLeaf && (best == nil || tie || bestExact < len(rows)) {
			continue // an index page: indexes are rebuilt
		}
		r.res.OrphanPages++
		if best != nil && tie {
			best = nil
		}
		for _, rw := range rows {
			if err := r.put(best, rw, true); err != nil {
				return err
			}
		}
		if best != nil && best.res != nil {
			best.res.CellsUnreadable += st.badCells
		}
	}
	return nil
}

// put writes one row read for t (nil: no table known) into its table, or
// into lost_and_found when it cannot go there whole.
func (r *run) put(t *target, rw row, orphan bool) error {
	if t != nil && t.kind == kindDiscard {
		return nil
	}
	reason := ""
	switch {
	case t == nil:
		reason = "orphan page: no table's shape fits"
	case !rw.complete:
		reason = "overflow chain broken: content incomplete"
	case len(t.cols) == 0:
		reason = "table columns unknown"
	case len(rw.vals) > len(t.cols):
		reason = fmt.Sprintf("record has %d fields, the table %d columns", len(rw.vals), len(t.cols))
	}
	if reason == "" {
		if err := r.queue(t, rw, orphan); err != nil {
			return err
		}
		return r.tick()
	}
	if err := r.strand(t, rw, orphan, reason); err != nil {
		return err
	}
	return r.tick()
}

// strand writes rw, read for t (nil: no table), to lost_and_found.
func (r *run) strand(t *target, rw row, orphan bool, reason string) error {
	name := ""
	if t != nil {
		name = t.obj.name
		if t.res != nil && !orphan {
			t.res.LostAndFound++
		}
	}
	return r.lost(name, rw, reason)
}

// pending is rows of one table and one column list waiting to be
// inserted with one statement: the driver prepares a statement at each
// execution, so one INSERT of many rows costs one parse instead of many.
type pending struct {
	t       *target
	key     string
	head    string
	rows    []row
	orphans []bool
	args    []any
}

// batchRows and batchArgs bound a pending insert (SQLite allows 32,766
// parameters).
const (
	batchRows = 64
	batchArgs = 30000
)

// queue adds rw to the pending insert of its table, flushing the one
// pending before when the table or its column list differs, or when it is
// full.
func (r *run) queue(t *target, rw row, orphan bool) error {
	cols, args := insertArgs(t, rw)
	if t.into == "sqlite_sequence" {
		if err := r.flush(); err != nil {
			return err
		}
		return r.insertOne(t, rw, orphan, cols, args)
	}
	key := t.into + "\x00" + strings.Join(cols, ",")
	if r.pend != nil && (r.pend.key != key || len(r.pend.args)+len(args) > batchArgs) {
		if err := r.flush(); err != nil {
			return err
		}
	}
	if r.pend == nil {
		r.pend = &pending{t: t, key: key, head: fmt.Sprintf("INSERT INTO main.%s(%s) VALUES", quote(t.into), strings.Join(cols, ","))}
	}
	p := r.pend
	p.rows, p.orphans, p.args = append(p.rows, rw), append(p.orphans, orphan), append(p.args, args...)
	if len(p.rows) >= batchRows {
		return r.flush()
	}
	return nil
}

// flush inserts the pending rows with one statement; when it fails (a
// constraint one row breaks), row by row, those that still fail going to
// lost_and_found with the reason.
func (r *run) flush() error {
	p := r.pend
	if p == nil {
		return nil
	}
	r.pend = nil
	n := len(p.args) / len(p.rows)
	one := "(" + strings.TrimSuffix(strings.Repeat("?,", n), ",") + ")"
	q := p.head + strings.TrimSuffix(strings.Repeat(one+",", len(p.rows)), ",")
	if _, err := r.conn.ExecContext(r.ctx, q, p.args...); err == nil {
		for _, o := range p.orphans {
			p.t.count(o)
		}
		return nil
	}
	if err := r.ctx.Err(); err != nil {
		return err
	}
	for i, rw := range p.rows {
		cols, args := insertArgs(p.t, rw)
		if err := r.insertOne(p.t, rw, p.orphans[i], cols, args); err != nil {
			return err
		}
	}
	return nil
}

// count counts a row written into t's table.
func (t *target) count(orphan bool) {
	t.res.Rows++
	if orphan {
		t.res.Attributed++
	}
}

// insertOne inserts one row; a failure other than ctx's sends it to
// lost_and_found.
func (r *run) insertOne(t *target, rw row, orphan bool, cols []string, args []any) error {
	err := r.insert(t, rw, cols, args)
	if err == nil {
		t.count(orphan)
		return nil
	}
	if r.ctx.Err() != nil {
		return r.ctx.Err()
	}
	return r.strand(t, rw, orphan, "insert failed: "+err.Error())
}

// tick commits every 10,000 rows, so that the new file's journal and
// SQLite's cache stay small.
func (r *run) tick() error {
	r.batch++
	if r.batch < 10000 {
		return nil
	}
	r.batch = 0
	if err := r.flush(); err != nil {
		return err
	}
	if err := r.exec("COMMIT"); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return r.exec("BEGIN")
}

// insertArgs is the column list and values that write rw into t's
// table with its rowid (the rowid alias and stored generated columns
// left out; for a full-text content table, the full-text table's
// columns).
func insertArgs(t *target, rw row) (cols []string, args []any) {
	vals := rw.vals
	if t.kind == kindContent {
		cols, args = append(cols, "rowid"), append(args, rw.rowid)
		for i, c := range t.ftsCols {
			if i+1 < len(vals) {
				cols, args = append(cols, quote(c)), append(args, vals[i+1].V)
			}
		}
		return cols, args
	}
	if !t.noRowid && t.into != "sqlite_sequence" {
		cols, args = append(cols, "rowid"), append(args, rw.rowid)
	}
	for i, v := range vals {
		if i == t.alias || t.skip[i] {
			continue
		}
		cols, args = append(cols, quote(t.cols[i])), append(args, v.V)
	}
	return cols, args
}

// insert writes one row into t's table.
func (r *run) insert(t *target, rw row, cols []string, args []any) error {
	if t.into == "sqlite_sequence" && len(rw.vals) > 0 {
		// The AUTOINCREMENT tables' inserts made their own entries, at
		// most the original's: the original's win.
		if err := r.exec("DELETE FROM sqlite_sequence WHERE name = ?", rw.vals[0].V); err != nil {
			return err
		}
	}
	q := fmt.Sprintf("INSERT INTO main.%s(%s) VALUES(%s)", quote(t.into), strings.Join(cols, ","), strings.TrimSuffix(strings.Repeat("?,", len(cols)), ","))
	_, err := r.conn.ExecContext(r.ctx, q, args...)
	return err
}

// lostFound is the lost_and_found table of the new file.
type lostFound struct {
	name   string
	fields int
}

// lost writes rw to lost_and_found (created on first use, with a column
// added for each field beyond those it has).
func (r *run) lost(table string, rw row, reason string) error {
	if r.lf == nil {
		name := "lost_and_found"
		for i := 0; r.exists(name); i++ {
			name = fmt.Sprintf("lost_and_found_%d", i)
		}
		if err := r.exec(fmt.Sprintf("CREATE TABLE %s(id INTEGER PRIMARY KEY, source_table TEXT, pgno INTEGER, row_id INTEGER, nfield INTEGER, complete INTEGER, reason TEXT)", quote(name))); err != nil {
			return fmt.Errorf("create lost_and_found: %w", err)
		}
		r.lf = &lostFound{name: name}
		r.res.LostAndFoundTable = name
	}
	for r.lf.fields < len(rw.vals) {
		if err := r.exec(fmt.Sprintf("ALTER TABLE %s ADD COLUMN c%d", quote(r.lf.name), r.lf.fields)); err != nil {
			return fmt.Errorf("lost_and_found: %w", err)
		}
		r.lf.fields++
	}
	cols := []string{"source_table", "pgno", "row_id", "nfield", "complete", "reason"}
	args := []any{nullIfEmpty(table), rw.pgno, rw.rowid, len(rw.vals), rw.complete, reason}
	for i, v := range rw.vals {
		cols, args = append(cols, fmt.Sprintf("c%d", i)), append(args, v.V)
	}
	q := fmt.Sprintf("INSERT INTO %s(%s) VALUES(%s)", quote(r.lf.name), strings.Join(cols, ","), strings.TrimSuffix(strings.Repeat("?,", len(cols)), ","))
	if _, err := r.conn.ExecContext(r.ctx, q, args...); err != nil {
		return fmt.Errorf("lost_and_found: %w", err)
	}
	r.res.LostAndFound++
	return nil
}

func nullIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func (r *run) exists(name string) bool {
	var n int
	r.conn.QueryRowContext(r.ctx, "SELECT count(*) FROM sqlite_schema WHERE name = ? COLLATE NOCASE", name).Scan(&n)
	return n > 0
}

// after creates, once the rows are in, the indexes, views and triggers,
// and rebuilds external-content full-text tables from their content.
func (r *run) after(objs []object) {
	order := map[string]int{"index": 0, "table": 1, "view": 2, "trigger": 3}
	var rest []object
	for _, o := range objs {
		if o.typ != "table" && o.sql != "" {
			rest = append(rest, o)
		}
		if o.typ == "table" && module(o.sql) != "" && strings.Contains(strings.ToLower(strings.ReplaceAll(o.sql, " ", "")), "content=") {
			rest = append(rest, object{typ: "table", name: o.name, sql: fmt.Sprintf("INSERT INTO %s(%s) VALUES('rebuild')", quote(o.name), quote(o.name))})
		}
	}
	sort.SliceStable(rest, func(i, j int) bool { return order[rest[i].typ] < order[rest[j].typ] })
	for _, o := range rest {
		if err := r.exec(o.sql); err != nil {
			r.res.Failed = append(r.res.Failed, fmt.Sprintf("%s %s: %v", o.typ, o.name, err))
			continue
		}
		what := o.typ + " " + o.name
		if o.typ == "table" {
			what = "full-text table " + o.name + " rebuilt"
		}
		r.res.Created = append(r.res.Created, what)
	}
}
