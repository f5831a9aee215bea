package auth

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/rsa"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// waitLoad runs a forced refresh to completion, as the background ticker
// would.
func waitLoad(t *testing.T, a *Authenticator) {
	t.Helper()
	if done := a.keys.startLoad(true); done != nil {
		<-done
	}
}

func TestKeyRotation(t *testing.T) {
	k2 := mustRSA(2048)
	srv := newJWKSServer(t, jwks(rsaJWK("k1", "RS256", &testRSA().PublicKey)))
	c := newClock(t0)
	a := newAuth(t, jwksConfig(srv.URL), c)
	if n := srv.fetches.Load(); n != 1 {
		t.Fatalf("%d fetches at start, want 1", n)
	}
	claims := claimsAt(c.Now())
	mustAuth(t, a, mint(hdr("RS256", "k1"), claims, rs256(testRSA())))

	// The provider rotates: it now publishes k2 (and still k1).
	srv.set(jwks(rsaJWK("k1", "RS256", &testRSA().PublicKey), rsaJWK("k2", "RS256", &k2.PublicKey)))
	tok2 := mint(hdr("RS256", "k2"), claims, rs256(k2))

	// Right after the start-up fetch, an unknown kid does not refetch.
	expectReason(t, a, bearer(tok2), ReasonUnknownKey)
	if n := srv.fetches.Load(); n != 1 {
		t.Fatalf("%d fetches within the rate limit, want 1", n)
	}

	c.Advance(DefaultJWKSMinRefresh + time.Second)
	id := mustAuth(t, a, tok2)
	if id.Principal.ID != "alice" {
		t.Fatal(id.Principal.ID)
	}
	if n := srv.fetches.Load(); n != 2 {
		t.Fatalf("%d fetches after the new kid, want 2", n)
	}
	// Adding a key does not void cached verifications.
	if g := a.keys.current().gen; g != 0 {
		t.Fatalf("generation %d after a key was only added", g)
	}

	// A second unknown kid within the rate-limit window: no fetch.
	c.Advance(DefaultJWKSMinRefresh / 2)
	tok3 := mint(hdr("RS256", "k3"), claims, rs256(k2))
	expectReason(t, a, bearer(tok3), ReasonUnknownKey)
	expectReason(t, a, bearer(tok3), ReasonUnknownKey)
	if n := srv.fetches.Load(); n != 2 {
		t.Fatalf("%d fetches after a second unknown kid within the window, want 2", n)
	}
	// After the window, an unknown kid fetches again (and is still unknown).
	c.Advance(DefaultJWKSMinRefresh)
	expectReason(t, a, bearer(tok3), ReasonUnknownKey)
	if n := srv.fetches.Load(); n != 3 {
		t.Fatalf("%d fetches after the window, want 3", n)
	}
}

