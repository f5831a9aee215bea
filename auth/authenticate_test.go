package auth

import (
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/internal/policyinput"
)

func TestValidTokens(t *testing.T) {
	a, _, c := newJWKSAuth(t)
	now := c.Now()
	cases := []struct {
		name string
		tok  string
	}{
		{"RS256", mint(hdr("RS256", "rsa1"), claimsAt(now), rs256(testRSA()))},
		{"PS256", mint(hdr("PS256", "rsa1"), claimsAt(now), ps256(testRSA()))},
		{"ES256", mint(hdr("ES256", "ec1"), claimsAt(now), es256(testEC()))},
		{"EdDSA", mint(hdr("EdDSA", "ed1"), claimsAt(now), eddsa(testEd()))},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			id := mustAuth(t, a, tc.tok)
			checkAlice(t, id, tc.tok, now)
		})
	}

	t.Run("HS256", func(t *testing.T) {
		h := newAuth(t, Config{Issuer: testIssuer, Audience: []string{testAudience}, HS256Secret: testSecret}, c)
		tok := mint(hdr("HS256", ""), claimsAt(now), hs256([]byte(testSecret)))
		checkAlice(t, mustAuth(t, h, tok), tok, now)
		// Development token generators often add a kid; with one secret
		// it does not matter.
		mustAuth(t, h, mint(hdr("HS256", "dev"), claimsAt(now), hs256([]byte(testSecret))))
		// A token signed with another secret does not verify.
		bad := mint(hdr("HS256", ""), claimsAt(now), hs256([]byte(testSecret+"x")))
		expectReason(t, h, bearer(bad), ReasonBadSignature)
		// RS256 is not accepted in HS256 mode.
		expectReason(t, h, bearer(mint(hdr("RS256", ""), claimsAt(now), rs256(testRSA()))), ReasonAlgorithmNotAllowed)
	})
}

func checkAlice(t *testing.T, id *Identity, tok string, now time.Time) {
	t.Helper()
	p := id.Principal
	if p.ID != "alice" || p.Issuer != testIssuer {
		t.Fatalf("principal %q issuer %q", p.ID, p.Issuer)
	}
	if !slices.Equal(p.Groups, []string{"analysts", "readers"}) {
		t.Fatalf("groups %v", p.Groups)
	}
	if p.Claims["sub"] != "alice" || p.Claims["aud"] != testAudience {
		t.Fatalf("claims %v", p.Claims)
	}
	if exp, ok := p.Claims["exp"].(json.Number); !ok || exp.String() != json.Number(mustJSON(now.Add(time.Hour).Unix())).String() {
		t.Fatalf("exp claim %#v is not the exact json.Number", p.Claims["exp"])
	}
	if id.Method != MethodBearer || id.TokenID != "token-1" {
		t.Fatalf("method %q jti %q", id.Method, id.TokenID)
	}
	if id.TokenHash != sha256.Sum256([]byte(tok)) {
		t.Fatalf("token hash is not SHA-256 of the token")
	}
	checkKey(t, &id.Principal, true)
	if !id.ExpiresAt.Equal(now.Add(time.Hour)) {
		t.Fatalf("expires %v", id.ExpiresAt)
	}
}

