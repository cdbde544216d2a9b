package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/preflight-sqlite/preflight/salvage"
)

// RecoverCmd is `preflight recover`.
type RecoverCmd struct {
	Source string
	CheckFlags
	To              string
	Replace         bool
	AcceptLoss      bool
	SchemaFrom      string
	AllowUnverified bool
	Format          string
}

func newRecoverCmd(g *Globals) *cobra.Command {
	c := &RecoverCmd{}
	cmd := &cobra.Command{
		Use:   "recover SRC --to NEW",
		Short: "Salvage a damaged database into a new file, every row readable.",
		Long: wrap("Salvage a damaged database into a new file (--to NEW): every row that can be read, rowids kept, from the pages themselves; the source is only read. "+
			"SRC is the damaged database (read only: its -wal's committed frames are read too; nothing is written beside it).", 0, helpWidth),
		Example: examples["recover"],
		Args:    cobra.ExactArgs(1),
		RunE:    func(_ *cobra.Command, args []string) error { c.Source = args[0]; return c.Run(g) },
	}
	fs := cmd.Flags()
	c.CheckFlags.AddFlags(cmd)
	fs.StringVar(&c.To, "to", "", "Write the new database to `NEW`, which must not exist (with --replace, default SRC.recovered).")
	boolVar(fs, &c.Replace, "replace", "", "Once recovered, put NEW in SRC's place: SRC, -wal and -shm backed up first (kept, as convert does), the guard run again, the result verified. Never when rows are missing or in lost_and_found, unless --accept-loss.")
	boolVar(fs, &c.AcceptLoss, "accept-loss", "", "With --replace: replace even when rows are missing or in lost_and_found (the backup keeps the original).")
	fs.StringVar(&c.SchemaFrom, "schema-from", "", "Take the tables, indexes, views and triggers from `FILE` (a database the application creates empty) when SRC's schema is damaged.")
	boolVar(fs, &c.AllowUnverified, "allow-unverified", "", "Recover even when a live-writer probe could not run (no Docker API access). A writer that was seen is never overridden.")
	enumVar(fs, &c.Format, "format", "text", "Output format: text or json (schema preflight-recover/v1).", "text", "json")
	return cmd
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
	if c.AcceptLoss && !c.Replace {
		return usageError(errors.New("--accept-loss needs --replace"))
	}
	if c.To == "" && !c.Replace {
		return usageError(errors.New("recover needs --to NEW (or --replace)"))
	}
	if c.To == "" {
		c.To = c.Source + ".recovered"
	}
	if c.Replace && filepath.Dir(c.To) != filepath.Dir(c.Source) {
		return usageError(fmt.Errorf("--replace needs --to in %s, the source's directory: the swap is a rename", filepath.Dir(c.Source)))
	}
	copts, err := c.options(g, []string{c.Source})
	if err != nil {
		return err
	}
	opts := salvage.Options{Source: c.Source, To: c.To, SchemaFrom: c.SchemaFrom, Guard: &copts, AllowUnverified: c.AllowUnverified}
	res, err := salvage.Run(g.ctx, opts)
	switch {
	case errors.Is(err, salvage.ErrBadInput):
		return usageError(err)
	case errors.Is(err, salvage.ErrRefused):
	case g.ctx.Err() != nil:
		return &exitError{code: exitInternal, err: fmt.Errorf("recover: interrupted (%v); %s was removed, %s is untouched", context.Cause(g.ctx), c.To, c.Source)}
	case err != nil:
		return fmt.Errorf("recover: %w; %s was removed, %s is untouched", err, c.To, c.Source)
	}
	var rep *salvage.Replacement
	var repErr error
	if c.Replace && err == nil && res.IntegrityCheck == "ok" {
		rep, repErr = salvage.Replace(g.ctx, opts, salvage.ReplaceOptions{AcceptLoss: c.AcceptLoss}, res)
	}
	out := struct {
		*salvage.Result
		Replaced *salvage.Replacement `json:"replaced,omitempty"`
	}{res, rep}
	if c.Format == "json" {
		enc := json.NewEncoder(g.stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(out); err != nil {
			return err
		}
	} else if err := renderRecover(g.stdout, res, rep); err != nil {
		return err
	}
	switch {
	case errors.Is(repErr, salvage.ErrStranded):
		return &exitError{code: exitLoss, err: fmt.Errorf("recover: not replaced: %v; %s is as it was, %s beside it", repErr, c.Source, c.To),
			hints: []string{"check " + c.To + " yourself, then run again with --accept-loss to put it in place (the original is backed up first)"}}
	case errors.Is(repErr, salvage.ErrRefused):
		return &exitError{code: exitUnsafe, err: fmt.Errorf("recover: not replaced: the guard refused (see above); %s is as it was, %s beside it", c.Source, c.To)}
	case errors.Is(repErr, salvage.ErrBadInput):
		return usageError(fmt.Errorf("recover: --replace: %w", repErr))
	case repErr != nil:
		return fmt.Errorf("recover: --replace: %w", repErr)
	case rep != nil && (rep.IntegrityCheck != "ok" || !rep.RowsMatch):
		return &exitError{code: exitInternal, err: fmt.Errorf("recover: replaced, but the verification found integrity_check %q, rows match %v; the original is in %s", rep.IntegrityCheck, rep.RowsMatch, rep.Backup.Dir)}
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
func renderRecover(w io.Writer, r *salvage.Result, rep *salvage.Replacement) error {
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
	if rep != nil {
		fmt.Fprintf(&b, "  replaced: %s is now the recovered file; the original, -wal and -shm in %s; verified: integrity_check %s, row counts match %v\n",
			oneLine(r.Source), oneLine(rep.Backup.Dir), oneLine(rep.IntegrityCheck), rep.RowsMatch)
	}
	_, err := io.WriteString(w, b.String())
	return err
}
