package auth

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

const (
	// maxJWKSBytes bounds a JWKS document; real ones are a few KiB.
	maxJWKSBytes = 1 << 20
	// fetchTimeout bounds one JWKS load, including for requests waiting on
	// an unknown-kid refresh.
	fetchTimeout = 10 * time.Second
)

// keyStore holds the current keySet and refreshes it: in the background
// every JWKSRefresh, and on demand when a token names an unknown kid, at
// most once per JWKSMinRefresh. At most one load runs at a time; requests
// that need it wait for it (or for their own context) rather than starting
// another.
//
// When a load fails, the last good keys stay in use: an identity provider
// outage must not turn into a countersign outage for tokens already signed
// with known keys. Such a failure is logged, and it makes unknown kids
// answer keys_unavailable (503, retry) instead of unknown_key (401),
// because the kid may well be a new key that could not be fetched.
type keyStore struct {
	// load returns the JWKS document; nil for the static HS256 secret.
	load func(ctx context.Context) ([]byte, error)
	// source names the configuration key, for errors and logs.
	source     string
	minRefresh time.Duration
	now        func() time.Time
	log        *slog.Logger

	// ctx lives until Close; loads run under it, not under the request
	// that triggered them, so a cancelled request does not abort a load
	// other requests are waiting for.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	cur atomic.Pointer[keySet]

	mu          sync.Mutex
	inflight    chan struct{} // closed when the running load ends; nil when none runs
	lastAttempt time.Time     // start of the last load, for the rate limit
	lastErr     error         // outcome of the last finished load
	closed      bool
	lastBody    [32]byte // SHA-256 of the last document parsed; only the running load touches it
}

// staticKeys is the keyStore of the HS256 development secret: one key, no
// refresh.
func staticKeys(secret []byte) *keyStore {
	s := &keyStore{source: "auth.hs256_secret"}
	k := &verifyKey{alg: "HS256", key: secret, id: "hs256"}
	s.cur.Store(&keySet{all: []*verifyKey{k}, ignoreKID: true})
	return s
}

// httpLoader fetches a JWKS URL. Only 200 is accepted, the body is bounded.
func httpLoader(client *http.Client, url string) func(context.Context) ([]byte, error) {
	return func(ctx context.Context) ([]byte, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return nil, err
		}
		req.Header.Set("Accept", "application/jwk-set+json, application/json")
		resp, err := client.Do(req)
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("GET %s: unexpected status %s", url, resp.Status)
		}
		return readBounded(resp.Body)
	}
}

// fileLoader reads a local JWKS file.
func fileLoader(path string) func(context.Context) ([]byte, error) {
	return func(context.Context) ([]byte, error) {
		f, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		return readBounded(f)
	}
}

func readBounded(r io.Reader) ([]byte, error) {
	body, err := io.ReadAll(io.LimitReader(r, maxJWKSBytes+1))
	if err != nil {
		return nil, err
	}
	if len(body) > maxJWKSBytes {
		return nil, fmt.Errorf("JWKS larger than %d bytes", maxJWKSBytes)
	}
	return body, nil
}

// defaultHTTPClient does not follow redirects: the JWKS URL is the trust
// anchor, and a redirect (possibly to plain http) would move it somewhere
// the configuration does not name. Configure the final URL.
func defaultHTTPClient() *http.Client {
	return &http.Client{
		Timeout: fetchTimeout,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
}

// start performs the first load synchronously (New fails closed when it
// fails) and starts the background refresh.
func (s *keyStore) start(ctx context.Context, interval time.Duration) error {
	s.ctx, s.cancel = context.WithCancel(context.WithoutCancel(ctx))
	s.lastAttempt = s.now()
	lctx, cancel := context.WithTimeout(ctx, fetchTimeout)
	err := s.refresh(lctx)
	cancel()
	if err != nil {
		s.cancel()
		return err
	}
	if len(s.cur.Load().all) == 0 {
		s.cancel()
		return errors.New("no usable signing keys (see the log for skipped keys)")
	}
	s.wg.Add(1)
	go s.loop(interval)
	return nil
}

func (s *keyStore) loop(interval time.Duration) {
	defer s.wg.Done()
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-t.C:
			s.startLoad(true)
		}
	}
}

