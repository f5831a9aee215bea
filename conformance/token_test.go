package conformance

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

const (
	testIssuer   = "https://idp.conformance.test"
	testAudience = "countersign"
	testKID      = "conformance-key-1"
)

// The identity provider's key, generated once per test run.
var idpKey = sync.OnceValue(func() *rsa.PrivateKey {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		panic(err)
	}
	return k
})

// writeJWKS writes the identity provider's public key set for countersign.
func writeJWKS(t testing.TB) string {
	t.Helper()
	pub := idpKey().PublicKey
	enc := base64.RawURLEncoding
	jwks := map[string]any{"keys": []map[string]string{{
		"kty": "RSA", "kid": testKID, "alg": "RS256", "use": "sig",
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

// mintToken signs an RS256 JWT by hand, the way an identity provider
// would, with the standard claims plus extra.
func mintToken(sub string, groups []string, extra map[string]any) string {
	claims := map[string]any{
		"iss": testIssuer, "aud": testAudience, "sub": sub, "groups": groups,
		"iat": time.Now().Unix(), "exp": time.Now().Add(time.Hour).Unix(),
	}
	for k, v := range extra {
		claims[k] = v
	}
	enc := base64.RawURLEncoding
	header, _ := json.Marshal(map[string]string{"alg": "RS256", "typ": "JWT", "kid": testKID})
	body, _ := json.Marshal(claims)
	signing := enc.EncodeToString(header) + "." + enc.EncodeToString(body)
	sum := sha256.Sum256([]byte(signing))
	sig, err := rsa.SignPKCS1v15(rand.Reader, idpKey(), crypto.SHA256, sum[:])
	if err != nil {
		panic(err)
	}
	return signing + "." + enc.EncodeToString(sig)
}

// defaultToken is the principal most tests sign as.
var defaultToken = sync.OnceValue(func() string { return mintToken("lake-writer", []string{"lakehouse-writers"}, nil) })
