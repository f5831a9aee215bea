package auth

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/hmac"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Keys are generated once per test binary: RSA generation is slow under
// -race, and every test only needs "a key", not a particular one.
var (
	testRSA  = sync.OnceValue(func() *rsa.PrivateKey { return mustRSA(2048) })
	testRSA2 = sync.OnceValue(func() *rsa.PrivateKey { return mustRSA(2048) })
	testEC   = sync.OnceValue(mustEC)
	testEd   = sync.OnceValue(func() ed25519.PrivateKey {
		_, k, err := ed25519.GenerateKey(rand.Reader)
		if err != nil {
			panic(err)
		}
		return k
	})
)

func mustEC() *ecdsa.PrivateKey {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		panic(err)
	}
	return k
}

func mustRSA(bits int) *rsa.PrivateKey {
	k, err := rsa.GenerateKey(rand.Reader, bits)
	if err != nil {
		panic(err)
	}
	return k
}

const (
	testIssuer   = "https://idp.example"
	testAudience = "countersign"
	testSecret   = "0123456789abcdef0123456789abcdef-dev"
)

var t0 = time.Unix(1_800_000_000, 0)

// clock is a settable Options.Now.
type clock struct{ ns atomic.Int64 }

func newClock(t time.Time) *clock { c := &clock{}; c.ns.Store(t.UnixNano()); return c }
func (c *clock) Now() time.Time   { return time.Unix(0, c.ns.Load()) }
func (c *clock) Advance(d time.Duration) {
	c.ns.Add(int64(d))
}

func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// signer signs a JWS signing input, independently of jwx, so the tests do
// not trust the library under test to produce its own inputs.
type signer func(input []byte) []byte

func rs256(k *rsa.PrivateKey) signer {
	return func(in []byte) []byte {
		h := sha256.Sum256(in)
		s, err := rsa.SignPKCS1v15(rand.Reader, k, crypto.SHA256, h[:])
		if err != nil {
			panic(err)
		}
		return s
	}
}

func ps256(k *rsa.PrivateKey) signer {
	return func(in []byte) []byte {
		h := sha256.Sum256(in)
		s, err := rsa.SignPSS(rand.Reader, k, crypto.SHA256, h[:], &rsa.PSSOptions{SaltLength: rsa.PSSSaltLengthEqualsHash})
		if err != nil {
			panic(err)
		}
		return s
	}
}

func es256(k *ecdsa.PrivateKey) signer {
	return func(in []byte) []byte {
		h := sha256.Sum256(in)
		r, s, err := ecdsa.Sign(rand.Reader, k, h[:])
		if err != nil {
			panic(err)
		}
		out := make([]byte, 64)
		r.FillBytes(out[:32])
		s.FillBytes(out[32:])
		return out
	}
}

func eddsa(k ed25519.PrivateKey) signer {
	return func(in []byte) []byte { return ed25519.Sign(k, in) }
}

func hs256(secret []byte) signer {
	return func(in []byte) []byte {
		m := hmac.New(sha256.New, secret)
		m.Write(in)
		return m.Sum(nil)
	}
}

// mintRaw builds a compact JWS from raw header and payload JSON.
func mintRaw(hdr, payload []byte, sign signer) string {
	in := b64(hdr) + "." + b64(payload)
	if sign == nil {
		return in + "."
	}
	return in + "." + b64(sign([]byte(in)))
}

func mint(hdr, claims map[string]any, sign signer) string {
	return mintRaw(mustJSON(hdr), mustJSON(claims), sign)
}

func hdr(alg, kid string) map[string]any {
	h := map[string]any{"alg": alg, "typ": "JWT"}
	if kid != "" {
		h["kid"] = kid
	}
	return h
}

// claimsAt are valid claims for a token issued at now.
func claimsAt(now time.Time) map[string]any {
	return map[string]any{
		"iss":    testIssuer,
		"aud":    testAudience,
		"sub":    "alice",
		"exp":    now.Add(time.Hour).Unix(),
		"iat":    now.Unix(),
		"jti":    "token-1",
		"groups": []string{"analysts", "readers"},
	}
}

func with(c map[string]any, kv ...any) map[string]any {
	out := make(map[string]any, len(c))
	for k, v := range c {
		out[k] = v
	}
	for i := 0; i < len(kv); i += 2 {
		if kv[i+1] == nil {
			delete(out, kv[i].(string))
			continue
		}
		out[kv[i].(string)] = kv[i+1]
	}
	return out
}

