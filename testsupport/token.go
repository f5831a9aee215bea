package testsupport

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"math/big"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// IdP plays the identity provider whose tokens countersign accepts: each
// test module configures countersign with its Issuer, Audience and the
// JWKS file, and mints bearer tokens by hand.
type IdP struct {
	Issuer   string
	Audience string
	KID      string // key id in the JWKS and in every token's header
}

// idpKey is the identity provider's key, generated once per test binary.
var idpKey = sync.OnceValue(func() *rsa.PrivateKey {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		panic(err)
	}
	return k
})

// Key is the private key behind the JWKS, for tests that forge tokens of
// their own.
func (p IdP) Key() *rsa.PrivateKey { return idpKey() }

// WriteJWKS writes the public key set for countersign's auth.jwks_file
// and returns its path.
func (p IdP) WriteJWKS(t testing.TB) string {
	t.Helper()
	pub := idpKey().PublicKey
	enc := base64.RawURLEncoding
	jwks := map[string]any{"keys": []map[string]string{{
		"kty": "RSA", "kid": p.KID, "alg": "RS256", "use": "sig",
		"n": enc.EncodeToString(pub.N.Bytes()),
		"e": enc.EncodeToString(big.NewInt(int64(pub.E)).Bytes()),
	}}}
	data, _ := json.Marshal(jwks)
	path := filepath.Join(t.TempDir(), "jwks.json")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// Mint signs an RS256 JWT by hand, the way an identity provider would,
// valid for an hour, with the standard claims plus extra (which may
// override them).
func (p IdP) Mint(sub string, groups []string, extra map[string]any) string {
	claims := map[string]any{
		"iss": p.Issuer, "aud": p.Audience, "sub": sub, "groups": groups,
		"iat": time.Now().Unix(), "exp": time.Now().Add(time.Hour).Unix(),
	}
	for k, v := range extra {
		claims[k] = v
	}
	enc := base64.RawURLEncoding
	header, _ := json.Marshal(map[string]string{"alg": "RS256", "typ": "JWT", "kid": p.KID})
	body, _ := json.Marshal(claims)
	signing := enc.EncodeToString(header) + "." + enc.EncodeToString(body)
	sum := sha256.Sum256([]byte(signing))
	sig, err := rsa.SignPKCS1v15(rand.Reader, idpKey(), crypto.SHA256, sum[:])
	if err != nil {
		panic(err)
	}
	return signing + "." + enc.EncodeToString(sig)
}
