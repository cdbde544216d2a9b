// Package fsbound bounds how long a caller waits on a filesystem that may
// stop answering: a stuck FUSE daemon, a dead NFS or SMB server, a VM
// share whose host side went away. A stat(2) on such a path blocks in the
// kernel, uninterruptibly for a hard NFS mount, so the call runs in its own
// goroutine and the caller stops waiting after the timeout. A call that
// never returns keeps its goroutine (and an OS thread) until the process
// exits; preflight's commands are short-lived.
package fsbound

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"time"

	"github.com/preflight-sqlite/preflight/internal/rawfile"
)

// DefaultTimeout is the wait used when a caller passes zero.
const DefaultTimeout = 5 * time.Second

// ErrNoAnswer is wrapped by the errors of Responsive when the path did not
// answer within the timeout.
var ErrNoAnswer = errors.New("did not answer")

// Within runs fn in its own goroutine and waits at most timeout (zero
// means DefaultTimeout) or until ctx ends for its result; ok is false when
// it did not come in time (fn then finishes, or not, on its own).
func Within[T any](ctx context.Context, timeout time.Duration, fn func() T) (v T, ok bool) {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	ch := make(chan T, 1)
	go func() { ch <- fn() }()
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case v = <-ch:
		return v, true
	case <-ctx.Done():
	case <-t.C:
	}
	return v, false
}

// Progress is how a long call tells WhileAnswering that the filesystem
// still answers. Its methods are safe for concurrent use.
type Progress struct{ last atomic.Int64 }

// Tick records that a filesystem call answered just now.
func (p *Progress) Tick() { p.last.Store(time.Now().UnixNano()) }

// since is the time since the last Tick (or since the call started).
func (p *Progress) since() time.Duration { return time.Duration(time.Now().UnixNano() - p.last.Load()) }

// WhileAnswering runs fn in its own goroutine and waits for its result for
// as long as fn keeps calling p.Tick: ok is false once idle (zero means
// DefaultTimeout) passes without a Tick, or when ctx ends. A slow
// filesystem that answers every call is waited for however long the whole
// takes; one that stops answering is given up on within about idle of its
// last answer.
func WhileAnswering[T any](ctx context.Context, idle time.Duration, fn func(p *Progress) T) (v T, ok bool) {
	if idle <= 0 {
		idle = DefaultTimeout
	}
	p := new(Progress)
	p.Tick()
	ch := make(chan T, 1)
	go func() { ch <- fn(p) }()
	t := time.NewTicker(max(idle/8, time.Millisecond))
	defer t.Stop()
	for {
		select {
		case v = <-ch:
			return v, true
		case <-ctx.Done():
			return v, false
		case <-t.C:
			if p.since() > idle {
				return v, false
			}
		}
	}
}

// Responsive returns nil when p answers a stat(2) and, for a directory, a
// read of its first 16 entries within timeout (zero means DefaultTimeout),
// whatever those calls return: a missing or unreadable path answered. It
// returns an error wrapping ErrNoAnswer after the timeout, or ctx.Err()
// when ctx ends first.
func Responsive(ctx context.Context, p string, timeout time.Duration) error {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	_, ok := Within(ctx, timeout, func() struct{} {
		fi, err := os.Stat(p)
		if err != nil || !fi.IsDir() {
			return struct{}{}
		}
		if f, err := rawfile.OpenDir(p); err == nil {
			_, _ = f.Readdirnames(16)
			f.Close()
		}
		return struct{}{}
	})
	switch {
	case ok:
		return nil
	case ctx.Err() != nil:
		return ctx.Err()
	}
	return fmt.Errorf("%s %w a stat and directory read within %s", p, ErrNoAnswer, timeout)
}
