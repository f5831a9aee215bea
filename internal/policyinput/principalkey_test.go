package policyinput

import (
	"bytes"
	"encoding/json"
	"testing"
)

func jwtPrincipal() *Principal {
	return &Principal{ID: "alice", Issuer: "https://idp.example/", Groups: []string{"analysts", "g001"},
		Claims: map[string]any{"iss": "https://idp.example/", "sub": "alice", "aud": "countersign", "exp": json.Number("1764650000"),
			"iat": json.Number("1764646400"), "jti": "b1c2", "groups": []any{"analysts", "g001"}}}
}

// TestPrincipalKey: SetKey stores AppendPrincipalKey's encoding, and
// principals that differ in any field, or only in a claim's Go type (which
// changes the JSON), encode differently.
func TestPrincipalKey(t *testing.T) {
	p := jwtPrincipal()
	p.SetKey()
	want, ok := AppendPrincipalKey(nil, p)
	if !ok || p.Key == "" || p.Key != string(want) {
		t.Fatalf("Key %q, encoding %q (%v)", p.Key, want, ok)
	}
	again, _ := AppendPrincipalKey(nil, p) // ignores Key itself
	if !bytes.Equal(again, want) {
		t.Fatal("the encoding depends on Key")
	}
	variants := map[string]func(*Principal){
		"id":            func(p *Principal) { p.ID = "alicf" },
		"issuer":        func(p *Principal) { p.Issuer = "https://idp.example" },
		"groups nil":    func(p *Principal) { p.Groups = nil },
		"groups empty":  func(p *Principal) { p.Groups = []string{} },
		"group order":   func(p *Principal) { p.Groups = []string{"g001", "analysts"} },
		"claims nil":    func(p *Principal) { p.Claims = nil },
		"claim type":    func(p *Principal) { p.Claims["exp"] = 1764650000.0 },
		"claim added":   func(p *Principal) { p.Claims["x509_subject"] = "CN=alice" },
		"claim nested":  func(p *Principal) { p.Claims["groups"] = []any{"analysts", "g002"} },
		"id into group": func(p *Principal) { p.ID, p.Groups = "", []string{"alice", "analysts", "g001"} },
	}
	seen := map[string]string{string(want): "original"}
	for name, change := range variants {
		q := jwtPrincipal()
		change(q)
		b, ok := AppendPrincipalKey(nil, q)
		if !ok {
			t.Fatalf("%s: cannot encode", name)
		}
		if prev, dup := seen[string(b)]; dup {
			t.Errorf("%s encodes like %s", name, prev)
		}
		seen[string(b)] = name
	}
	if b, _ := AppendPrincipalKey(nil, nil); len(b) != 1 || seen[string(b)] != "" {
		t.Errorf("nil principal encodes as %q", b)
	}
	bad := jwtPrincipal()
	bad.Claims["c"] = make(chan int) // not JSON
	bad.Key = "stale"
	bad.SetKey()
	if bad.Key != "" {
		t.Errorf("unencodable claims got Key %q", bad.Key)
	}
}

// TestPrincipalKeyNotInput: Key is not part of the policy input document.
func TestPrincipalKeyNotInput(t *testing.T) {
	p := jwtPrincipal()
	p.SetKey()
	j, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(j, []byte("Key")) || bytes.Contains(j, []byte(`"key"`)) {
		t.Fatalf("Key is in the JSON: %s", j)
	}
}

func BenchmarkPrincipalKey(b *testing.B) {
	p := jwtPrincipal()
	buf := make([]byte, 0, 512)
	b.ReportAllocs()
	for b.Loop() {
		buf, _ = AppendPrincipalKey(buf[:0], p)
	}
}
