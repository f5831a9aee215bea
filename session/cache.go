package session

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/maphash"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"golang.org/x/sync/singleflight"

	"github.com/countersign/countersign/internal/policyinput"
)

// Need is one permission a signature needs: an IAM action on a bucket, of
// an access class (s3req's: read, write, ...). A request needs one per
// distinct (action, bucket) of its targets: a CopyObject needs s3:PutObject
// on the destination and s3:GetObject on the source.
type Need struct {
	Action, Access, Bucket string
}

// MaxNeeds is the most distinct needs one signature has (S3 requests name
// at most two buckets and, per bucket, at most two actions).
const MaxNeeds = 2

// Key names the session a request is signed with: the caller's token (its
// SHA-256; for a caller without a token, the SHA-256 of its issuer and id,
// see PrincipalKey), the Iceberg table of the per-table route (a policy
// may scope by it) and what the request needs. It is comparable and built
// without allocating, so the hot path is one map lookup.
type Key struct {
	Token [32]byte
	// TablePath is the per-table route's raw table path ("" on the legacy
	// route), TableLocation the table's location from the catalog front.
	TablePath, TableLocation string
	Needs                    [MaxNeeds]Need // sorted, unused entries zero
}

// Policies compiles the session policy for a principal's needs (from the
// OPA policy's scope), on the per-table route for table t (nil on the
// legacy route). It runs on a cache miss only.
type Policies interface {
	SessionPolicy(ctx context.Context, p *policyinput.Principal, t *policyinput.Table, needs []Need) (string, error)
}

// CacheOptions configures a Cache.
type CacheOptions struct {
	Minter   Minter
	Policies Policies
	// Size bounds the sessions kept (and, separately, the tokens mapped to
	// them); zero means DefaultCacheSize.
	Size int
	// Duration asked of each session; zero means the minter's default.
	Duration time.Duration
	// RenewBefore: a session this close to its expiry is renewed in the
	// background (zero: a quarter of Duration, at least MinRemaining plus
	// five minutes).
	RenewBefore time.Duration
	// MinRemaining: a session with less left is never signed with (a
	// signature must outlive its delivery and the client's retries); the
	// request then waits for a new one. Zero means DefaultMinRemaining.
	MinRemaining time.Duration
	// Now returns the current time; nil means time.Now. For tests.
	Now func() time.Time
	// Logger; nil discards.
	Logger *slog.Logger
	// OnMint, when set, is told of every mint (ok false: it failed).
	OnMint func(c Credentials, renewal, ok bool)
}

// Cache defaults.
const (
	DefaultCacheSize    = 10000
	DefaultMinRemaining = 5 * time.Minute
)

// Cache keeps per-principal sessions: one per (principal, session policy),
// shared by every token of the principal whose requests compile to the same
// policy, in two bounded LRUs (by Key, and by principal and policy).
// Sessions are renewed in the background before they expire, so a warm
// request never waits for STS, and Purge (on policy reload) drops them all.
// It is safe for concurrent use.
type Cache struct {
	opts CacheOptions
	// front is a lock-free table in front of byKey: a hit takes no lock
	// (the LRUs' mutex convoys when a thread holding it is descheduled on
	// a loaded machine). Entries are checked against the key and the
	// generation; Purge clears it.
	front   [frontSize]atomic.Pointer[frontEntry]
	seed    maphash.Seed
	byKey   *lru.Cache[Key, *entry]
	byScope *lru.Cache[[32]byte, *entry]
	flight  singleflight.Group
	gen     atomic.Uint64 // Purge increments it: mints begun before do not enter the cache
	renew   chan struct{}
	stop    chan struct{}
	done    sync.WaitGroup
	closeMu sync.Once
}

const frontSize = 1024

// frontEntry is one slot of Cache.front.
type frontEntry struct {
	key Key
	e   *entry
}

// entry is one session and what it was minted from, for renewal.
type entry struct {
	scope    [32]byte
	req      Request
	creds    atomic.Pointer[Credentials]
	lastUsed atomic.Int64 // unix nanoseconds
	gen      uint64
}

