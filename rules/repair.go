package rules

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/preflight-sqlite/preflight/probe/health"
)

// FillRepairs writes the remedy text into in, from the facts of the check:
// each Damage's Repair (Repair over in.Path) and, when the check classified
// its messages (in.Classified), the Summary (Summarize). A nil in is left
// alone. It is called once per checked database, before the rules read the
// report and before it is rendered.
func FillRepairs(in *health.Integrity) {
	if in == nil {
		return
	}
	for i := range in.Damage {
		in.Damage[i].Repair = Repair(in.Damage[i], in.Path)
	}
	if in.Classified {
		in.Summary = Summarize(in.Damage)
	}
}

// Repair is the repair for damage d of the database at dbPath, as text
// with the exact command: "REINDEX idx" for an index, the FTS rebuild
// statement for a full-text index, preflight recover into
// dbPath.recovered for a table (and for the rows of a full-text table,
// NAME_content, which it rebuilds the full-text table from) or for
// unclassified damage, VACUUM INTO dbPath.vacuumed or the
// recovery for page accounting. Repairs write: run them with every other
// user of the database stopped.
func Repair(d health.Damage, dbPath string) string {
	switch d.Kind {
	case health.KindIndex:
		return "REINDEX " + ident(d.Object)
	case health.KindFTS:
		return rebuild(d.Table)
	case health.KindTable:
		if d.Table != "" && d.Table != d.Object {
			return fmt.Sprintf("%s holds the rows of full-text table %s: %s (it rebuilds %s from them)",
				d.Object, d.Table, repairTable(dbPath), d.Table)
		}
	case health.KindStructural:
		return fmt.Sprintf("copy into a new file: %s; or %s", vacuumInto(dbPath), repairTable(dbPath))
	}
	return repairTable(dbPath)
}

// Summarize returns a one-line summary of damage, worst first: tables
// ("table t damaged: rows at risk"), unclassified damage, indexes
// ("index idx_a damaged: REINDEX idx_a"), full-text indexes
// ("search index docs damaged, data intact"), then structural damage;
// damage to the whole file (KindUnknown, Object "database") reads
// "database unreadable: rows may be at risk";
// parts joined with "; ". It returns "ok" for no damage. Index repairs are
// Repair's.
func Summarize(damage []health.Damage) string {
	var tables, unknown, indexes, fts, reindex []string
	structural := false
	for _, d := range damage {
		switch d.Kind {
		case health.KindTable:
			tables = appendUniq(tables, d.Object)
		case health.KindIndex:
			indexes = appendUniq(indexes, d.Object)
			reindex = appendUniq(reindex, Repair(d, ""))
		case health.KindFTS:
			fts = appendUniq(fts, d.Table)
		case health.KindStructural:
			structural = true
		default:
			unknown = appendUniq(unknown, d.Object)
		}
	}
	var parts []string
	switch len(tables) {
	case 0:
	case 1:
		parts = append(parts, "table "+tables[0]+" damaged: rows at risk")
	default:
		parts = append(parts, "tables "+strings.Join(tables, ", ")+" damaged: rows at risk")
	}
	switch {
	case slices.Contains(unknown, "database"):
		parts = append(parts, "database unreadable: rows may be at risk")
	case len(unknown) > 0:
		parts = append(parts, "unclassified damage: rows may be at risk")
	}
	switch len(indexes) {
	case 0:
	case 1:
		parts = append(parts, "index "+indexes[0]+" damaged: "+reindex[0])
	default:
		parts = append(parts, "indexes "+strings.Join(indexes, ", ")+" damaged: "+strings.Join(reindex, "; "))
	}
	if len(fts) > 0 {
		parts = append(parts, "search index "+strings.Join(fts, ", ")+" damaged, data intact")
	}
	if structural {
		parts = append(parts, "structural damage (page accounting): VACUUM INTO a new file")
	}
	if len(parts) == 0 {
		return "ok"
	}
	return strings.Join(parts, "; ")
}

func appendUniq(s []string, v string) []string {
	if slices.Contains(s, v) {
		return s
	}
	return append(s, v)
}

var reIdent = lazyRegexp(`^[A-Za-z_][A-Za-z0-9_]*$`)

// ident quotes an SQL identifier unless it is a plain word.
func ident(name string) string {
	if reIdent().MatchString(name) {
		return name
	}
	return `"` + strings.ReplaceAll(name, `"`, `""`) + `"`
}

// rebuild is the FTS rebuild command for full-text table vt.
func rebuild(vt string) string {
	q := ident(vt)
	return fmt.Sprintf("INSERT INTO %s(%s) VALUES('rebuild')", q, q)
}

// repairTable is the repair for lost rows, naming dbPath.
func repairTable(dbPath string) string {
	return "restore from a backup, or recover into a new file: " + RecoverCommand(dbPath)
}

// RecoverCommand is the command that salvages dbPath into
// dbPath.recovered: preflight recover, which reads the pages itself (the
// sqlite3 CLI's .recover needs the sqlite_dbpage table, which most
// distributions' builds lack).
func RecoverCommand(dbPath string) string {
	return fmt.Sprintf("preflight recover %s --to %s", repairShell(dbPath), repairShell(dbPath+".recovered"))
}

// vacuumInto is the sqlite3 command copying dbPath into a new file.
func vacuumInto(dbPath string) string {
	lit := "'" + strings.ReplaceAll(dbPath+".vacuumed", "'", "''") + "'"
	return fmt.Sprintf("sqlite3 %s %s", repairShell(dbPath), repairShell("VACUUM INTO "+lit))
}

var reShellSafe = lazyRegexp(`^[A-Za-z0-9_@%+=:,./-]+$`)

// repairShell quotes s for a POSIX shell: as is when safe, in double
// quotes when that needs no escapes, else in single quotes. The repairs
// have always quoted this way (unlike shell.Quote), and their text is
// part of the JSON report.
func repairShell(s string) string {
	if reShellSafe().MatchString(s) {
		return s
	}
	if !strings.ContainsAny(s, "\"$`\\!") {
		return `"` + s + `"`
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// lazyRegexp compiles expr on first use: preflight run starts every
// container, and package-level regexps would be compiled at each start.
func lazyRegexp(expr string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
}
