package auth

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"testing"
	"time"
)

func TestOnCacheReportsHitsAndMisses(t *testing.T) {
	secret := "0123456789abcdef0123456789abcdef"
	var got []bool
	a, err := New(context.Background(), Config{Issuer: "i", Audience: []string{"a"}, HS256Secret: secret}, Options{OnCache: func(hit bool) { got = append(got, hit) }})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	enc := base64.RawURLEncoding
	claims, _ := json.Marshal(map[string]any{"iss": "i", "aud": "a", "sub": "s", "exp": time.Now().Add(time.Hour).Unix()})
	signing := enc.EncodeToString([]byte(`{"alg":"HS256","typ":"JWT"}`)) + "." + enc.EncodeToString(claims)
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(signing))
	tok := []byte("Bearer " + signing + "." + enc.EncodeToString(mac.Sum(nil)))
	for range 2 {
		if _, err := a.Authenticate(context.Background(), tok, nil); err != nil {
			t.Fatal(err)
		}
	}
	if len(got) != 2 || got[0] || !got[1] {
		t.Fatalf("OnCache calls = %v, want [miss hit]", got)
	}
}