// JWK builders, written out by hand from the RFC 7518 §6 fields.

func rsaJWK(kid, alg string, k *rsa.PublicKey) map[string]any {
	j := map[string]any{"kty": "RSA", "kid": kid, "use": "sig",
		"n": b64(k.N.Bytes()), "e": b64(big.NewInt(int64(k.E)).Bytes())}
	if alg != "" {
		j["alg"] = alg
	}
	return j
}

func ecJWK(kid string, k *ecdsa.PublicKey) map[string]any {
	// Uncompressed SEC 1 point: 0x04 || X || Y, each coordinate padded to
	// the field size, which is what RFC 7518 §6.2.1 wants for "x" and "y".
	pt, err := k.Bytes()
	if err != nil {
		panic(err)
	}
	size := (len(pt) - 1) / 2
	x, y := pt[1:1+size], pt[1+size:]
	return map[string]any{"kty": "EC", "kid": kid, "crv": k.Curve.Params().Name, "x": b64(x), "y": b64(y)}
}

func edJWK(kid string, k ed25519.PublicKey) map[string]any {
	return map[string]any{"kty": "OKP", "kid": kid, "crv": "Ed25519", "x": b64(k)}
}

func jwks(keys ...map[string]any) []byte {
	if keys == nil {
		keys = []map[string]any{}
	}
	return mustJSON(map[string]any{"keys": keys})
}

// jwksServer is a real HTTP JWKS endpoint on loopback that counts fetches
// and can change what it serves.
type jwksServer struct {
	*httptest.Server
	fetches atomic.Int64
	body    atomic.Pointer[[]byte]
	status  atomic.Int64
}

func newJWKSServer(t testing.TB, body []byte) *jwksServer {
	s := &jwksServer{}
	s.set(body)
	s.status.Store(http.StatusOK)
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.fetches.Add(1)
		// A failing status still carries a valid JWKS, so only the
		// status check can refuse it.
		w.Header().Set("Content-Type", "application/jwk-set+json")
		w.WriteHeader(int(s.status.Load()))
		w.Write(*s.body.Load())
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *jwksServer) set(body []byte) { s.body.Store(&body) }

// defaultJWKS serves every test key under a kid naming its algorithm.
func defaultJWKS() []byte {
	return jwks(
		rsaJWK("rsa1", "", &testRSA().PublicKey),
		ecJWK("ec1", &testEC().PublicKey),
		edJWK("ed1", testEd().Public().(ed25519.PublicKey)),
	)
}

func jwksConfig(url string) Config {
	return Config{Issuer: testIssuer, Audience: []string{testAudience}, JWKSURL: url}
}

func newAuth(t testing.TB, cfg Config, c *clock) *Authenticator {
	t.Helper()
	a, err := New(context.Background(), cfg, Options{Now: c.Now})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(a.Close)
	return a
}

// newJWKSAuth is the common setup: a JWKS server with every test key.
func newJWKSAuth(t testing.TB) (*Authenticator, *jwksServer, *clock) {
	t.Helper()
	srv := newJWKSServer(t, defaultJWKS())
	c := newClock(t0)
	return newAuth(t, jwksConfig(srv.URL), c), srv, c
}

func bearer(tok string) []byte { return []byte("Bearer " + tok) }

func mustAuth(t *testing.T, a *Authenticator, tok string) *Identity {
	t.Helper()
	id, err := a.Authenticate(context.Background(), bearer(tok), nil)
	if err != nil {
		t.Fatalf("Authenticate: %v", err)
	}
	return id
}

// expectReason checks the failure reason, and that the message never
// leaks the token or any of its segments.
func expectReason(t *testing.T, a *Authenticator, header []byte, want Reason) *Error {
	t.Helper()
	id, err := a.Authenticate(context.Background(), header, nil)
	if err == nil {
		t.Fatalf("Authenticate succeeded (principal %q), want %s", id.Principal.ID, want)
	}
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("error %T %v is not *Error", err, err)
	}
	if e.Reason != want {
		t.Fatalf("reason %s (%q), want %s", e.Reason, e.Msg, want)
	}
	if e.Msg == "" {
		t.Fatalf("empty message")
	}
	_, tok, _ := bytes.Cut(header, []byte(" "))
	for _, seg := range strings.Split(string(tok), ".") {
		if len(seg) >= 8 && strings.Contains(e.Msg, seg) {
			t.Fatalf("message %q contains a token segment", e.Msg)
		}
	}
	return e
}
