package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/preflight-sqlite/preflight"
	"github.com/preflight-sqlite/preflight/probe/docker"
	"github.com/preflight-sqlite/preflight/probe/locks"
)

// renderText writes the human report: one block per data directory, then
// the findings with their remedies, then the verdict.
func renderText(w io.Writer, r *preflight.Report) error {
	var b strings.Builder
	if e := r.Engine; e != nil {
		fmt.Fprintf(&b, "engine: %s %s (API %s)\n", e.Kind, e.Version, e.APIVersion)
	}
	if c := r.Container; c != nil {
		fmt.Fprintf(&b, "container: %s (%s), paths as it sees them\n", c.Name, c.Image)
	}
	for _, d := range r.DataDirs {
		if d.ContainerPath != "" && d.ContainerPath != d.Path {
			fmt.Fprintf(&b, "%s (on this host: %s)\n", oneLine(d.ContainerPath), oneLine(d.Path))
		} else {
			fmt.Fprintf(&b, "%s\n", oneLine(d.Path))
		}
		if d.Mount != nil {
			platform := ""
			if d.Mount.Platform != "" {
				platform = ", " + d.Mount.Platform
			}
			fmt.Fprintf(&b, "  filesystem: %s (%s from %s at %s%s)\n", d.Mount.Class, oneLine(d.Mount.FSType), oneLine(d.Mount.Source), oneLine(d.Mount.Mountpoint), platform)
		} else {
			fmt.Fprintf(&b, "  filesystem: unknown (%s)\n", oneLine(d.MountError))
		}
		switch {
		case d.Unresponsive != "":
			fmt.Fprintf(&b, "  databases: not inspected (the path does not answer)\n")
		case r.MountTable.Saved && !d.Inspected:
			fmt.Fprintf(&b, "  databases: not inspected (the path is on the machine the mount table came from)\n")
		case d.StatError != "":
			fmt.Fprintf(&b, "  databases: not inspected (the path could not be read)\n")
		case !d.Inspected:
			fmt.Fprintf(&b, "  databases: not inspected\n")
		case len(d.Databases) == 0 && d.Duplicates > 0:
			fmt.Fprintf(&b, "  databases: %d, already listed under an earlier path\n", d.Duplicates)
		case len(d.Databases) == 0:
			fmt.Fprintf(&b, "  databases: none found\n")
		default:
			for _, db := range d.Databases {
				fmt.Fprintf(&b, "  %s  %s  %s\n", oneLine(db.Path), dbMode(db), dbSizes(db))
				if db.Mount != nil && d.Mount != nil && db.Mount.Mountpoint != d.Mount.Mountpoint {
					fmt.Fprintf(&b, "    on its own mount: %s (%s from %s at %s)\n", db.Mount.Class, db.Mount.FSType, db.Mount.Source, db.Mount.Mountpoint)
				}
				renderWriters(&b, db)
				renderLockHolders(&b, db)
				renderHealth(&b, db)
			}
		}
	}
	renderFindings(&b, r.Findings, oneLine)
	fmt.Fprintf(&b, "\nverdict: %s (recommended journal mode: %s)\n", r.Verdict, r.JournalMode)
	_, err := io.WriteString(w, b.String())
	return err
}

func dbMode(db preflight.Database) string {
	switch {
	case preflight.DamagedDB(&db):
		return "damaged header"
	case db.NotSQLite:
		return "not sqlite"
	case db.New:
		return "new"
	case db.Err != "":
		return "unreadable"
	}
	return string(db.JournalMode)
}

func dbSizes(db preflight.Database) string {
	s := fmt.Sprintf("%d bytes", db.SizeBytes)
	if db.PageSize > 0 {
		s += fmt.Sprintf(", page %d", db.PageSize)
	}
	if db.WAL.Exists {
		s += fmt.Sprintf(", -wal %d", db.WAL.SizeBytes)
	}
	if db.SHM.Exists {
		s += fmt.Sprintf(", -shm %d", db.SHM.SizeBytes)
	}
	if db.Journal.Exists {
		s += fmt.Sprintf(", -journal %d", db.Journal.SizeBytes)
	}
	if db.Header != nil && db.Header.LibraryVersion() != "" {
		s += ", last written by SQLite " + db.Header.LibraryVersion()
	}
	return s
}

// renderWriters lists who has db open, and what the probes could not see.
func renderWriters(b *strings.Builder, db preflight.Database) {
	if db.New || db.NotSQLite || db.WriterProbes.Processes == "" {
		return
	}
	for _, w := range db.Writers {
		fmt.Fprintf(b, "    open by %s\n", oneLine(w.Name()))
	}
	p := db.WriterProbes
	switch {
	case len(db.Writers) == 0 && p.Sure:
		fmt.Fprintf(b, "    no writer found (%s)\n", probesChecked(p))
	case len(db.Writers) == 0:
		fmt.Fprintf(b, "    no writer found (%s), but not sure:\n", probesChecked(p))
	case !p.Sure:
		fmt.Fprintf(b, "    others may be unseen:\n")
	}
	if !p.Sure {
		for _, why := range p.Blind {
			fmt.Fprintf(b, "      - %s\n", why)
		}
	}
}

