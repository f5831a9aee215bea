package server

import (
	"math"
	"sync"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"golang.org/x/time/rate"
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
