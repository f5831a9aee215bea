package server

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestDeadlinesNeverShorter: every context handed out at now expires in
// [now+timeout, now+timeout+timeout/64], requests close in time share
// one, and a context handed out is never already done.
func TestDeadlinesNeverShorter(t *testing.T) {
	const timeout = 6400 * time.Millisecond
	d := newDeadlines(timeout)
	base := time.Now()
	seen := map[context.Context]bool{}
	for i := 0; i < 2000; i++ {
		now := base.Add(time.Duration(i) * 7 * time.Millisecond)
		ctx := d.context(now)
		dl, ok := ctx.Deadline()
		if !ok {
			t.Fatal("context without a deadline")
		}
		if lo, hi := now.Add(timeout), now.Add(timeout+timeout/deadlineSlack); dl.Before(lo) || dl.After(hi) {
			t.Fatalf("at +%v: deadline +%v, want in [+%v, +%v]", now.Sub(base), dl.Sub(base), lo.Sub(base), hi.Sub(base))
		}
		if ctx.Err() != nil {
			t.Fatalf("at +%v: handed out a done context", now.Sub(base))
		}
		seen[ctx] = true
	}
	// 14 s of requests with 100 ms of slack: about 140 contexts, not 2000.
	if n := len(seen); n > 160 || n < 100 {
		t.Fatalf("%d contexts for 2000 requests over 14 s, want about 140", n)
	}
	// A request from the past (a slow caller's clock read) gets its own exact one.
	ctx := d.context(base)
	if dl, _ := ctx.Deadline(); dl.Before(base.Add(timeout)) || dl.After(base.Add(timeout+timeout/deadlineSlack)) {
		t.Fatalf("late caller: deadline +%v", dl.Sub(base))
	}
}

// TestDeadlinesExpire: a shared context is cut by its deadline, with
// context.DeadlineExceeded (what cutByDeadline looks for).
func TestDeadlinesExpire(t *testing.T) {
	d := newDeadlines(20 * time.Millisecond)
	ctx := d.context(time.Now())
	select {
	case <-ctx.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("shared context not cut by its deadline")
	}
	if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
		t.Fatalf("err %v, want DeadlineExceeded", ctx.Err())
	}
	if d.context(time.Now()).Err() != nil {
		t.Fatal("an expired context handed out again")
	}
}