func TestTimeClaims(t *testing.T) {
	a, _, c := newJWKSAuth(t)
	now := c.Now()
	sign := func(claims map[string]any) []byte {
		return bearer(mint(hdr("RS256", "rsa1"), claims, rs256(testRSA())))
	}
	base := claimsAt(now)
	ok := func(name string, claims map[string]any) {
		t.Run(name, func(t *testing.T) {
			if _, err := a.Authenticate(context.Background(), sign(claims), nil); err != nil {
				t.Fatal(err)
			}
		})
	}
	bad := func(name string, claims map[string]any, want Reason) {
		t.Run(name, func(t *testing.T) { expectReason(t, a, sign(claims), want) })
	}
	bad("expired beyond leeway", with(base, "exp", now.Add(-31*time.Second).Unix()), ReasonExpired)
	bad("expired exactly at leeway", with(base, "exp", now.Add(-30*time.Second).Unix()), ReasonExpired)
	ok("expired within leeway", with(base, "exp", now.Add(-29*time.Second).Unix()))
	ok("fractional exp", with(base, "exp", float64(now.Unix())+0.5))
	bad("nbf beyond leeway", with(base, "nbf", now.Add(31*time.Second).Unix()), ReasonNotYetValid)
	ok("nbf within leeway", with(base, "nbf", now.Add(29*time.Second).Unix()))
	bad("iat in the future", with(base, "iat", now.Add(time.Minute).Unix()), ReasonNotYetValid)
	ok("iat within leeway", with(base, "iat", now.Add(20*time.Second).Unix()))
	bad("exp missing", with(base, "exp", nil), ReasonMalformedToken)
	bad("exp a string", with(base, "exp", "tomorrow"), ReasonMalformedToken)
	bad("nbf a string", with(base, "nbf", "now"), ReasonMalformedToken)
	bad("exp huge negative", with(base, "exp", -1e300), ReasonExpired)
	ok("exp huge", with(base, "exp", 1e300))
	ok("zero with an exponent", with(base, "n", json.Number("0e99999999")))
	ok("large integer", with(base, "n", json.Number("123456789012345678901234567890")))
	ok("small float", with(base, "n", json.Number("-2.5e-300")))

	t.Run("require_exp false", func(t *testing.T) {
		srv := newJWKSServer(t, defaultJWKS())
		cfg := jwksConfig(srv.URL)
		f := false
		cfg.RequireExp = &f
		b := newAuth(t, cfg, c)
		h := sign(with(base, "exp", nil))
		id1, err := b.Authenticate(context.Background(), h, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !id1.ExpiresAt.IsZero() {
			t.Fatalf("ExpiresAt %v for a token without exp", id1.ExpiresAt)
		}
		// Tokens without exp are never cached.
		id2, _ := b.Authenticate(context.Background(), h, nil)
		if id1 == id2 || b.cache.lru.Len() != 0 {
			t.Fatal("a token without exp was cached")
		}
		// An exp that is present is still enforced.
		expectReason(t, b, sign(with(base, "exp", now.Add(-time.Hour).Unix())), ReasonExpired)
	})

	t.Run("custom leeway", func(t *testing.T) {
		srv := newJWKSServer(t, defaultJWKS())
		cfg := jwksConfig(srv.URL)
		cfg.Leeway = 2 * time.Minute
		b := newAuth(t, cfg, c)
		if _, err := b.Authenticate(context.Background(), sign(with(base, "exp", now.Add(-90*time.Second).Unix())), nil); err != nil {
			t.Fatal(err)
		}
		expectReason(t, b, sign(with(base, "exp", now.Add(-121*time.Second).Unix())), ReasonExpired)
	})
}

func TestIssuerAudience(t *testing.T) {
	a, _, c := newJWKSAuth(t)
	base := claimsAt(c.Now())
	sign := func(claims map[string]any) []byte {
		return bearer(mint(hdr("ES256", "ec1"), claims, es256(testEC())))
	}
	for _, tc := range []struct {
		name   string
		claims map[string]any
		want   Reason
	}{
		{"wrong issuer", with(base, "iss", "https://evil.example"), ReasonWrongIssuer},
		{"issuer with trailing slash", with(base, "iss", testIssuer+"/"), ReasonWrongIssuer},
		{"missing issuer", with(base, "iss", nil), ReasonWrongIssuer},
		{"issuer not a string", with(base, "iss", 42), ReasonMalformedToken},
		{"wrong audience", with(base, "aud", "other"), ReasonWrongAudience},
		{"audience list without ours", with(base, "aud", []string{"a", "b"}), ReasonWrongAudience},
		{"missing audience", with(base, "aud", nil), ReasonWrongAudience},
		{"audience list with a number", with(base, "aud", []any{testAudience, 1}), ReasonMalformedToken},
		{"audience an object", with(base, "aud", map[string]any{"a": 1}), ReasonMalformedToken},
	} {
		t.Run(tc.name, func(t *testing.T) { expectReason(t, a, sign(tc.claims), tc.want) })
	}
	t.Run("audience list with ours", func(t *testing.T) {
		if _, err := a.Authenticate(context.Background(), sign(with(base, "aud", []string{"other", testAudience})), nil); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("second configured audience", func(t *testing.T) {
		srv := newJWKSServer(t, defaultJWKS())
		cfg := jwksConfig(srv.URL)
		cfg.Audience = []string{"first", "second"}
		b := newAuth(t, cfg, c)
		if _, err := b.Authenticate(context.Background(), sign(with(base, "aud", "second")), nil); err != nil {
			t.Fatal(err)
		}
		expectReason(t, b, sign(base), ReasonWrongAudience)
	})
}

func TestAlgorithmAttacks(t *testing.T) {
	a, _, c := newJWKSAuth(t)
	now := c.Now()
	claims := claimsAt(now)

	t.Run("alg none", func(t *testing.T) {
		for _, alg := range []string{"none", "None", "NONE"} {
			expectReason(t, a, bearer(mint(hdr(alg, "rsa1"), claims, nil)), ReasonAlgorithmNotAllowed)
			expectReason(t, a, bearer(mint(hdr(alg, ""), claims, nil)), ReasonAlgorithmNotAllowed)
		}
	})

	t.Run("HS256 with the RSA public key as secret", func(t *testing.T) {
		// The classic confusion: a verifier that feeds the "key" it has
		// for the kid into whatever alg the header names would accept
		// this, because the public key is public.
		pub := &testRSA().PublicKey
		der, err := x509.MarshalPKIXPublicKey(pub)
		if err != nil {
			t.Fatal(err)
		}
		pemBytes := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
		for _, secret := range [][]byte{pemBytes, der, pub.N.Bytes(), mustJSON(rsaJWK("rsa1", "", pub))} {
			for _, kid := range []string{"rsa1", ""} {
				tok := mint(hdr("HS256", kid), claims, hs256(secret))
				expectReason(t, a, bearer(tok), ReasonAlgorithmNotAllowed)
			}
		}
		// One layer down: even if HS256 got past the allow-list, no JWKS
		// key fits it.
		rk := a.keys.current().lookup("rsa1", true)[0]
		if keyFits("HS256", rk) {
			t.Fatal("an RSA key fits HS256")
		}
	})

	t.Run("key type must fit alg", func(t *testing.T) {
		// Properly signed by the EC key, but naming the RSA key's kid.
		expectReason(t, a, bearer(mint(hdr("ES256", "rsa1"), claims, es256(testEC()))), ReasonAlgorithmNotAllowed)
		// EdDSA header with the EC kid.
		expectReason(t, a, bearer(mint(hdr("EdDSA", "ec1"), claims, eddsa(testEd()))), ReasonAlgorithmNotAllowed)
		// ES256 names P-256: a P-384 key does not fit it.
		p384, err := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		srv := newJWKSServer(t, jwks(ecJWK("p384", &p384.PublicKey)))
		cfg := jwksConfig(srv.URL)
		cfg.AllowedAlgorithms = []string{"ES256", "ES384"}
		b := newAuth(t, cfg, c)
		expectReason(t, b, bearer(mint(hdr("ES256", "p384"), claims, es256(testEC()))), ReasonAlgorithmNotAllowed)
	})

	t.Run("JWK alg must match header alg", func(t *testing.T) {
		srv := newJWKSServer(t, jwks(rsaJWK("pinned", "RS256", &testRSA().PublicKey)))
		b := newAuth(t, jwksConfig(srv.URL), c)
		// Genuinely signed with the pinned key, but with PS256.
		expectReason(t, b, bearer(mint(hdr("PS256", "pinned"), claims, ps256(testRSA()))), ReasonAlgorithmNotAllowed)
		mustAuth(t, b, mint(hdr("RS256", "pinned"), claims, rs256(testRSA())))
	})

	t.Run("alg not in allowed_algorithms", func(t *testing.T) {
		srv := newJWKSServer(t, defaultJWKS())
		cfg := jwksConfig(srv.URL)
		cfg.AllowedAlgorithms = []string{"ES256"}
		b := newAuth(t, cfg, c)
		expectReason(t, b, bearer(mint(hdr("RS256", "rsa1"), claims, rs256(testRSA()))), ReasonAlgorithmNotAllowed)
		mustAuth(t, b, mint(hdr("ES256", "ec1"), claims, es256(testEC())))
		// Algorithm names are case-sensitive.
		expectReason(t, b, bearer(mint(hdr("es256", "ec1"), claims, es256(testEC()))), ReasonAlgorithmNotAllowed)
	})

	t.Run("bad signatures", func(t *testing.T) {
		good := mint(hdr("RS256", "rsa1"), claims, rs256(testRSA()))
		parts := strings.Split(good, ".")
		// Payload swapped: sub changed to admin, signature kept.
		forged := parts[0] + "." + b64(mustJSON(with(claims, "sub", "admin"))) + "." + parts[2]
		expectReason(t, a, bearer(forged), ReasonBadSignature)
		// Signed by another RSA key under the known kid.
		expectReason(t, a, bearer(mint(hdr("RS256", "rsa1"), claims, rs256(testRSA2()))), ReasonBadSignature)
		// Empty signature.
		expectReason(t, a, bearer(parts[0]+"."+parts[1]+"."), ReasonBadSignature)
		// Signature of the wrong length.
		expectReason(t, a, bearer(parts[0]+"."+parts[1]+"."+parts[2][:40]), ReasonBadSignature)
		// The key-embedding headers are ignored: an attacker's own key in
		// "jwk" does not make its signature valid.
		evil := mint(map[string]any{"alg": "EdDSA", "kid": "ed1",
			"jwk": edJWK("ed1", testEd2().Public().(ed25519.PublicKey))}, claims, eddsa(testEd2()))
		expectReason(t, a, bearer(evil), ReasonBadSignature)
	})
}

func testEd2() ed25519.PrivateKey {
	return ed25519.NewKeyFromSeed([]byte("0123456789abcdef0123456789abcdef"))
}

func TestMalformedTokens(t *testing.T) {
	a, _, c := newJWKSAuth(t)
	claims := claimsAt(c.Now())
	good := mint(hdr("RS256", "rsa1"), claims, rs256(testRSA()))
	p := strings.Split(good, ".")
	signed := func(h, payload string) string { return mintRaw([]byte(h), []byte(payload), rs256(testRSA())) }
	for _, tc := range []struct{ name, tok string }{
		{"one segment", p[0]},
		{"two segments", p[0] + "." + p[1]},
		{"four segments", good + ".x"},
		{"JWE (five segments)", "eyJhbGciOiJSU0EtT0FFUCIsImVuYyI6IkEyNTZHQ00ifQ.a.b.c.d"},
		{"bad base64 character", p[0] + "." + p[1] + "!." + p[2]},
		{"base64 padding", p[0] + "=." + p[1] + "." + p[2]},
		{"standard base64 alphabet", p[0] + "." + p[1] + "+/." + p[2]},
		{"impossible base64 length", "a." + p[1] + "." + p[2]},
		{"non-canonical base64 (trailing bits)", p[0] + "." + p[1] + "." + nonCanonical(p[2])},
		{"empty header", "." + p[1] + "." + p[2]},
		{"empty payload", p[0] + ".." + p[2]},
		{"header not JSON", b64([]byte("not json")) + "." + p[1] + "." + p[2]},
		{"header JSON array", b64([]byte(`["RS256"]`)) + "." + p[1] + "." + p[2]},
		{"header NaN", b64([]byte(`{"alg":"RS256","x":NaN}`)) + "." + p[1] + "." + p[2]},
		{"header without alg", mint(map[string]any{"kid": "rsa1"}, claims, rs256(testRSA()))},
		{"alg not a string", mint(map[string]any{"alg": 1, "kid": "rsa1"}, claims, rs256(testRSA()))},
		{"kid not a string", mint(map[string]any{"alg": "RS256", "kid": 1}, claims, rs256(testRSA()))},
		{"duplicate alg", signed(`{"alg":"RS256","alg":"none","kid":"rsa1"}`, string(mustJSON(claims)))},
		{"escaped duplicate", signed(`{"alg":"RS256","\u0061lg":"RS256","kid":"rsa1"}`, string(mustJSON(claims)))},
		{"crit header", mint(map[string]any{"alg": "RS256", "kid": "rsa1", "crit": []string{"exp"}, "exp": 1}, claims, rs256(testRSA()))},
		{"b64 header", mint(map[string]any{"alg": "RS256", "kid": "rsa1", "b64": false, "crit": []string{"b64"}}, claims, rs256(testRSA()))},
		{"enc header", mint(map[string]any{"alg": "RS256", "kid": "rsa1", "enc": "A256GCM"}, claims, rs256(testRSA()))},
		{"payload not JSON (validly signed)", signed(`{"alg":"RS256","kid":"rsa1"}`, "hello")},
		{"payload JSON string (validly signed)", signed(`{"alg":"RS256","kid":"rsa1"}`, `"hello"`)},
		{"payload invalid UTF-8 (validly signed)", signed(`{"alg":"RS256","kid":"rsa1"}`, "{\"sub\":\"\xff\"}")},
		// fastjson read this sub as the six characters \ud800, encoding/json
		// as U+FFFD: refused, so no two readings exist.
		{"lone surrogate escape (validly signed)", signed(`{"alg":"RS256","kid":"rsa1"}`,
			`{"iss":"`+testIssuer+`","aud":"`+testAudience+`","exp":9999999999,"sub":"a\ud800b"}`)},
		{"trailing data (validly signed)", signed(`{"alg":"RS256","kid":"rsa1"}`,
			`{"iss":"`+testIssuer+`","aud":"`+testAudience+`","exp":9999999999,"sub":"alice"} {}`)},
		{"duplicate claim (validly signed)", signed(`{"alg":"RS256","kid":"rsa1"}`,
			`{"iss":"`+testIssuer+`","aud":"`+testAudience+`","exp":9999999999,"sub":"alice","sub":"admin"}`)},
		{"nested duplicate (validly signed)", signed(`{"alg":"RS256","kid":"rsa1"}`,
			`{"iss":"`+testIssuer+`","aud":"`+testAudience+`","exp":9999999999,"sub":"alice","ext":[{"a":1,"a":2}]}`)},
		{"too large", mint(hdr("RS256", "rsa1"), with(claims, "pad", strings.Repeat("x", MaxTokenBytes)), rs256(testRSA()))},
		// Numbers the policy engine cannot evaluate: without the check the
		// token authenticated and every decision failed with a 503.
		{"number overflows a float (validly signed)", signed(`{"alg":"RS256","kid":"rsa1"}`,
			`{"iss":"`+testIssuer+`","aud":"`+testAudience+`","exp":9999999999,"sub":"alice","n":1e100000}`)},
		{"nested number overflows (validly signed)", signed(`{"alg":"RS256","kid":"rsa1"}`,
			`{"iss":"`+testIssuer+`","aud":"`+testAudience+`","exp":9999999999,"sub":"alice","ext":{"a":[-1e999]}}`)},
		{"number underflows to zero (validly signed)", signed(`{"alg":"RS256","kid":"rsa1"}`,
			`{"iss":"`+testIssuer+`","aud":"`+testAudience+`","exp":9999999999,"sub":"alice","n":1e-1000000}`)},
		{"exp beyond a float (validly signed)", signed(`{"alg":"RS256","kid":"rsa1"}`,
			`{"iss":"`+testIssuer+`","aud":"`+testAudience+`","exp":1e999,"sub":"alice"}`)},
		{"space inside", p[0] + "." + p[1] + " ." + p[2]},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := expectReason(t, a, bearer(tc.tok), ReasonMalformedToken)
			if strings.HasPrefix(tc.name, "JWE") && !strings.Contains(e.Msg, "JWE") {
				t.Fatalf("message %q does not say JWE", e.Msg)
			}
		})
	}
}

// nonCanonical changes the unused low bits of the last character of an
// unpadded base64url segment whose length is 2 mod 4: lenient decoders
// return the same bytes, so the token would have two spellings.
func nonCanonical(seg string) string {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	if len(seg)%4 != 2 {
		panic("segment length is not 2 mod 4")
	}
	i := strings.IndexByte(alphabet, seg[len(seg)-1])
	return seg[:len(seg)-1] + string(alphabet[i|1])
}

func TestBearerScheme(t *testing.T) {
	a, _, c := newJWKSAuth(t)
	tok := mint(hdr("EdDSA", "ed1"), claimsAt(c.Now()), eddsa(testEd()))
	for _, h := range []string{"Bearer " + tok, "bearer " + tok, "BEARER " + tok, "Bearer   " + tok + "  ", " Bearer " + tok} {
		if _, err := a.Authenticate(context.Background(), []byte(h), nil); err != nil {
			t.Errorf("%.12q: %v", h, err)
		}
	}
	for _, h := range []string{"", "   ", "Basic dXNlcjpwYXNz", "Bearer", "Bearer ", "Bearer\t" + tok, "Bearer" + tok, "Token " + tok, tok, "Bearer: " + tok[:10]} {
		e := expectReason(t, a, []byte(h), ReasonMissingToken)
		if h == "" && e.Msg != "no bearer token" {
			t.Errorf("message for a missing header: %q", e.Msg)
		}
		if (h == "Bearer" || h == "Bearer ") && e.Msg != "bearer token is empty" {
			t.Errorf("message for %q: %q", h, e.Msg)
		}
	}
	// A header that does not start with Bearer is refused before the
	// token is looked at, whatever follows.
	if _, err := a.Authenticate(context.Background(), nil, nil); err == nil {
		t.Fatal("nil header accepted")
	}
}

func TestPrincipalAndGroups(t *testing.T) {
	srv := newJWKSServer(t, defaultJWKS())
	c := newClock(t0)
	base := claimsAt(c.Now())
	sign := func(claims map[string]any) []byte {
		return bearer(mint(hdr("EdDSA", "ed1"), claims, eddsa(testEd())))
	}
	auth := func(t *testing.T, a *Authenticator, claims map[string]any) *Identity {
		t.Helper()
		id, err := a.Authenticate(context.Background(), sign(claims), nil)
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	a := newAuth(t, jwksConfig(srv.URL), c)

	t.Run("groups as array", func(t *testing.T) {
		id := auth(t, a, with(base, "groups", []any{"a", "", "b"}))
		if !slices.Equal(id.Principal.Groups, []string{"a", "b"}) {
			t.Fatal(id.Principal.Groups)
		}
	})
	t.Run("groups as string", func(t *testing.T) {
		id := auth(t, a, with(base, "groups", " a b,c ,, d\te"))
		if !slices.Equal(id.Principal.Groups, []string{"a", "b", "c", "d", "e"}) {
			t.Fatal(id.Principal.Groups)
		}
	})
	t.Run("groups absent", func(t *testing.T) {
		for _, claims := range []map[string]any{with(base, "groups", nil), with(base, "groups", "")} {
			id := auth(t, a, claims)
			if id.Principal.Groups == nil || len(id.Principal.Groups) != 0 {
				t.Fatalf("%#v, want an empty non-nil list", id.Principal.Groups)
			}
		}
	})
	t.Run("groups of the wrong type", func(t *testing.T) {
		expectReason(t, a, sign(with(base, "groups", []any{"a", 1})), ReasonMalformedToken)
		expectReason(t, a, sign(with(base, "groups", map[string]any{"a": true})), ReasonMalformedToken)
	})
	t.Run("missing principal", func(t *testing.T) {
		e := expectReason(t, a, sign(with(base, "sub", nil)), ReasonMissingPrincipal)
		if !strings.Contains(e.Msg, `"sub"`) {
			t.Fatalf("message %q does not name the claim", e.Msg)
		}
		expectReason(t, a, sign(with(base, "sub", "")), ReasonMissingPrincipal)
		expectReason(t, a, sign(with(base, "sub", 42)), ReasonMissingPrincipal)
		// No principal an auditor would have to guess at.
		for _, sub := range []string{"   ", "\t", "\u00a0", "alice\n", "ali\x00ce", "bob\u0085"} {
			expectReason(t, a, sign(with(base, "sub", sub)), ReasonMissingPrincipal)
		}
		for _, sub := range []string{"alice smith", " alice", "ünïcødé@example.org", "spiffe://x/y"} {
			if id := auth(t, a, with(base, "sub", sub)); id.Principal.ID != sub {
				t.Fatalf("sub %q: principal %q", sub, id.Principal.ID)
			}
		}
	})

	t.Run("dotted claims", func(t *testing.T) {
		cfg := jwksConfig(srv.URL)
		cfg.PrincipalClaim = "ext.user"
		cfg.GroupsClaim = "realm_access.roles"
		b := newAuth(t, cfg, c)
		claims := with(base,
			"ext", map[string]any{"user": "bob", "other": 1},
			"realm_access", map[string]any{"roles": []string{"admin"}})
		id := auth(t, b, claims)
		if id.Principal.ID != "bob" || !slices.Equal(id.Principal.Groups, []string{"admin"}) {
			t.Fatalf("id %q groups %v", id.Principal.ID, id.Principal.Groups)
		}
		// Every claim reaches the policy, nested ones as maps.
		if ext, ok := id.Principal.Claims["ext"].(map[string]any); !ok || ext["user"] != "bob" {
			t.Fatalf("claims %v", id.Principal.Claims)
		}
		// A top-level claim literally named "ext.user" wins.
		id = auth(t, b, with(claims, "ext.user", "carol"))
		if id.Principal.ID != "carol" {
			t.Fatalf("id %q, want the literal claim", id.Principal.ID)
		}
		expectReason(t, b, sign(with(claims, "ext", map[string]any{"other": 1})), ReasonMissingPrincipal)
		expectReason(t, b, sign(with(claims, "ext", "bob")), ReasonMissingPrincipal)
		expectReason(t, b, sign(with(claims, "ext", nil)), ReasonMissingPrincipal)
	})

	t.Run("large integers stay exact", func(t *testing.T) {
		b := newAuth(t, jwksConfig(srv.URL), c)
		tok := mintRaw([]byte(`{"alg":"EdDSA","kid":"ed1"}`), []byte(`{"iss":"`+testIssuer+`","aud":"`+testAudience+
			`","sub":"x","exp":`+json.Number(mustJSON(t0.Add(time.Hour).Unix())).String()+`,"uid":12345678901234567891}`), eddsa(testEd()))
		id := mustAuth(t, b, tok)
		if id.Principal.Claims["uid"] != json.Number("12345678901234567891") {
			t.Fatalf("uid %#v", id.Principal.Claims["uid"])
		}
	})
}

func TestReasons(t *testing.T) {
	seen := map[string]bool{}
	for r := ReasonMissingToken; r <= ReasonKeysUnavailable; r++ {
		s := r.String()
		if s == "unknown" || seen[s] {
			t.Fatalf("reason %d: %q", r, s)
		}
		seen[s] = true
	}
	want := []string{"missing_token", "malformed_token", "bad_signature", "expired", "not_yet_valid", "wrong_issuer",
		"wrong_audience", "unknown_key", "algorithm_not_allowed", "missing_principal", "keys_unavailable"}
	for _, w := range want {
		if !seen[w] {
			t.Fatalf("missing reason %q", w)
		}
	}
	if Reason(0).String() != "unknown" || len(seen) != len(want) {
		t.Fatal("reason set changed")
	}
	b, _ := json.Marshal(map[string]Reason{"r": ReasonExpired})
	if string(b) != `{"r":"expired"}` {
		t.Fatal(string(b))
	}
	err := error(fail(ReasonKeysUnavailable, "x"))
	if r, ok := ReasonOf(err); !ok || r != ReasonKeysUnavailable || !err.(*Error).Retryable() {
		t.Fatal("ReasonOf/Retryable")
	}
	if fail(ReasonExpired, "x").Retryable() {
		t.Fatal("expired is retryable")
	}
}

// checkKey: a principal's Key is either empty (set: false) or the exact
// encoding of its fields: a stale Key would put it in another principal's
// policy scope.
func checkKey(t *testing.T, p *policyinput.Principal, set bool) {
	t.Helper()
	want, ok := policyinput.AppendPrincipalKey(nil, p)
	switch {
	case !ok:
		t.Fatalf("principal %q cannot be encoded", p.ID)
	case set && p.Key != string(want):
		t.Fatalf("principal %q: Key %q, want its encoding %q", p.ID, p.Key, want)
	case !set && p.Key != "":
		t.Fatalf("principal %q of one request has Key %q", p.ID, p.Key)
	}
}