// renderLockHolders says who holds which of SQLite's locks on db, and
// with --watch how long each write lock was held.
func renderLockHolders(b *strings.Builder, db preflight.Database) {
	for _, h := range db.LockHolders {
		fmt.Fprintf(b, "    lock: %s %s\n", oneLine(h.Who()), h.What())
		if h.Invisible {
			fmt.Fprintf(b, "      (run preflight in the host's PID namespace, docker run --pid host, to name it)\n")
		}
	}
	w := db.LockWatch
	if w == nil {
		return
	}
	if len(w.Holds) == 0 {
		fmt.Fprintf(b, "    lock watch (%s): no write lock or checkpoint held at any of %d samples\n", w.Window.Round(time.Millisecond), w.Samples)
		return
	}
	for _, hd := range w.Holds {
		who := "a process in another PID namespace"
		switch {
		case hd.PID > 0:
			who = fmt.Sprintf("process %d", hd.PID)
		case hd.ProcPID > 0:
			who = fmt.Sprintf("host process %d", hd.ProcPID)
		}
		end := ""
		if hd.AtEnd {
			end = ", still held at the end"
		}
		fmt.Fprintf(b, "    lock watch (%s): %s %s, longest %s (%d %s%s)\n", w.Window.Round(time.Millisecond), who, locks.Held{Role: hd.Role}, hd.Longest.Round(10*time.Millisecond), hd.Times, plural(hd.Times, "time", "times"), end)
	}
}

// plural is one when n is 1, else many.
func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// renderHealth prints the --deep results of db.
func renderHealth(b *strings.Builder, db preflight.Database) {
	h := db.Health
	if h == nil {
		return
	}
	if h.WAL != nil {
		w := h.WAL
		fmt.Fprintf(b, "    wal: %s, %s", count(w.ValidFrames, "valid frame", "valid frames"), count(w.CommittedTxns, "committed transaction", "committed transactions"))
		if w.FirstInvalidFrame > 0 {
			fmt.Fprintf(b, "; breaks at frame %d (%s)", w.FirstInvalidFrame, w.InvalidReason)
		}
		b.WriteString("\n")
	}
	if in := h.Integrity; in != nil {
		copyNote := ""
		if in.CheckedCopy {
			copyNote = ", on a private copy"
		}
		fmt.Fprintf(b, "    integrity (%s%s, %s): %s\n", in.Check, copyNote, in.Elapsed.Round(time.Millisecond), in.Summary)
	}
}

// probesChecked says which live-writer probes looked at a database and
// which did not: "processes, locks, containers checked" when all of them
// ran, "processes, locks checked; containers not checked (--docker off)"
// when the Docker probe was turned off.
func probesChecked(p preflight.WriterProbes) string {
	var ran, not []string
	for _, pr := range []struct {
		name   string
		status preflight.ProbeStatus
	}{
		{"processes", p.Processes}, {"locks", p.Locks}, {"containers", p.Docker},
	} {
		switch pr.status {
		case preflight.ProbeRan:
			ran = append(ran, pr.name)
		case preflight.ProbeUnsure:
			ran = append(ran, pr.name+" (partly)")
		case docker.StatusNoDaemon:
			ran = append(ran, pr.name+" (no Docker engine here)")
		case docker.StatusOff:
			not = append(not, pr.name+" (--docker off)")
		default:
			not = append(not, pr.name+" ("+string(pr.status)+")")
		}
	}
	switch p.Kube {
	case "":
	case preflight.ProbeRan:
		ran = append(ran, "pods")
	default:
		not = append(not, "pods ("+string(p.Kube)+")")
	}
	if p.Activity == preflight.ProbeQuiet {
		ran = append(ran, "file activity")
	}
	s := "nothing checked"
	if len(ran) > 0 {
		s = strings.Join(ran, ", ") + " checked"
	}
	if len(not) > 0 {
		s += "; not checked: " + strings.Join(not, ", ")
	}
	return s
}

// count is "1 frame" or "N frames": n with the noun's number right.
func count(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// renderFindings writes a blank line and each finding with its fixes,
// each text passed through clean ("LEVEL id (ignored): message", "  fix:
// remedy"); nothing when there are none.
func renderFindings(b *strings.Builder, fs []preflight.Finding, clean func(string) string) {
	if len(fs) > 0 {
		b.WriteString("\n")
	}
	for _, f := range fs {
		ign := ""
		if f.Ignored {
			ign = " (ignored)"
		}
		fmt.Fprintf(b, "%s %s%s: %s\n", strings.ToUpper(string(f.Level)), f.ID, ign, clean(f.Message))
		for _, rem := range f.Remedy {
			fmt.Fprintf(b, "  fix: %s\n", clean(rem))
		}
	}
}
