package server

import (
	"math"
	"slices"
	"strconv"
	"sync"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"golang.org/x/time/rate"

	"github.com/countersign/countersign/audit"
)

// RateLimit bounds how fast one principal may ask for signatures. A scan
// legitimately sends tens of thousands of requests, so the limit protects
// the service (and the policy and audit behind it) from one runaway or
// hostile caller, not from normal engines.
type RateLimit struct {
	// PerSecond is the sustained rate per principal; 0 disables limiting.
	PerSecond float64 `yaml:"per_second"`
	// Burst is how many requests may arrive at once (default PerSecond,
	// at least 1).
	Burst int `yaml:"burst"`
	// Principals bounds how many principals' buckets are kept (default
	// 100000); the least recently seen are forgotten first.
	Principals int `yaml:"principals"`
}

type principalLimiter struct {
	cfg   RateLimit
	mu    sync.Mutex // guards creation races in the cache; rate.Limiter locks itself
	cache *lru.Cache[string, *rate.Limiter]
	now   func() time.Time
}

func newPrincipalLimiter(cfg RateLimit) (*principalLimiter, error) {
	if cfg.PerSecond <= 0 {
		return nil, nil
	}
	if cfg.Burst <= 0 {
		cfg.Burst = int(math.Max(1, math.Ceil(cfg.PerSecond)))
	}
	if cfg.Principals <= 0 {
		cfg.Principals = 100000
	}
	c, err := lru.New[string, *rate.Limiter](cfg.Principals)
	if err != nil {
		return nil, err
	}
	return &principalLimiter{cfg: cfg, cache: c, now: time.Now}, nil
}

// allow takes one token for principal. When refused it returns the whole
// seconds to wait, for Retry-After (Iceberg's Java client retries a 429).
func (l *principalLimiter) allow(principal string) (retryAfter int, ok bool) {
	lim, found := l.cache.Get(principal)
	if !found {
		l.mu.Lock()
		if lim, found = l.cache.Get(principal); !found {
			lim = rate.NewLimiter(rate.Limit(l.cfg.PerSecond), l.cfg.Burst)
			l.cache.Add(principal, lim)
		}
		l.mu.Unlock()
	}
	now := l.now()
	r := lim.ReserveN(now, 1)
	if !r.OK() {
		return 1, false
	}
	if d := r.DelayFrom(now); d > 0 {
		r.CancelAt(now)
		return int(math.Ceil(d.Seconds())), false
	}
	return 0, true
}

// RefusalLimit bounds how fast one source address may be refused before
// it authenticated (malformed, unauthenticated, too large, wrong method).
// Each such refusal is a durable audit record, so without a bound an
// anonymous client could fill the audit disk, which stops all signing.
// Within the limit every refusal has its own record; beyond it the client
// gets 429 with Retry-After and the refusals are counted, one
// refusals_suppressed record per source per SummaryInterval.
// Authenticated refusals are not limited here: they carry a principal,
// which rate_limit bounds.
type RefusalLimit struct {
	// PerSecond is the sustained rate of recorded refusals per source
	// (default 20).
	PerSecond float64 `yaml:"per_second"`
	// Burst is how many may come at once (default 1000: a test corpus or
	// a misconfigured engine's retries are recorded one by one).
	Burst int `yaml:"burst"`
	// Sources bounds how many sources are tracked (default 100000); the
	// least recently refused are forgotten first (their counts are
	// recorded then).
	Sources int `yaml:"sources"`
	// SummaryInterval is how often a source's suppressed refusals are
	// recorded as one summary (default 1m).
	SummaryInterval time.Duration `yaml:"summary_interval"`
}

func (c *RefusalLimit) setDefaults() {
	if c.PerSecond <= 0 {
		c.PerSecond = 20
	}
	if c.Burst <= 0 {
		c.Burst = 1000
	}
	if c.Sources <= 0 {
		c.Sources = 100000
	}
	if c.SummaryInterval <= 0 {
		c.SummaryInterval = time.Minute
	}
}