func TestConcurrentUnknownKidFetchesOnce(t *testing.T) {
	k2 := mustRSA(2048)
	srv := newJWKSServer(t, jwks(rsaJWK("k1", "", &testRSA().PublicKey)))
	c := newClock(t0)
	a := newAuth(t, jwksConfig(srv.URL), c)
	srv.set(jwks(rsaJWK("k1", "", &testRSA().PublicKey), rsaJWK("k2", "", &k2.PublicKey)))
	c.Advance(time.Minute)
	tok := mint(hdr("RS256", "k2"), claimsAt(c.Now()), rs256(k2))
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for range 16 {
		wg.Go(func() {
			if _, err := a.Authenticate(context.Background(), bearer(tok), nil); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("concurrent request: %v", err)
	}
	if n := srv.fetches.Load(); n != 2 {
		t.Fatalf("%d fetches for 16 concurrent requests with one new kid, want 2", n)
	}
	mustAuth(t, a, tok)
}

func TestCachedTokenVoidedByKeyRemoval(t *testing.T) {
	srv := newJWKSServer(t, defaultJWKS())
	c := newClock(t0)
	a := newAuth(t, jwksConfig(srv.URL), c)
	tok := mint(hdr("RS256", "rsa1"), claimsAt(c.Now()), rs256(testRSA()))
	id1 := mustAuth(t, a, tok)
	if id2 := mustAuth(t, a, tok); id2 != id1 {
		t.Fatal("second call was not a cache hit")
	}

	// The provider drops rsa1. Until a refresh notices, the cached token
	// still passes (bounded by auth.jwks_refresh); after it, it does not.
	srv.set(jwks(ecJWK("ec1", &testEC().PublicKey), edJWK("ed1", testEd().Public().(ed25519.PublicKey))))
	mustAuth(t, a, tok)
	waitLoad(t, a)
	if g := a.keys.current().gen; g != 1 {
		t.Fatalf("generation %d after a removal, want 1", g)
	}
	expectReason(t, a, bearer(tok), ReasonUnknownKey)

	// Replacing the material under an existing kid also voids the cache.
	srv.set(defaultJWKS())
	waitLoad(t, a)
	tokEC := mint(hdr("ES256", "ec1"), claimsAt(c.Now()), es256(testEC()))
	mustAuth(t, a, tokEC)
	srv.set(jwks(ecJWK("ec1", &mustEC().PublicKey), rsaJWK("rsa1", "", &testRSA().PublicKey)))
	waitLoad(t, a)
	expectReason(t, a, bearer(tokEC), ReasonBadSignature)

	// An unchanged document is not parsed again and changes nothing.
	gen := a.keys.current().gen
	before := a.keys.current()
	waitLoad(t, a)
	if a.keys.current() != before || a.keys.current().gen != gen {
		t.Fatal("an unchanged JWKS replaced the key set")
	}
}

func TestKeysUnavailable(t *testing.T) {
	srv := newJWKSServer(t, defaultJWKS())
	c := newClock(t0)
	a := newAuth(t, jwksConfig(srv.URL), c)
	claims := claimsAt(c.Now())
	known := mint(hdr("EdDSA", "ed1"), claims, eddsa(testEd()))
	newKid := mint(hdr("EdDSA", "ed-new"), claims, eddsa(testEd()))

	srv.status.Store(http.StatusInternalServerError)
	c.Advance(time.Minute)
	e := expectReason(t, a, bearer(newKid), ReasonKeysUnavailable)
	if !e.Retryable() {
		t.Fatal("keys_unavailable is not retryable")
	}
	// Within the rate-limit window the last failure still counts.
	expectReason(t, a, bearer(newKid), ReasonKeysUnavailable)
	// Known keys keep working from the last good set.
	mustAuth(t, a, known)

	// The provider recovers without the new kid: now it is unknown.
	srv.status.Store(http.StatusOK)
	c.Advance(time.Minute)
	expectReason(t, a, bearer(newKid), ReasonUnknownKey)
}

func TestStartupFailsClosed(t *testing.T) {
	c := newClock(t0)
	down := newJWKSServer(t, defaultJWKS())
	down.status.Store(http.StatusServiceUnavailable)
	closed := newJWKSServer(t, defaultJWKS())
	closed.Close()
	garbage := newJWKSServer(t, []byte("<html>login</html>"))
	onlyOct := newJWKSServer(t, jwks(map[string]any{"kty": "oct", "kid": "h", "k": b64([]byte(testSecret))}))
	// The redirect target serves a good JWKS: following it would succeed.
	good := newJWKSServer(t, defaultJWKS())
	redirect := httptest.NewServer(http.RedirectHandler(good.URL, http.StatusFound))
	t.Cleanup(redirect.Close)

	for name, url := range map[string]string{
		"unreachable": closed.URL, "503": down.URL, "not a JWKS": garbage.URL,
		"no usable key": onlyOct.URL, "redirect": redirect.URL,
	} {
		t.Run(name, func(t *testing.T) {
			a, err := New(context.Background(), jwksConfig(url), Options{Now: c.Now})
			if err == nil {
				a.Close()
				t.Fatal("New succeeded")
			}
			if !strings.HasPrefix(err.Error(), "auth.jwks_url: ") {
				t.Fatalf("error %q does not name auth.jwks_url", err)
			}
		})
	}
	t.Run("missing file", func(t *testing.T) {
		cfg := Config{Issuer: testIssuer, Audience: []string{testAudience}, JWKSFile: filepath.Join(t.TempDir(), "nope.json")}
		_, err := New(context.Background(), cfg, Options{Now: c.Now})
		if err == nil || !strings.HasPrefix(err.Error(), "auth.jwks_file: ") {
			t.Fatalf("error %v does not name auth.jwks_file", err)
		}
	})
	t.Run("invalid config", func(t *testing.T) {
		_, err := New(context.Background(), Config{JWKSURL: closed.URL}, Options{})
		if err == nil || err.Error() != "auth.issuer is required" {
			t.Fatalf("error %v", err)
		}
	})
}

func TestJWKSFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "jwks.json")
	write := func(b []byte) {
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(jwks(edJWK("ed1", testEd().Public().(ed25519.PublicKey))))
	c := newClock(t0)
	a := newAuth(t, Config{Issuer: testIssuer, Audience: []string{testAudience}, JWKSFile: path}, c)
	claims := claimsAt(c.Now())
	mustAuth(t, a, mint(hdr("EdDSA", "ed1"), claims, eddsa(testEd())))
	// A single-key set verifies tokens without a kid.
	mustAuth(t, a, mint(hdr("EdDSA", ""), claims, eddsa(testEd())))

	// The file changes; an unknown kid re-reads it (after the rate limit).
	write(jwks(edJWK("ed1", testEd().Public().(ed25519.PublicKey)), rsaJWK("rsa1", "", &testRSA().PublicKey)))
	c.Advance(time.Minute)
	mustAuth(t, a, mint(hdr("RS256", "rsa1"), claims, rs256(testRSA())))
	// With two keys, a (not yet cached) token must name its key.
	expectReason(t, a, bearer(mint(hdr("EdDSA", ""), with(claims, "jti", "2"), eddsa(testEd()))), ReasonUnknownKey)

	// A broken file keeps the last good keys.
	write([]byte("{"))
	waitLoad(t, a)
	mustAuth(t, a, mint(hdr("EdDSA", "ed1"), with(claims, "jti", "other"), eddsa(testEd())))
}

func TestSkippedJWKSKeys(t *testing.T) {
	weak, err := rsa.GenerateKey(rand.Reader, 1024)
	if err != nil {
		t.Fatal(err)
	}
	enc := rsaJWK("enc", "", &testRSA().PublicKey)
	enc["use"] = "enc"
	signOnly := rsaJWK("signonly", "", &testRSA().PublicKey)
	signOnly["key_ops"] = []string{"sign"}
	rsaOAEP := rsaJWK("oaep", "RSA-OAEP", &testRSA().PublicKey)
	delete(rsaOAEP, "use")
	srv := newJWKSServer(t, jwks(
		rsaJWK("good", "", &testRSA().PublicKey),
		enc, signOnly, rsaOAEP,
		rsaJWK("weak", "", &weak.PublicKey),
		map[string]any{"kty": "oct", "kid": "oct", "k": b64([]byte(testSecret))},
		map[string]any{"kty": "EC", "kid": "badcurve", "crv": "P-192", "x": "AA", "y": "AA"},
		map[string]any{"kty": "ML-DSA", "kid": "pq", "pub": "AA"},
	))
	c := newClock(t0)
	a := newAuth(t, jwksConfig(srv.URL), c)
	if got := a.keys.current().kids(); len(got) != 1 || got[0] != "good" {
		t.Fatalf("usable keys %v, want [good]", got)
	}
	claims := claimsAt(c.Now())
	mustAuth(t, a, mint(hdr("RS256", "good"), claims, rs256(testRSA())))
	for _, kid := range []string{"enc", "signonly", "oaep"} {
		expectReason(t, a, bearer(mint(hdr("RS256", kid), claims, rs256(testRSA()))), ReasonUnknownKey)
	}
	expectReason(t, a, bearer(mint(hdr("RS256", "weak"), claims, rs256(weak))), ReasonUnknownKey)
	expectReason(t, a, bearer(mint(hdr("HS256", "oct"), claims, hs256([]byte(testSecret)))), ReasonAlgorithmNotAllowed)
}

func TestBackgroundRefreshAndClose(t *testing.T) {
	srv := newJWKSServer(t, defaultJWKS())
	cfg := jwksConfig(srv.URL)
	cfg.JWKSRefresh = 20 * time.Millisecond
	a, err := New(context.Background(), cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for srv.fetches.Load() < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("only %d fetches in 5s with a 20ms refresh", srv.fetches.Load())
		}
		time.Sleep(5 * time.Millisecond)
	}
	a.Close()
	a.Close()
	n := srv.fetches.Load()
	time.Sleep(100 * time.Millisecond)
	if m := srv.fetches.Load(); m != n {
		t.Fatalf("%d fetches after Close", m-n)
	}
	// Verification keeps working with the last keys, and unknown kids
	// no longer fetch.
	tok := mint(hdr("EdDSA", "ed1"), claimsAt(time.Now()), eddsa(testEd()))
	if _, err := a.Authenticate(context.Background(), bearer(tok), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Authenticate(context.Background(), bearer(mint(hdr("EdDSA", "x"), claimsAt(time.Now()), eddsa(testEd()))), nil); err == nil {
		t.Fatal("unknown kid accepted")
	}
	if m := srv.fetches.Load(); m != n {
		t.Fatalf("fetch after Close")
	}
}

func TestTokenWithoutKid(t *testing.T) {
	a, _, c := newJWKSAuth(t)
	// Three keys: a token without kid cannot pick one.
	expectReason(t, a, bearer(mint(hdr("RS256", ""), claimsAt(c.Now()), rs256(testRSA()))), ReasonUnknownKey)
}
