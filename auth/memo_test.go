package auth

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"
)

// TestTokenMemo: a token seen before is answered from the memo, with the
// cached identity; a token of the same length whose last bytes (its slot)
// are the same but which differs anywhere else is not; an entry is not
// honoured past exp + leeway, nor once the cache evicted it.
func TestTokenMemo(t *testing.T) {
	a, _, c := newJWKSAuth(t)
	now := c.Now()
	tok := mint(hdr("RS256", "rsa1"), with(claimsAt(now), "exp", now.Add(10*time.Minute).Unix()), rs256(testRSA()))
	id := mustAuth(t, a, tok)
	e := a.memo.slot([]byte(tok)).Load()
	if e == nil || string(e.token) != tok || e.id != id {
		t.Fatal("a verified token is not in its memo slot")
	}
	if got := mustAuth(t, a, tok); got != id {
		t.Fatal("a memo hit returned another identity")
	}

	// Same length, same last 8 bytes: the same slot, compared whole.
	for _, at := range []int{0, len(tok) / 2, len(tok) - 9} {
		b := []byte(tok)
		b[at] ^= 1
		if a.memo.slot(b) != a.memo.slot([]byte(tok)) {
			t.Fatal("the tampered token is in another slot: the test does not reach the comparison")
		}
		if _, err := a.Authenticate(context.Background(), bearer(string(b)), nil); err == nil {
			t.Fatalf("a token differing at byte %d was accepted", at)
		}
	}
	if got := mustAuth(t, a, tok); got != id {
		t.Fatal("the memo lost the token after a near miss")
	}

	// Not past exp + leeway (30 s), even though the memo still holds it.
	c.Advance(10*time.Minute + 30*time.Second)
	expectReason(t, a, bearer(tok), ReasonExpired)

	// Not once evicted from the cache.
	c.Advance(-time.Minute)
	tok2 := mint(hdr("RS256", "rsa1"), with(claimsAt(c.Now()), "jti", "two"), rs256(testRSA()))
	id2 := mustAuth(t, a, tok2)
	a.cache.lru.Purge()
	if got := mustAuth(t, a, tok2); got == id2 {
		t.Fatal("the memo answered for a token the cache no longer holds")
	}
}

func TestSameToken(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want bool
	}{
		{"", "", true},
		{"abc", "abc", true},
		{"abcdefghijklmnopq", "abcdefghijklmnopq", true},
		{"abcdefghijklmnopq", "abcdefghijklmnopr", false}, // the tail after the words
		{"abcdefghijklmnopq", "Abcdefghijklmnopq", false}, // the first word
		{"abcdefghijklmnopq", "abcdefghXjklmnopq", false}, // the second word
		{"abc", "abcd", false},
	} {
		if got := sameToken([]byte(tc.a), []byte(tc.b)); got != tc.want {
			t.Errorf("sameToken(%q, %q) = %v", tc.a, tc.b, got)
		}
	}
	// Every position of tokens up to 100 bytes (the 32-byte rounds, the
	// words after them, the bytes after those).
	for n := 0; n <= 100; n++ {
		a := make([]byte, n)
		for i := range a {
			a[i] = byte('A' + i%26)
		}
		if !sameToken(a, append([]byte(nil), a...)) {
			t.Fatalf("length %d: equal tokens differ", n)
		}
		for i := 0; i < n; i++ {
			b := append([]byte(nil), a...)
			b[i] ^= 0x40
			if sameToken(a, b) {
				t.Fatalf("length %d: a difference at byte %d is not seen", n, i)
			}
		}
	}
}

// TestTokenMemoConcurrent: many tokens (more than the memo's slots, so
// slots are shared and rewritten) from several goroutines each get their
// own identity (run with -race).
func TestTokenMemoConcurrent(t *testing.T) {
	a, _, c := newJWKSAuth(t)
	const n = 3 * memoSlots
	toks := make([]string, n)
	for i := range toks {
		toks[i] = mint(hdr("EdDSA", "ed1"), with(claimsAt(c.Now()), "sub", fmt.Sprintf("user-%d", i)), eddsa(testEd()))
	}
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := 0; r < 5; r++ {
				for i := range toks {
					k := (i*7 + g) % n
					id, err := a.Authenticate(context.Background(), bearer(toks[k]), nil)
					if err != nil {
						t.Error(err)
						return
					}
					if want := fmt.Sprintf("user-%d", k); id.Principal.ID != want {
						t.Errorf("token of %s authenticated as %s", want, id.Principal.ID)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
}
