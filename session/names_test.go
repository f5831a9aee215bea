package session

import (
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"

	"github.com/countersign/countersign/internal/policyinput"
)

var (
	stsNameRE  = regexp.MustCompile(`^[\w+=,.@-]{2,64}$`)
	stsTagRE   = regexp.MustCompile(`^[\p{L}\p{Z}\p{N}_.:/=+\-@]{0,256}$`)
	plainIDRE  = regexp.MustCompile(`^[A-Za-z0-9_.@-]+$`)
	hashFormRE = regexp.MustCompile(`\+[0-9a-f]{24}$`)
)

func TestEncodeExamples(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"alice", "alice"},
		{"alice smith/eu", "alice=20smith=2Feu"},
		{"a=b", "a=3Db"},
		{"a+b", "a=2Bb"},
		{"a", "a+"},
		{"", "++"},
		{"jörg", "j=C3=B6rg"},
		{"svc:spark,prod", "svc=3Aspark=2Cprod"},
		{"alice@example.com", "alice@example.com"},
	} {
		if got := SessionName(&policyinput.Principal{ID: tc.in}); got != tc.want {
			t.Errorf("SessionName(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	long := strings.Repeat("x", 100)
	got := SourceIdentity(&policyinput.Principal{ID: long})
	if len(got) != 64 || !strings.HasPrefix(got, strings.Repeat("x", 39)+"+") || !hashFormRE.MatchString(got) {
		t.Errorf("SourceIdentity of 100 x = %q (%d chars), want 39 x, '+' and 24 hex digits", got, len(got))
	}
	// A cut never splits an escape: 38 x then "/" (=2F) would put "=2" at 39..40.
	got = Encode(strings.Repeat("x", 38)+"/"+strings.Repeat("y", 40), 2, 64)
	if !strings.HasPrefix(got, strings.Repeat("x", 38)+"+") {
		t.Errorf("cut at an escape: %q", got)
	}
}

// TestEncodeRules holds every encoding of random ids to STS's character
// rules, and the unhashed ones to injectivity.
func TestEncodeRules(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := []rune("ab=+,/: .@_-\x00é日Z9")
	seen := map[string]string{}
	for i := 0; i < 20000; i++ {
		n := rng.IntN(40)
		var b strings.Builder
		for j := 0; j < n; j++ {
			b.WriteRune(alphabet[rng.IntN(len(alphabet))])
		}
		id := b.String()
		p := &policyinput.Principal{ID: id, Issuer: "https://idp/" + id, Groups: []string{id, "g,h"}}
		name := SessionName(p)
		if !stsNameRE.MatchString(name) {
			t.Fatalf("SessionName(%q) = %q breaks STS's rules", id, name)
		}
		for k, v := range PrincipalTags(p) {
			if !stsTagRE.MatchString(v) {
				t.Fatalf("tag %s for %q = %q breaks STS's rules", k, id, v)
			}
		}
		if prev, ok := seen[name]; ok && prev != id {
			t.Fatalf("ids %q and %q both encode to %q", prev, id, name)
		}
		seen[name] = id
		if plainIDRE.MatchString(id) && len(id) >= 2 && len(id) <= 64 && name != id {
			t.Fatalf("a plain id %q is not its own name (%q)", id, name)
		}
	}
}

func TestPrincipalTags(t *testing.T) {
	p := &policyinput.Principal{ID: "alice", Issuer: "https://idp.example/realms/x", Groups: []string{"lake-writers", "analysts", "a:b"}}
	got := PrincipalTags(p)
	want := map[string]string{
		TagPrincipal: "alice",
		TagIssuer:    "https=3A=2F=2Fidp.example=2Frealms=2Fx",
		TagGroups:    "a=3Ab:analysts:lake-writers",
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("tag %s = %q, want %q", k, got[k], v)
		}
	}
	many := make([]string, 60)
	for i := range many {
		many[i] = strings.Repeat("g", 10) + string(rune('a'+i%26))
	}
	g := PrincipalTags(&policyinput.Principal{ID: "bob", Groups: many})[TagGroups]
	if len(g) > 256 || !hashFormRE.MatchString(g) {
		t.Errorf("groups over 256 characters: %q (%d), want a cut form", g, len(g))
	}
}
