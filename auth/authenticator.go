package auth

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/x509"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/lestrrat-go/jwx/v3/jws"

	"github.com/countersign/countersign/internal/policyinput"
)

// Options are the Authenticator's dependencies, for tests and wiring.
type Options struct {
	// HTTPClient fetches the JWKS. Default: 10 s timeout, redirects not
	// followed.
	HTTPClient *http.Client
	// Now is the clock (default time.Now). It drives token times, cache
	// expiry and the unknown-kid refresh rate limit.
	Now func() time.Time
	// Logger receives key-management events (loads, failures, skipped
	// keys). Default: discard. Tokens are never logged.
	Logger *slog.Logger
	// OnCache, if set, is told whether each bearer token was found in the
	// verified-token cache (for a hit-ratio metric). It must not block.
	OnCache func(hit bool)
}

// Authenticator verifies bearer tokens and client certificates. It is safe
// for concurrent use.
type Authenticator struct {
	onCache func(hit bool)
	now     func() time.Time
	mtls    string
	rules   claimRules
	allowed []string
	keys    *keyStore // nil when bearer tokens are not configured
	cache   *verifiedCache
	memo    tokenMemo // in front of cache (memo.go)

	closeOnce sync.Once
}

// New validates cfg (filling defaults) and builds an Authenticator. With
// auth.jwks_url or auth.jwks_file it loads the keys before returning, and
// fails closed: an unreachable or unusable JWKS is an error naming the key
// (auth.jwks_url: ...), so a misconfigured deployment does not start
// refusing every request. ctx bounds that first load only; Close stops the
// background refresh.
func New(ctx context.Context, cfg Config, opts Options) (*Authenticator, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.HTTPClient == nil {
		opts.HTTPClient = defaultHTTPClient()
	}
	a := &Authenticator{
		onCache: opts.OnCache,
		now:     opts.Now,
		mtls:    cfg.MTLSPrincipal,
		allowed: slices.Clone(cfg.AllowedAlgorithms),
		rules: claimRules{
			issuer:        cfg.Issuer,
			audience:      slices.Clone(cfg.Audience),
			leeway:        cfg.Leeway,
			requireExp:    cfg.requireExp(),
			principalName: cfg.PrincipalClaim,
			principalPath: strings.Split(cfg.PrincipalClaim, "."),
			groupsName:    cfg.GroupsClaim,
			groupsPath:    strings.Split(cfg.GroupsClaim, "."),
			reserveX509:   cfg.MTLSPrincipal != MTLSOff,
		},
	}
	if !cfg.bearerEnabled() {
		return a, nil
	}
	cache, err := newVerifiedCache(cfg.CacheSize)
	if err != nil {
		return nil, fmt.Errorf("auth.cache_size: %w", err)
	}
	a.cache = cache

	if cfg.HS256Secret != "" {
		a.keys = staticKeys([]byte(cfg.HS256Secret))
		opts.Logger.Warn("auth: HS256 shared-secret tokens are enabled; this is for development only")
		return a, nil
	}
	ks := &keyStore{
		minRefresh: cfg.JWKSMinRefresh,
		now:        opts.Now,
		log:        opts.Logger,
	}
	switch {
	case cfg.JWKSURL != "":
		ks.source, ks.load = "auth.jwks_url", httpLoader(opts.HTTPClient, cfg.JWKSURL)
	default:
		ks.source, ks.load = "auth.jwks_file", fileLoader(cfg.JWKSFile)
	}
	if err := ks.start(ctx, cfg.JWKSRefresh); err != nil {
		return nil, fmt.Errorf("%s: loading signing keys: %w", ks.source, err)
	}
	a.keys = ks
	return a, nil
}

// Close stops the background key refresh. Authenticate keeps working with
// the keys last loaded.
func (a *Authenticator) Close() {
	a.closeOnce.Do(func() {
		if a.keys != nil {
			a.keys.close()
		}
	})
}

// Authenticate identifies the caller of one request from its raw
// Authorization header value (empty when absent) and the client's
// certificate chain, leaf first, as verified by crypto/tls (nil without
// mTLS; see certIdentity).
//
//   - With a bearer token: the token is verified (signature, alg, iss,
//     aud, exp/nbf/iat) and is the principal. With mTLS on and a
//     certificate presented, the certificate subject is added to the
//     claims as "x509_subject".
//   - Without an Authorization header: the certificate is the principal
//     if auth.mtls_principal is set, else missing_token.
//   - A non-Bearer Authorization header is refused (missing_token) rather
//     than falling back to the certificate: the client asked to be
//     someone by other means, and guessing is worse than refusing.
//   - When bearer tokens are not configured (mTLS only), the header is
//     ignored: Iceberg clients forward their catalog token to the signer
//     whether or not the signer reads it.
//
// The returned *Identity may be shared with other requests and must not be
// modified. Every error is an *Error. A cache hit does not allocate.
func (a *Authenticator) Authenticate(ctx context.Context, authorization []byte, peerCerts []*x509.Certificate) (*Identity, error) {
	var leaf *x509.Certificate
	if a.mtls != MTLSOff && len(peerCerts) > 0 {
		leaf = peerCerts[0]
	}
	if a.keys == nil || isBlank(authorization) {
		if leaf != nil {
			id, err := certIdentity(a.mtls, leaf, a.now())
			if err != nil {
				return nil, err
			}
			return id, nil
		}
		if a.keys == nil {
			return nil, fail(ReasonMissingToken, "no client certificate")
		}
		return nil, fail(ReasonMissingToken, "no bearer token")
	}
	tok, ferr := bearerToken(authorization)
	if ferr != nil {
		return nil, ferr
	}
	id, ferr := a.token(ctx, tok)
	if ferr != nil {
		return nil, ferr
	}
	if leaf != nil {
		// The policy may trust x509_subject as certificate-derived: an
		// expired certificate does not lend it.
		if err := certInDate(leaf, a.now()); err != nil {
			return nil, err
		}
		id = withCertSubject(id, leaf)
	}
	return id, nil
}

