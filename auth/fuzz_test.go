package auth

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"os"
	"path/filepath"
	"testing"
)

// The fuzz keys are fixed so the committed seeds (testdata/fuzz) stay
// valid tokens: Ed25519 keys derive from a seed and HMAC needs none, and
// the authenticators run on a fixed clock (t0).
func fuzzEdKey() ed25519.PrivateKey {
	return ed25519.NewKeyFromSeed([]byte("countersign fuzz key, 32 bytes!!"))
}

var fuzzSecret = []byte("countersign fuzz HS256 secret, 32+ bytes")

func fuzzAuthenticators(tb testing.TB) (jwksAuth, hsAuth *Authenticator) {
	path := filepath.Join(tb.TempDir(), "jwks.json")
	if err := os.WriteFile(path, jwks(edJWK("fz", fuzzEdKey().Public().(ed25519.PublicKey))), 0o600); err != nil {
		tb.Fatal(err)
	}
	c := newClock(t0)
	jwksAuth = newAuth(tb, Config{Issuer: testIssuer, Audience: []string{testAudience}, JWKSFile: path,
		AllowedAlgorithms: []string{"EdDSA", "RS256", "ES256"}, PrincipalClaim: "ext.user"}, c)
	hsAuth = newAuth(tb, Config{Issuer: testIssuer, Audience: []string{testAudience}, HS256Secret: string(fuzzSecret)}, c)
	return jwksAuth, hsAuth
}

func fuzzSeeds() [][]byte {
	claims := with(claimsAt(t0), "ext", map[string]any{"user": "bob"})
	ed := mint(hdr("EdDSA", "fz"), claims, eddsa(fuzzEdKey()))
	hs := mint(hdr("HS256", ""), claims, hs256(fuzzSecret))
	return [][]byte{
		[]byte("Bearer " + ed),
		[]byte("bearer " + hs),
		[]byte("Bearer " + mint(hdr("none", "fz"), claims, nil)),
		[]byte("Bearer " + mint(hdr("HS256", "fz"), claims, hs256(fuzzEdKey().Public().(ed25519.PublicKey)))),
		[]byte("Bearer " + mint(map[string]any{"alg": "EdDSA", "kid": "fz", "crit": []string{"x"}, "x": 1}, claims, eddsa(fuzzEdKey()))),
		[]byte("Bearer " + mint(hdr("EdDSA", "fz"), with(claims, "ext", nil), eddsa(fuzzEdKey()))),
		[]byte("Bearer eyJhbGciOiJSU0EtT0FFUCIsImVuYyI6IkEyNTZHQ00ifQ.a.b.c.d"),
		[]byte("Basic dXNlcjpwYXNz"),
		[]byte(""),
	}
}

// FuzzAuthenticate: Authenticate never panics, and whatever it accepts has
// a principal and is a token genuinely signed with one of the test keys
// (checked here independently of the package, with crypto/ed25519 and
// crypto/hmac).
func FuzzAuthenticate(f *testing.F) {
	for _, s := range fuzzSeeds() {
		f.Add(s)
	}
	jwksAuth, hsAuth := fuzzAuthenticators(f)
	pub := fuzzEdKey().Public().(ed25519.PublicKey)
	f.Fuzz(func(t *testing.T, header []byte) {
		for _, a := range []*Authenticator{jwksAuth, hsAuth} {
			id, err := a.Authenticate(context.Background(), header, nil)
			if err != nil {
				if _, ok := err.(*Error); !ok {
					t.Fatalf("error %T is not *Error", err)
				}
				continue
			}
			if id.Principal.ID == "" {
				t.Fatal("accepted with an empty principal")
			}
			tok := tokenOf(header)
			if id.TokenHash != sha256.Sum256(tok) {
				t.Fatal("token hash is not the token's")
			}
			parts := bytes.Split(tok, []byte("."))
			if len(parts) != 3 {
				t.Fatalf("accepted a token with %d segments", len(parts))
			}
			sig, err := base64.RawURLEncoding.Strict().DecodeString(string(parts[2]))
			if err != nil {
				t.Fatal("accepted a signature that is not base64url")
			}
			input := tok[:len(parts[0])+1+len(parts[1])]
			mac := hmac.New(sha256.New, fuzzSecret)
			mac.Write(input)
			genuine := ed25519.Verify(pub, input, sig) && a == jwksAuth ||
				hmac.Equal(mac.Sum(nil), sig) && a == hsAuth
			if !genuine {
				t.Fatalf("accepted a token not signed with the test key: %q", header)
			}
		}
	})
}

// tokenOf is an independent reading of what the token in a header is.
func tokenOf(h []byte) []byte {
	h = bytes.Trim(h, " \t")
	return bytes.TrimLeft(h[len("Bearer"):], " ")
}

// The committed seeds are real tokens for the fuzz keys: the valid ones
// must still be accepted, or the corpus has gone stale.
func TestFuzzSeedsStillValid(t *testing.T) {
	jwksAuth, hsAuth := fuzzAuthenticators(t)
	seeds := fuzzSeeds()
	for i, a := range []*Authenticator{jwksAuth, hsAuth} {
		id, err := a.Authenticate(context.Background(), seeds[i], nil)
		if err != nil {
			t.Fatalf("seed %d: %v", i, err)
		}
		if i == 0 && id.Principal.ID != "bob" {
			t.Fatalf("seed 0 principal %q", id.Principal.ID)
		}
	}
	files, err := filepath.Glob("testdata/fuzz/FuzzAuthenticate/*")
	if err != nil || len(files) < len(seeds) {
		t.Fatalf("%d committed seeds, want at least %d", len(files), len(seeds))
	}
	valid, _ := os.ReadFile("testdata/fuzz/FuzzAuthenticate/valid-eddsa")
	if !bytes.Contains(valid, seeds[0]) {
		t.Fatal("testdata/fuzz/FuzzAuthenticate/valid-eddsa is not the current valid EdDSA seed")
	}
}
