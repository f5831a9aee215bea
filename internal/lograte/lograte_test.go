package lograte

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
)

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func newLogger(opts Options) (*slog.Logger, *Handler, *bytes.Buffer, *clock) {
	c := &clock{t: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)}
	opts.Now = c.now
	var buf bytes.Buffer
	h := New(slog.NewJSONHandler(&buf, nil), opts)
	return slog.New(h), h, &buf, c
}

type line struct {
	Level      string `json:"level"`
	Msg        string `json:"msg"`
	Message    string `json:"message"`
	Suppressed int    `json:"suppressed"`
	N          int    `json:"n"`
}

func lines(t *testing.T, buf *bytes.Buffer) []line {
	t.Helper()
	var out []line
	for _, s := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		if s == "" {
			continue
		}
		var l line
		if err := json.Unmarshal([]byte(s), &l); err != nil {
			t.Fatalf("%v: %s", err, s)
		}
		out = append(out, l)
	}
	return out
}

func TestRepeatedErrorsAreLimitedAndCounted(t *testing.T) {
	log, h, buf, c := newLogger(Options{})
	// 1,000 refusals in a second: one line.
	for i := range 1000 {
		log.Error("audit log unavailable", "n", i)
		c.add(time.Millisecond)
	}
	got := lines(t, buf)
	if len(got) != 1 || got[0].N != 0 || got[0].Suppressed != 0 {
		t.Fatalf("first second: %+v", got)
	}
	// The next one after the window carries the count.
	log.Error("audit log unavailable", "n", 1000)
	got = lines(t, buf)
	if len(got) != 2 || got[1].N != 1000 || got[1].Suppressed != 999 {
		t.Fatalf("after the window: %+v", got[1:])
	}
	// Other messages, other levels and info lines have their own limits.
	log.Error("signing failed")
	log.Warn("audit log unavailable")
	log.Info("request")
	log.Info("request")
	if got = lines(t, buf); len(got) != 6 {
		t.Fatalf("distinct messages: %+v", got[2:])
	}
	// A message that stops: its count is reported once its window has
	// passed, on the next record of any kind, or by Flush.
	log.Error("signing failed")
	log.Error("signing failed")
	c.add(2 * time.Second)
	log.Info("tick")
	got = lines(t, buf)
	if len(got) != 8 || got[6].Msg != "log lines suppressed" || got[6].Message != "signing failed" || got[6].Suppressed != 2 {
		t.Fatalf("report of a stopped message: %+v", got[6:])
	}
	// (A new window: the first passes, the next two are held back.)
	log.Error("audit log unavailable", "n", 1)
	log.Error("audit log unavailable", "n", 2)
	log.Error("audit log unavailable", "n", 3)
	h.Flush(context.Background())
	got = lines(t, buf)
	if len(got) != 10 || got[8].N != 1 || got[9].Message != "audit log unavailable" || got[9].Suppressed != 2 {
		t.Fatalf("flush: %+v", got[8:])
	}
	h.Flush(context.Background())
	if n := len(lines(t, buf)); n != 10 {
		t.Fatalf("a second flush logged again: %d lines", n)
	}
}

// The bound: whatever the rate of one message, at most Burst lines per
// window, plus at most one report per window, reach the output.
func TestBoundedLinesPerSecond(t *testing.T) {
	for _, burst := range []int{1, 3} {
		log, h, buf, c := newLogger(Options{Burst: burst})
		l := log.With("component", "server")
		const seconds, perSecond = 10, 5000
		dropped := 0
		for range seconds * perSecond {
			l.Error("audit log unavailable; refusing to sign", "request_id", "abc")
			c.add(time.Second / perSecond)
		}
		h.Flush(context.Background())
		got := lines(t, buf)
		if max := seconds * (burst + 1); len(got) > max {
			t.Fatalf("burst %d: %d lines for %d records in %d s, want at most %d", burst, len(got), seconds*perSecond, seconds, max)
		}
		for _, g := range got {
			dropped += g.Suppressed
		}
		if passed := len(got) - countMsg(got, "log lines suppressed"); passed+dropped != seconds*perSecond {
			t.Fatalf("burst %d: %d passed + %d counted as suppressed, want %d", burst, passed, dropped, seconds*perSecond)
		}
	}
}

func countMsg(ls []line, msg string) int {
	n := 0
	for _, l := range ls {
		if l.Msg == msg {
			n++
		}
	}
	return n
}

func TestConcurrentUse(t *testing.T) {
	log, h, buf, _ := newLogger(Options{Now: nil})
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 1000 {
				log.Error("x", "g", g)
			}
		}()
	}
	wg.Wait()
	h.Flush(context.Background())
	total := 0
	for _, l := range lines(t, buf) {
		total += 1
		if l.Msg == "log lines suppressed" {
			total--
		}
		total += l.Suppressed
	}
	if total != 8000 {
		t.Fatalf("%d records accounted for, want 8000", total)
	}
}
