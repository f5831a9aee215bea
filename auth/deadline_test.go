package auth

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"
)

// A request waiting for a JWKS refresh waits no longer than its own
// context: when the identity provider hangs (a stand-in that accepts the
// fetch and never answers; no real provider hangs on purpose), the request
// gets keys_unavailable, retryable, at its deadline. The fetch goes on for
// the requests after it: they join it rather than start another.
func TestHungJWKSRefreshEndsAtTheCallersDeadline(t *testing.T) {
	var hang atomic.Bool
	var fetches atomic.Int64
	stop := make(chan struct{})
	body := defaultJWKS()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fetches.Add(1)
		if hang.Load() {
			<-stop
			return
		}
		w.Write(body)
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(stop) }) // first: Close waits for the handler
	c := newClock(t0)
	a := newAuth(t, jwksConfig(srv.URL), c)
	newKid := bearer(mint(hdr("EdDSA", "ed-new"), claimsAt(c.Now()), eddsa(testEd())))

	hang.Store(true)
	c.Advance(time.Minute) // past the unknown-kid refresh limit
	const deadline = 300 * time.Millisecond
	for i := range 2 {
		start := time.Now() // before the deadline is set, so that elapsed is never short of it
		ctx, cancel := context.WithTimeout(context.Background(), deadline)
		_, err := a.Authenticate(ctx, newKid, nil)
		elapsed := time.Since(start)
		cancel()
		var e *Error
		if !errors.As(err, &e) || e.Reason != ReasonKeysUnavailable || !e.Retryable() {
			t.Fatalf("request %d: got %v, want keys_unavailable", i, err)
		}
		if elapsed < deadline || elapsed > 5*deadline {
			t.Fatalf("request %d: answered after %s, want about the deadline of %s", i, elapsed, deadline)
		}
	}
	if n := fetches.Load(); n != 2 {
		t.Fatalf("%d fetches, want 2 (the first load, then one refresh both requests waited for)", n)
	}
}