// NewCache returns a Cache; Start runs its renewal.
func NewCache(opts CacheOptions) (*Cache, error) {
	if opts.Minter == nil || opts.Policies == nil {
		return nil, errors.New("session: a cache needs a minter and a session policy compiler")
	}
	if opts.Size <= 0 {
		opts.Size = DefaultCacheSize
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.MinRemaining <= 0 {
		opts.MinRemaining = DefaultMinRemaining
	}
	if opts.RenewBefore <= 0 {
		// A quarter of the lifetime, and at least MinRemaining plus five
		// minutes (or half of what is left) for renewal to succeed or be
		// retried before a request would have to wait: a 15-minute session
		// is renewed after 5 minutes, a 1-hour one after 45.
		d := opts.Duration
		if d == 0 {
			d = DefaultDuration
		}
		opts.RenewBefore = d / 4
		if floor := opts.MinRemaining + min(5*time.Minute, (d-opts.MinRemaining)/2); opts.RenewBefore < floor {
			opts.RenewBefore = floor
		}
	}
	if opts.RenewBefore <= opts.MinRemaining {
		return nil, fmt.Errorf("session: renewal %s before expiry must be longer than the minimum remaining lifetime %s", opts.RenewBefore, opts.MinRemaining)
	}
	byKey, err := lru.New[Key, *entry](opts.Size)
	if err != nil {
		return nil, err
	}
	byScope, err := lru.New[[32]byte, *entry](opts.Size)
	if err != nil {
		return nil, err
	}
	return &Cache{opts: opts, seed: maphash.MakeSeed(), byKey: byKey, byScope: byScope, renew: make(chan struct{}, 1), stop: make(chan struct{})}, nil
}

// Get returns the session to sign k's request with, minting one on a miss
// (the caller waits) and when the cached one has less than MinRemaining
// left. Errors wrap ErrUnavailable.
func (c *Cache) Get(ctx context.Context, k Key, p *policyinput.Principal, t *policyinput.Table) (Credentials, error) {
	now := c.opts.Now()
	slot := &c.front[c.slot(&k)]
	var e *entry
	if f := slot.Load(); f != nil && f.key == k && f.e.gen == c.gen.Load() {
		e = f.e
	} else if le, ok := c.byKey.Get(k); ok {
		e = le
		slot.Store(&frontEntry{key: k, e: le})
	}
	if e != nil {
		if cr := e.creds.Load(); cr.Expires.Sub(now) >= c.opts.MinRemaining {
			c.used(e, k, now)
			if cr.Expires.Sub(now) < c.opts.RenewBefore {
				c.nudge()
			}
			return *cr, nil
		}
	}
	return c.miss(ctx, k, p, t)
}

// used notes that e signed now, at most once a second: then it also
// refreshes e's place in both LRUs, which hits in the front do not touch.
func (c *Cache) used(e *entry, k Key, now time.Time) {
	n := now.UnixNano()
	if n-e.lastUsed.Load() < int64(time.Second) {
		return
	}
	e.lastUsed.Store(n)
	c.byKey.Get(k)
	c.byScope.Get(e.scope)
}

// slot is k's place in the front: its token hash's first bytes (SHA-256
// output) mixed with its needs' and table's strings.
func (c *Cache) slot(k *Key) uint64 {
	h := binary.LittleEndian.Uint64(k.Token[:8])
	for i := range k.Needs {
		h = h*0x9e3779b97f4a7c15 ^ maphash.String(c.seed, k.Needs[i].Action)
		h = h*0x9e3779b97f4a7c15 ^ maphash.String(c.seed, k.Needs[i].Bucket)
	}
	h = h*0x9e3779b97f4a7c15 ^ maphash.String(c.seed, k.TablePath)
	return h % frontSize
}

// miss compiles the session policy and finds or mints its session, once
// for concurrent callers with the same key.
func (c *Cache) miss(ctx context.Context, k Key, p *policyinput.Principal, t *policyinput.Table) (Credentials, error) {
	gen := c.gen.Load()
	fk := string(k.Token[:]) + "\x00" + k.TablePath + "\x00" + k.TableLocation + needsString(k.Needs[:])
	v, err, _ := c.flight.Do(fk, func() (any, error) {
		needs := usedNeeds(k.Needs[:])
		doc, err := c.opts.Policies.SessionPolicy(ctx, p, t, needs)
		if err != nil {
			return nil, fmt.Errorf("%w: compiling the session policy for principal %q: %w", ErrUnavailable, p.ID, err)
		}
		scope := scopeHash(p, doc)
		now := c.opts.Now()
		if e, ok := c.byScope.Get(scope); ok && e.gen == gen {
			if cr := e.creds.Load(); cr.Expires.Sub(now) >= c.opts.MinRemaining {
				c.byKey.Add(k, e)
				return e, nil
			}
		}
		e := &entry{scope: scope, req: Request{Principal: *p, Policy: doc, Duration: c.opts.Duration}, gen: gen}
		cr, err := c.opts.Minter.Mint(ctx, e.req)
		c.report(cr, false, err == nil)
		if err != nil {
			return nil, err
		}
		if cr.Expires.Sub(c.opts.Now()) < c.opts.MinRemaining {
			return nil, fmt.Errorf("%w: STS gave principal %q a session that expires at %s, within the minimum remaining lifetime of %s", ErrUnavailable, p.ID, cr.Expires.UTC().Format(time.RFC3339), c.opts.MinRemaining)
		}
		e.creds.Store(&cr)
		e.lastUsed.Store(now.UnixNano())
		if c.gen.Load() == gen { // not purged meanwhile: the policy it was compiled from is current
			c.byScope.Add(scope, e)
			c.byKey.Add(k, e)
		}
		return e, nil
	})
	if err != nil {
		if !errors.Is(err, ErrUnavailable) {
			err = fmt.Errorf("%w: %w", ErrUnavailable, err)
		}
		return Credentials{}, err
	}
	return *v.(*entry).creds.Load(), nil
}

// Purge drops every session: the policy changed, so every session policy
// may have. Mints under way do not enter the cache.
func (c *Cache) Purge() {
	c.gen.Add(1)
	for i := range c.front {
		c.front[i].Store(nil)
	}
	c.byKey.Purge()
	c.byScope.Purge()
}

// Len is the number of sessions cached.
func (c *Cache) Len() int { return c.byScope.Len() }

// Start renews sessions in the background until Close: every interval,
// and when a request saw a session within RenewBefore of its expiry.
func (c *Cache) Start(interval time.Duration) {
	if interval <= 0 {
		interval = time.Minute
	}
	c.done.Add(1)
	go func() {
		defer c.done.Done()
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-c.stop:
				return
			case <-t.C:
			case <-c.renew:
			}
			c.RenewDue(context.Background())
		}
	}()
}

