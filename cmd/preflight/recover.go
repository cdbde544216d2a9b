package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/preflight-sqlite/preflight/salvage"
)

// RecoverCmd is `preflight recover`.
type RecoverCmd struct {
	Source string `arg:"" name:"src" help:"The damaged database (read only: its -wal's committed frames are read too; nothing is written beside it)."`
	CheckFlags
	To              string `name:"to" placeholder:"NEW" required:"" help:"The new database to write; it must not exist."`
	SchemaFrom      string `name:"schema-from" placeholder:"FILE" help:"Take the tables, indexes, views and triggers from FILE (a database the application creates empty) when SRC's schema is damaged."`
	AllowUnverified bool   `name:"allow-unverified" help:"Recover even when a live-writer probe could not run (no Docker API access). A writer that was seen is never overridden."`
	Format          string `name:"format" enum:"text,json" default:"text" env:"PREFLIGHT_FORMAT" help:"Output format: text or json (schema preflight-recover/v1)."`
}

// Run recovers and renders the result. Exit codes: 0 every row reached
// was recovered and NEW passes integrity_check, 5 recovered with loss
// (rows missing or in lost_and_found), 3 the guard refused (a writer, a
// probe that could not run), 2 bad input (NEW exists, SRC no database),
// 1 the recovery failed (NEW removed).
func (c *RecoverCmd) Run(g *Globals) error {
	if err := needsLinux("recover", false); err != nil {
		return err
	}
	if g.Mountinfo != "" {
		return usageError(errors.New("recover works on this machine's files: --mountinfo cannot be used"))
	}
	copts, err := c.options(g, []string{c.Source})
	if err != nil {
		return err
	}
	res, err := salvage.Run(g.ctx, salvage.Options{Source: c.Source, To: c.To, SchemaFrom: c.SchemaFrom, Guard: &copts, AllowUnverified: c.AllowUnverified})
	switch {
	case errors.Is(err, salvage.ErrBadInput):
		return usageError(err)
	case errors.Is(err, salvage.ErrRefused):
	case g.ctx.Err() != nil:
		return &exitError{code: exitInternal, err: fmt.Errorf("recover: interrupted (%v); %s was removed, %s is untouched", context.Cause(g.ctx), c.To, c.Source)}
	case err != nil:
		return fmt.Errorf("recover: %w; %s was removed, %s is untouched", err, c.To, c.Source)
	}
	if c.Format == "json" {
		enc := json.NewEncoder(g.stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(res); err != nil {
			return err
		}
	} else if err := renderRecover(g.stdout, res); err != nil {
		return err
	}
	switch {
	case len(res.Refusals) > 0:
		return &exitError{code: exitUnsafe, err: errors.New("recover: refused (see above); nothing was read or written")}
	case res.IntegrityCheck != "ok":
		return &exitError{code: exitInternal, err: fmt.Errorf("recover: %s fails integrity_check: %s", c.To, res.IntegrityCheck)}
	case res.Loss():
		return &exitError{code: exitLoss, err: fmt.Errorf("recover: %s holds what could be read, with loss (see above): compare it with what you expect before using it", c.To)}
	}
	return nil
}

// renderRecover writes the text result.
func renderRecover(w io.Writer, r *salvage.Result) error {
	var b strings.Builder
	if len(r.Refusals) > 0 {
		fmt.Fprintf(&b, "%s: refused, nothing read or written\n", oneLine(r.Source))
		for _, rf := range r.Refusals {
			fmt.Fprintf(&b, "  %s: %s\n", rf.Reason, oneLine(rf.Message))
			for _, rem := range rf.Remedy {
				fmt.Fprintf(&b, "    fix: %s\n", oneLine(rem))
			}
		}
		for _, n := range r.Notes {
			fmt.Fprintf(&b, "  note: %s\n", oneLine(n))
		}
		_, err := io.WriteString(w, b.String())
		return err
	}
	guessed := ""
	if r.PageSizeGuessed {
		guessed = ", found from the b-tree pages"
	}
	fmt.Fprintf(&b, "%s -> %s: %d pages of %d bytes%s", oneLine(r.Source), oneLine(r.To), r.Pages, r.PageSize, guessed)
	if r.WALFrames > 0 {
		fmt.Fprintf(&b, ", %d committed -wal frames", r.WALFrames)
	}
	fmt.Fprintf(&b, ", in %s\n", shortDuration(r.Duration))
	for _, t := range r.Tables {
		fmt.Fprintf(&b, "  table %s: %s", oneLine(t.Name), count(int(t.Rows), "row", "rows"))
		var extra []string
		if t.Attributed > 0 {
			extra = append(extra, fmt.Sprintf("%d from pages no b-tree reached", t.Attributed))
		}
		if t.LostAndFound > 0 {
			extra = append(extra, fmt.Sprintf("%d to lost_and_found", t.LostAndFound))
		}
		if t.PagesUnreadable > 0 {
			extra = append(extra, count(t.PagesUnreadable, "page unreadable", "pages unreadable"))
		}
		if t.CellsUnreadable > 0 {
			extra = append(extra, count(t.CellsUnreadable, "cell unreadable", "cells unreadable"))
		}
		if t.Error != "" {
			extra = append(extra, "not created: "+t.Error)
		}
		if len(extra) > 0 {
			fmt.Fprintf(&b, " (%s)", strings.Join(extra, ", "))
		}
		b.WriteString("\n")
	}
	if r.LostAndFound > 0 {
		fmt.Fprintf(&b, "  %s: %s (from %s no table's shape fits, or that could not go into their table whole)\n", r.LostAndFoundTable, count(int(r.LostAndFound), "row", "rows"), count(r.OrphanPages, "orphan page", "orphan pages"))
	}
	if r.SchemaUnreadable > 0 {
		fmt.Fprintf(&b, "  schema: %s\n", count(r.SchemaUnreadable, "page unreadable", "pages unreadable"))
	}
	if len(r.Created) > 0 {
		fmt.Fprintf(&b, "  created after the data: %s\n", strings.Join(r.Created, ", "))
	}
	for _, f := range r.Failed {
		fmt.Fprintf(&b, "  not created: %s\n", oneLine(f))
	}
	for _, n := range r.Notes {
		fmt.Fprintf(&b, "  note: %s\n", oneLine(n))
	}
	fmt.Fprintf(&b, "  integrity_check: %s\n", oneLine(r.IntegrityCheck))
	_, err := io.WriteString(w, b.String())
	return err
}
