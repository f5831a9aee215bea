// Package lograte is a slog.Handler that rate-limits repeated warnings
// and errors, so that a fault which refuses every request (a full audit
// disk) logs a few lines a second, not one per request: logging must not
// become the next disk to fill. What it holds back is counted and
// reported.
package lograte

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// Options configures a Handler. The zero value means one line per
// distinct message per second.
type Options struct {
	// Interval is the window (default 1 s).
	Interval time.Duration
	// Burst is how many records of one message pass per window (default 1).
	Burst int
	// Now is the clock (tests); default time.Now.
	Now func() time.Time
}

// Handler passes records below slog.LevelWarn through untouched and at
// most Burst records per Interval of each distinct (level, message); the
// rest are dropped and counted. The count is reported as a "suppressed"
// attribute on the next record of that message that passes, or, if the
// message stops, as a "log lines suppressed" record once its window has
// passed (checked when any record is logged, and by Flush).
type Handler struct {
	inner slog.Handler
	st    *state
}

type state struct {
	opts    Options
	mu      sync.Mutex
	msgs    map[key]*entry
	pending int       // entries with suppressed > 0
	sweep   time.Time // earliest time a pending count may be due
}

type key struct {
	level slog.Level
	msg   string
}

type entry struct {
	start      time.Time // window start
	n          int       // records passed in this window
	suppressed int       // dropped since the last report
	since      time.Time // first drop since the last report
	inner      slog.Handler
}

// New wraps inner.
func New(inner slog.Handler, opts Options) *Handler {
	if opts.Interval <= 0 {
		opts.Interval = time.Second
	}
	if opts.Burst <= 0 {
		opts.Burst = 1
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Handler{inner: inner, st: &state{opts: opts, msgs: map[key]*entry{}}}
}

// Enabled reports the wrapped handler's answer.
func (h *Handler) Enabled(ctx context.Context, l slog.Level) bool { return h.inner.Enabled(ctx, l) }

// WithAttrs and WithGroup share the limits: a message is limited however
// many loggers log it.
func (h *Handler) WithAttrs(as []slog.Attr) slog.Handler {
	return &Handler{inner: h.inner.WithAttrs(as), st: h.st}
}

func (h *Handler) WithGroup(name string) slog.Handler {
	return &Handler{inner: h.inner.WithGroup(name), st: h.st}
}

// Handle logs r, or counts it if its message is over the limit.
func (h *Handler) Handle(ctx context.Context, r slog.Record) error {
	if r.Level < slog.LevelWarn {
		h.st.reportDue(ctx, false)
		return h.inner.Handle(ctx, r)
	}
	st := h.st
	now := st.opts.Now()
	k := key{r.Level, r.Message}
	st.mu.Lock()
	e := st.msgs[k]
	if e == nil {
		e = &entry{start: now}
		st.msgs[k] = e
	}
	e.inner = h.inner
	if now.Sub(e.start) >= st.opts.Interval {
		e.start, e.n = now, 0
	}
	if e.n >= st.opts.Burst {
		if e.suppressed == 0 {
			e.since = now
			st.pending++
			if st.pending == 1 || e.start.Add(st.opts.Interval).Before(st.sweep) {
				st.sweep = e.start.Add(st.opts.Interval)
			}
		}
		e.suppressed++
		st.mu.Unlock()
		st.reportDue(ctx, false)
		return nil
	}
	e.n++
	suppressed := e.suppressed
	if suppressed > 0 {
		e.suppressed = 0
		st.pending--
	}
	st.mu.Unlock()
	st.reportDue(ctx, false)
	if suppressed > 0 {
		r = r.Clone()
		r.AddAttrs(slog.Int("suppressed", suppressed))
	}
	return h.inner.Handle(ctx, r)
}

// Flush reports every count not reported yet (at exit).
func (h *Handler) Flush(ctx context.Context) { h.st.reportDue(ctx, true) }

// reportDue logs the counts of messages that were dropped and have not
// been logged again for a whole window (all of them with force).
func (st *state) reportDue(ctx context.Context, force bool) {
	now := st.opts.Now()
	st.mu.Lock()
	if st.pending == 0 || (!force && now.Before(st.sweep)) {
		st.mu.Unlock()
		return
	}
	type report struct {
		k     key
		e     entry
		inner slog.Handler
	}
	var due []report
	st.sweep = time.Time{}
	for k, e := range st.msgs {
		if e.suppressed == 0 {
			continue
		}
		end := e.start.Add(st.opts.Interval)
		if force || !now.Before(end) {
			due = append(due, report{k, *e, e.inner})
			e.suppressed = 0
			st.pending--
			// The report is this window's line: the next record of
			// the message starts a new one.
			e.start, e.n = now, st.opts.Burst
			continue
		}
		if st.sweep.IsZero() || end.Before(st.sweep) {
			st.sweep = end
		}
	}
	st.mu.Unlock()
	for _, d := range due {
		r := slog.NewRecord(now, d.k.level, "log lines suppressed", 0)
		r.AddAttrs(slog.String("message", d.k.msg), slog.Int("suppressed", d.e.suppressed),
			slog.Time("since", d.e.since))
		d.inner.Handle(ctx, r)
	}
}