// refusalLimiter is RefusalLimit's state: a bucket per source, and the
// counts of what was suppressed since the source's last summary.
type refusalLimiter struct {
	cfg     RefusalLimit
	mu      sync.Mutex
	cache   *lru.Cache[string, *sourceRefusals]
	pending map[string]*sourceRefusals // sources with suppressed refusals
	evicted []*audit.Record            // summaries of sources the cache forgot
}

type sourceRefusals struct {
	lim        *rate.Limiter
	suppressed int64
	since      time.Time
	statuses   map[int]int64
}

func newRefusalLimiter(cfg RefusalLimit) (*refusalLimiter, error) {
	cfg.setDefaults()
	l := &refusalLimiter{cfg: cfg, pending: map[string]*sourceRefusals{}}
	c, err := lru.NewWithEvict[string, *sourceRefusals](cfg.Sources, func(src string, s *sourceRefusals) {
		// Called with l.mu held (every cache change is made under it).
		if s.suppressed > 0 {
			l.evicted = append(l.evicted, s.summary(src, time.Now()))
			delete(l.pending, src)
		}
	})
	if err != nil {
		return nil, err
	}
	l.cache = c
	return l, nil
}

// allow takes one token for a refusal of src. When the source is over its
// limit it counts the refusal instead and returns the seconds to wait. It
// also returns the summaries that are due.
func (l *refusalLimiter) allow(src string, status int, now time.Time) (retryAfter int, ok bool, due []*audit.Record) {
	l.mu.Lock()
	defer l.mu.Unlock()
	s, found := l.cache.Get(src)
	if !found {
		s = &sourceRefusals{lim: rate.NewLimiter(rate.Limit(l.cfg.PerSecond), l.cfg.Burst)}
		l.cache.Add(src, s)
	}
	ok = s.lim.AllowN(now, 1)
	if !ok {
		if s.suppressed == 0 {
			s.since = now
			s.statuses = map[int]int64{}
			l.pending[src] = s
		}
		s.suppressed++
		s.statuses[status]++
		retryAfter = int(math.Max(1, math.Ceil(1/l.cfg.PerSecond)))
	}
	if s.suppressed > 0 && now.Sub(s.since) >= l.cfg.SummaryInterval {
		due = append(due, s.summary(src, now))
		delete(l.pending, src)
	}
	due = append(due, l.evicted...)
	l.evicted = nil
	return retryAfter, ok, due
}

// sweep returns the summaries of every source with suppressed refusals
// whose interval has passed (all of them when all is set, at shutdown).
func (l *refusalLimiter) sweep(now time.Time, all bool) []*audit.Record {
	l.mu.Lock()
	defer l.mu.Unlock()
	recs := l.evicted
	l.evicted = nil
	for src, s := range l.pending {
		if all || now.Sub(s.since) >= l.cfg.SummaryInterval {
			recs = append(recs, s.summary(src, now))
			delete(l.pending, src)
		}
	}
	return recs
}

// summary is the record of what was suppressed, and resets the count.
func (s *sourceRefusals) summary(src string, now time.Time) *audit.Record {
	codes := make([]int, 0, len(s.statuses))
	for code := range s.statuses {
		codes = append(codes, code)
	}
	slices.Sort(codes)
	var statuses []byte
	for i, code := range codes {
		if i > 0 {
			statuses = append(statuses, ',')
		}
		statuses = strconv.AppendInt(statuses, int64(code), 10)
		statuses = append(statuses, '=')
		statuses = strconv.AppendInt(statuses, s.statuses[code], 10)
	}
	rec := &audit.Record{Kind: audit.KindLifecycle, Event: audit.EventRefusalsSuppressed, Detail: map[string]string{
		"source_ip": src,
		"count":     strconv.FormatInt(s.suppressed, 10),
		"since":     s.since.UTC().Format(time.RFC3339Nano),
		"until":     now.UTC().Format(time.RFC3339Nano),
		"statuses":  string(statuses),
	}}
	s.suppressed, s.statuses = 0, nil
	return rec
}