// close stops the background refresh and waits for a running load.
func (s *keyStore) close() {
	if s.load == nil {
		return
	}
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.cancel()
	s.wg.Wait()
}

// current returns the key set in use.
func (s *keyStore) current() *keySet { return s.cur.Load() }

// startLoad starts a load unless one is running (then it returns that
// one's channel) or, unless forced, the last one started less than
// minRefresh ago (then it returns nil). The returned channel is closed when
// the load has ended.
func (s *keyStore) startLoad(force bool) <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.inflight != nil {
		return s.inflight
	}
	now := s.now()
	if s.closed || (!force && now.Sub(s.lastAttempt) < s.minRefresh) {
		return nil
	}
	done := make(chan struct{})
	s.inflight = done
	s.lastAttempt = now
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		ctx, cancel := context.WithTimeout(s.ctx, fetchTimeout)
		err := s.refresh(ctx)
		cancel()
		if err != nil && s.ctx.Err() == nil {
			s.log.Warn("auth: refreshing signing keys failed; keeping the last good keys",
				"source", s.source, "error", err)
		}
		s.mu.Lock()
		s.lastErr = err
		s.inflight = nil
		s.mu.Unlock()
		close(done)
	}()
	return done
}

// refresh loads and, if the document changed, parses and installs it.
func (s *keyStore) refresh(ctx context.Context) error {
	body, err := s.load(ctx)
	if err != nil {
		return err
	}
	sum := sha256.Sum256(body)
	if sum == s.lastBody {
		return nil
	}
	ks, err := parseJWKS(body, s.log)
	if err != nil {
		return err
	}
	if old := s.cur.Load(); old != nil {
		ks.gen = old.gen
		if ks.changedFrom(old) {
			ks.gen++
		}
	}
	if len(ks.all) == 0 {
		s.log.Warn("auth: the JWKS has no usable signing keys; every token will be refused", "source", s.source)
	}
	s.cur.Store(ks)
	s.lastBody = sum
	s.log.Info("auth: signing keys loaded", "source", s.source, "kids", ks.kids(), "generation", ks.gen)
	return nil
}

// lookupFresh is called when the current set has no key for kid: it
// triggers (or joins) a rate-limited refresh and looks again. The answer
// distinguishes a kid that a successfully loaded set lacks (unknown_key)
// from one that could not be checked because loading fails
// (keys_unavailable).
func (s *keyStore) lookupFresh(ctx context.Context, kid string, hasKID bool) (*keySet, []*verifyKey, *Error) {
	if s.load != nil {
		if done := s.startLoad(false); done != nil {
			select {
			case <-done:
			case <-ctx.Done():
				return nil, nil, fail(ReasonKeysUnavailable, "timed out waiting for the identity provider's token signing keys (JWKS)")
			}
		}
	}
	ks := s.current()
	if keys := ks.lookup(kid, hasKID); len(keys) > 0 {
		return ks, keys, nil
	}
	s.mu.Lock()
	lastErr := s.lastErr
	s.mu.Unlock()
	if lastErr != nil {
		return nil, nil, fail(ReasonKeysUnavailable, "the identity provider's token signing keys (JWKS) are unavailable")
	}
	if !hasKID {
		if len(ks.all) == 0 {
			return nil, nil, fail(ReasonUnknownKey, "bearer token has no kid and the key set has no usable key")
		}
		return nil, nil, fail(ReasonUnknownKey, "bearer token has no kid and the key set has several keys")
	}
	return nil, nil, fail(ReasonUnknownKey, "bearer token key id is unknown")
}