// Close stops the renewal.
func (c *Cache) Close() {
	c.closeMu.Do(func() { close(c.stop) })
	c.done.Wait()
}

func (c *Cache) nudge() {
	select {
	case c.renew <- struct{}{}:
	default:
	}
}

// RenewDue renews every session within RenewBefore of its expiry that was
// used in its lifetime; one that was not is dropped instead. A failed
// renewal keeps the session (until MinRemaining) and is retried next time.
func (c *Cache) RenewDue(ctx context.Context) {
	now := c.opts.Now()
	for _, e := range c.byScope.Values() {
		cr := e.creds.Load()
		if cr.Expires.Sub(now) >= c.opts.RenewBefore {
			continue
		}
		issued := cr.Expires.Add(-c.lifetime())
		if e.lastUsed.Load() < issued.UnixNano() {
			// Not used since it was minted: not renewed, and dropped once
			// it can no longer be signed with.
			if cr.Expires.Sub(now) < c.opts.MinRemaining {
				c.byScope.Remove(e.scope)
			}
			continue
		}
		if e.gen != c.gen.Load() {
			continue
		}
		mctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		fresh, err := c.opts.Minter.Mint(mctx, e.req)
		cancel()
		c.report(fresh, true, err == nil)
		if err != nil {
			c.opts.Logger.Warn("renewing a per-principal session failed; the current one is used until it is too close to expiry",
				"principal", e.req.Principal.ID, "access_key_id", cr.AccessKeyID, "expires", cr.Expires, "err", err)
			continue
		}
		e.creds.Store(&fresh)
	}
}

// lifetime is how long a session was asked for.
func (c *Cache) lifetime() time.Duration {
	if c.opts.Duration > 0 {
		return c.opts.Duration
	}
	return DefaultDuration
}

func (c *Cache) report(cr Credentials, renewal, ok bool) {
	if c.opts.OnMint != nil {
		c.opts.OnMint(cr, renewal, ok)
	}
}

// scopeHash identifies (principal, session policy): the principal's
// issuer, id and groups, and the document.
func scopeHash(p *policyinput.Principal, doc string) [32]byte {
	h := sha256.New()
	var n [8]byte
	w := func(s string) {
		binary.BigEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.Write([]byte(s))
	}
	w(p.Issuer)
	w(p.ID)
	binary.BigEndian.PutUint64(n[:], uint64(len(p.Groups)))
	h.Write(n[:])
	for _, g := range p.Groups {
		w(g)
	}
	w(doc)
	var out [32]byte
	h.Sum(out[:0])
	return out
}

// PrincipalKey is Key.Token for a caller without a bearer token (mutual
// TLS): the SHA-256 of its issuer and id, under a prefix no token hash can
// share by accident.
func PrincipalKey(p *policyinput.Principal) [32]byte {
	// On the stack for ids and issuers of usual length: the mutual-TLS
	// hot path computes it per request.
	var buf [256]byte
	b := append(buf[:0], "countersign principal\x00"...)
	b = binary.BigEndian.AppendUint64(b, uint64(len(p.Issuer)))
	b = append(b, p.Issuer...)
	b = append(b, p.ID...)
	return sha256.Sum256(b)
}

func usedNeeds(ns []Need) []Need {
	out := make([]Need, 0, len(ns))
	for _, n := range ns {
		if n != (Need{}) {
			out = append(out, n)
		}
	}
	return out
}

func needsString(ns []Need) string {
	var s string
	for _, n := range ns {
		s += "\x00" + n.Action + "\x00" + n.Access + "\x00" + n.Bucket
	}
	return s
}

// Add puts need into k, keeping Needs sorted and distinct. It reports
// false when k already holds MaxNeeds other needs.
func (k *Key) Add(n Need) bool {
	for i := range k.Needs {
		switch {
		case k.Needs[i] == n:
			return true
		case k.Needs[i] == Need{}:
			k.Needs[i] = n
			for j := i; j > 0 && less(k.Needs[j], k.Needs[j-1]); j-- {
				k.Needs[j], k.Needs[j-1] = k.Needs[j-1], k.Needs[j]
			}
			return true
		}
	}
	return false
}

func less(a, b Need) bool {
	if a.Bucket != b.Bucket {
		return a.Bucket < b.Bucket
	}
	if a.Action != b.Action {
		return a.Action < b.Action
	}
	return a.Access < b.Access
}