// token returns the identity of a bearer token, from the cache when a
// previous verification is still valid.
func (a *Authenticator) token(ctx context.Context, tok []byte) (*Identity, *Error) {
	now := a.now()
	ks := a.keys.current()
	slot := a.memo.slot(tok)
	if e := slot.Load(); e != nil && !e.evicted.Load() && e.valid(now, ks.gen) && sameToken(e.token, tok) {
		if a.onCache != nil {
			a.onCache(true)
		}
		return e.id, nil
	}
	sum := sha256.Sum256(tok)
	if e, ok := a.cache.get(sum, now, ks.gen); ok {
		slot.Store(e)
		if a.onCache != nil {
			a.onCache(true)
		}
		return e.id, nil
	}
	if a.onCache != nil {
		a.onCache(false)
	}
	id, gen, err := a.verify(ctx, tok, sum, ks, now)
	if err != nil {
		return nil, err
	}
	if !id.ExpiresAt.IsZero() {
		e := &cacheEntry{id: id, notAfter: id.ExpiresAt.Add(a.rules.leeway), gen: gen, token: bytes.Clone(tok)}
		a.cache.add(sum, e)
		slot.Store(e)
	}
	return id, nil
}

// verify fully checks a token. It returns the generation of the key set
// whose key verified it, which the cache entry is bound to.
func (a *Authenticator) verify(ctx context.Context, tok []byte, sum [32]byte, ks *keySet, now time.Time) (*Identity, uint64, *Error) {
	c, err := parseCompact(tok)
	if err != nil {
		return nil, 0, err
	}
	// The header alg is checked against the allow-list (exactly: alg names
	// are case-sensitive, RFC 7515 §4.1.1) before any key is looked at:
	// "none" and anything unlisted never reach a verifier.
	if c.alg == "none" || !slices.Contains(a.allowed, c.alg) {
		return nil, 0, fail(ReasonAlgorithmNotAllowed, "bearer token algorithm is not allowed")
	}
	alg, ok := jwa.LookupSignatureAlgorithm(c.alg)
	if !ok {
		return nil, 0, fail(ReasonAlgorithmNotAllowed, "bearer token algorithm is not allowed")
	}
	keys := ks.lookup(c.kid, c.hasKID)
	if len(keys) == 0 {
		// A new kid usually means the provider rotated keys.
		if ks, keys, err = a.keys.lookupFresh(ctx, c.kid, c.hasKID); err != nil {
			return nil, 0, err
		}
	}
	fits := 0
	for _, k := range keys {
		if !keyFits(c.alg, k) {
			continue
		}
		fits++
		// VerifyCompactFast re-checks, inside jwx, that the key type fits
		// the algorithm and that the header's alg is the one verified
		// under, and refuses crit and b64: belt and braces with the checks
		// above.
		if _, verr := jws.VerifyCompactFast(k.key, tok, alg); verr != nil {
			continue
		}
		claims, err := decodeClaims(c.payload)
		if err != nil {
			return nil, 0, err
		}
		ch, err := a.rules.check(claims, now)
		if err != nil {
			return nil, 0, err
		}
		id := &Identity{
			Principal: policyinput.Principal{
				ID:     ch.principal,
				Issuer: ch.issuer,
				Groups: ch.groups,
				Claims: claims,
			},
			Method:    MethodBearer,
			TokenID:   ch.jti,
			TokenHash: sum,
			ExpiresAt: ch.exp,
		}
		// Cached and shared by every request with this token: its scope
		// key is encoded once, here.
		id.Principal.SetKey()
		return id, ks.gen, nil
	}
	if fits == 0 {
		return nil, 0, fail(ReasonAlgorithmNotAllowed, "bearer token algorithm does not match its key")
	}
	return nil, 0, fail(ReasonBadSignature, "bearer token signature is invalid")
}

func isBlank(b []byte) bool {
	for _, c := range b {
		if c != ' ' && c != '\t' {
			return false
		}
	}
	return true
}
