package server

import (
	"context"
	"sync/atomic"
	"time"
)

// deadlines hands out the contexts that bound a request's stages and its
// audit wait. A context of one's own per request costs nine allocations
// and two timer-heap updates (create, cancel) on every sign request;
// these are shared instead: a context handed out at now expires no
// earlier than now+timeout and at most timeout/deadlineSlack later, so
// every request keeps at least its full limit and the requests of one
// such interval share one context and one timer. Nothing cancels a
// shared context but its deadline, so a request that finishes early has
// nothing to release.
type deadlines struct {
	timeout time.Duration
	slack   time.Duration
	cur     atomic.Pointer[sharedDeadline]
}

// deadlineSlack divides the timeout into the slack: timeout/deadlineSlack
// is the most a request's limit is extended (about 160 ms of the default
// 10 s), and about deadlineSlack contexts are alive at once under load.
const deadlineSlack = 64

type sharedDeadline struct {
	ctx      context.Context
	deadline time.Time
	// cancel is never called: the deadline's timer cancels ctx and
	// releases it, and until then requests may still hold it.
	cancel context.CancelFunc
}

func newDeadlines(timeout time.Duration) *deadlines {
	return &deadlines{timeout: timeout, slack: timeout / deadlineSlack}
}

// context returns a context whose deadline is in [now+timeout,
// now+timeout+slack].
func (d *deadlines) context(now time.Time) context.Context {
	want := now.Add(d.timeout)
	if c := d.cur.Load(); c != nil && !c.deadline.Before(want) && !c.deadline.After(want.Add(d.slack)) {
		return c.ctx
	}
	deadline := want.Add(d.slack)
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	c := &sharedDeadline{ctx: ctx, deadline: deadline, cancel: cancel}
	for {
		old := d.cur.Load()
		if old != nil && !old.deadline.Before(deadline) {
			return ctx // a later one is current already; ours is still exact for this request
		}
		if d.cur.CompareAndSwap(old, c) {
			return ctx
		}
	}
}
