package locks

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"
)

// Hold is how long one holder kept one lock that excludes writers (or a
// checkpoint) during a Watch.
type Hold struct {
	// PID, ProcPID and OtherNamespace identify the holder as Lock does;
	// all zero for a holder of another PID namespace that /proc cannot
	// name.
	PID            int  `json:"pid,omitempty"`
	ProcPID        int  `json:"proc_pid,omitempty"`
	OtherNamespace bool `json:"other_pid_namespace,omitempty"`
	// Role is the lock held: a Role whose Write() is true, or
	// RoleCheckpoint.
	Role Role `json:"role"`
	// Longest is the longest unbroken stretch the lock was seen held, in
	// nanoseconds in JSON: from the first sample that saw it to the first
	// that did not (or the end of the window), so it is exact to one
	// sampling interval.
	Longest time.Duration `json:"longest_ns"`
	// Times is how many separate stretches were seen.
	Times int `json:"times"`
	// AtEnd says the lock was still held when the window closed: it was
	// held at least Longest, perhaps much longer.
	AtEnd bool `json:"held_at_end,omitempty"`
}

// Watched is what Watch saw.
type Watched struct {
	// Window is the length of the watch, Interval the time between
	// samples (JSON: nanoseconds).
	Window   time.Duration `json:"window_ns"`
	Interval time.Duration `json:"interval_ns"`
	// Samples is the number of probes taken.
	Samples int `json:"samples"`
	// Holds lists each holder's writer-excluding locks and checkpoints,
	// longest first. Never nil.
	Holds []Hold `json:"holds"`
}

type holdKey struct {
	pid, procPID int
	other        bool
	role         Role
}

// Watch probes dbPath's locks every interval (at least 10ms) for window
// and reports how long each holder kept the WAL write lock, RESERVED,
// PENDING or EXCLUSIVE, recovery or a checkpoint. Each sample is bounded
// by timeout as in ProbeWithin. The same warning as Probe's applies: no
// SQLite connection to dbPath may be open in this process. It returns
// ctx's error when ctx ends first (with what was seen so far), Probe's
// error when the first probe fails, and an error wrapping ErrNoAnswer
// (with what was seen so far) when a sample is not answered in time; a
// later failed sample is skipped.
func Watch(ctx context.Context, dbPath string, window, interval, timeout time.Duration) (Watched, error) {
	interval = max(interval, 10*time.Millisecond)
	w := Watched{Window: window, Interval: interval, Holds: []Hold{}}
	open := map[holdKey]time.Time{} // stretches running, by when first seen
	idx := map[holdKey]int{}
	closeHold := func(k holdKey, now time.Time, atEnd bool) {
		i, ok := idx[k]
		if !ok {
			idx[k] = len(w.Holds)
			w.Holds = append(w.Holds, Hold{PID: k.pid, ProcPID: k.procPID, OtherNamespace: k.other, Role: k.role})
			i = idx[k]
		}
		h := &w.Holds[i]
		h.Times++
		h.Longest = max(h.Longest, now.Sub(open[k]))
		h.AtEnd = h.AtEnd || atEnd
		delete(open, k)
	}
	start := time.Now()
	t := time.NewTicker(interval)
	defer t.Stop()
	var err error
	for {
		now := time.Now()
		res, perr := ProbeWithin(ctx, dbPath, timeout)
		if perr != nil && (w.Samples == 0 || errors.Is(perr, ErrNoAnswer)) {
			// A stuck query is not retried: each would leave another
			// thread blocked.
			err = fmt.Errorf("watch locks: %w", perr)
			break
		}
		if perr == nil {
			w.Samples++
			seen := map[holdKey]bool{}
			for _, k := range holdKeys(res.Locks) {
				seen[k] = true
				if _, ok := open[k]; !ok {
					open[k] = now
				}
			}
			for k := range open {
				if !seen[k] {
					closeHold(k, now, false)
				}
			}
		}
		if now.Sub(start) >= window {
			break
		}
		select {
		case <-ctx.Done():
			err = ctx.Err()
		case <-t.C:
			continue
		}
		break
	}
	end := time.Now()
	for k := range open {
		closeHold(k, end, true)
	}
	sortHolds(w.Holds)
	return w, err
}

// holdKeys groups ls by holder and returns the watched roles of each.
func holdKeys(ls []Lock) []holdKey {
	type who struct {
		pid, procPID int
		other        bool
	}
	by := map[who][]Lock{}
	var order []who
	for _, l := range ls {
		if l.OFD {
			continue
		}
		k := who{l.PID, l.ProcPID, l.OtherNamespace}
		if by[k] == nil {
			order = append(order, k)
		}
		by[k] = append(by[k], l)
	}
	var out []holdKey
	for _, k := range order {
		for _, h := range Roles(by[k], false) {
			if h.Role.Write() || h.Role == RoleCheckpoint {
				out = append(out, holdKey{k.pid, k.procPID, k.other, h.Role})
			}
		}
	}
	return out
}

func sortHolds(hs []Hold) {
	sort.SliceStable(hs, func(i, j int) bool { return hs[i].Longest > hs[j].Longest })
}
