package catalog

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// These tests use recording stand-ins for the catalog: they check what
// arrives upstream (or that nothing does), which no real catalog reports.
// The same classes against SeaweedFS's catalog are in e2e.

// rawRequest sends one request exactly as written (no client
// normalization) and returns the status code.
func rawRequest(t *testing.T, base, method, target string, hdr ...string) int {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	req := method + " " + target + " HTTP/1.1\r\nHost: catalog.test\r\nContent-Length: 0\r\nConnection: close\r\n"
	for i := 0; i+1 < len(hdr); i += 2 {
		req += hdr[i] + ": " + hdr[i+1] + "\r\n"
	}
	if _, err := io.WriteString(c, req+"\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return 0 // the connection closed without an answer: nothing forwarded either
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestConnectDialsOnlyTheUpstream: CONNECT @127.0.0.1:<port>/... (and
// absolute-form targets) must not reach another port on the host; the
// listener there records every connection.
func TestConnectDialsOnlyTheUpstream(t *testing.T) {
	other, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	var hits atomic.Int64
	go func() {
		for {
			c, err := other.Accept()
			if err != nil {
				return
			}
			hits.Add(1)
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}")
			c.Close()
		}
	}()
	up, got := recordingUpstream(t, http.StatusOK, `{}`, nil)
	front := serveFront(t, newFront(t, Config{Upstream: up.URL}, nil))
	port := other.Addr().(*net.TCPAddr).Port
	for _, c := range []struct{ method, target string }{
		{"CONNECT", fmt.Sprintf("@127.0.0.1:%d/v1/config", port)},
		{"CONNECT", fmt.Sprintf("@127.0.0.1:%d/debug/pprof/", port)},
		{"CONNECT", fmt.Sprintf("127.0.0.1:%d", port)},
		{"GET", fmt.Sprintf("http://127.0.0.1:%d/v1/config", port)},
		{"GET", fmt.Sprintf("@127.0.0.1:%d/v1/config", port)},
		{"OPTIONS", "*"},
	} {
		st := rawRequest(t, front, c.method, c.target)
		if st == 200 {
			t.Errorf("%s %s: 200", c.method, c.target)
		}
	}
	time.Sleep(100 * time.Millisecond)
	if n := hits.Load(); n != 0 {
		t.Fatalf("the other listener was reached %d times", n)
	}
	select {
	case s := <-got:
		t.Fatalf("forwarded: %+v", s)
	default:
	}
	// The dialer itself refuses any other address, without naming it.
	dial := upstreamDialer(mustURL(t, up.URL), time.Second)
	if _, err := dial(context.Background(), "tcp", other.Addr().String()); err == nil || strings.Contains(err.Error(), fmt.Sprint(port)) {
		t.Fatalf("dialer: %v", err)
	}
	if hits.Load() != 0 {
		t.Fatal("the dialer reached the other listener")
	}
}

// TestRefusedSpellingsNeverForwarded: every spelling routeCases refuses
// (encodings, dot and empty segments, repeated /v1, near misses of the
// sign and credentials routes) and countersign's own routes are answered
// by the front, and the upstream receives nothing.
func TestRefusedSpellingsNeverForwarded(t *testing.T) {
	up, got := recordingUpstream(t, http.StatusOK, `{}`, nil)
	front := serveFront(t, newFront(t, Config{Upstream: up.URL}, nil))
	n := 0
	for _, c := range routeCases {
		own := c.op == OpSignRequest || c.op == OpLegacySign || c.op == OpLoadCredentials
		if c.status == 0 && !own {
			continue
		}
		n++
		st := rawRequest(t, front, c.method, c.target)
		if st == 200 || (st >= 500 && st != 0) {
			t.Errorf("%s %q: %d", c.method, c.target, st)
		}
		select {
		case s := <-got:
			t.Fatalf("%s %q reached the catalog as %s %s", c.method, c.target, s.method, s.uri)
		default:
		}
	}
	t.Logf("%d refused spellings", n)
}

// TestForwardedIsTheCanonicalRoute: what the upstream receives is the
// typed route's canonical form, under the upstream's base path.
func TestForwardedIsTheCanonicalRoute(t *testing.T) {
	up, got := recordingUpstream(t, http.StatusOK, `{"identifiers":[]}`, nil)
	front := serveFront(t, newFront(t, Config{Upstream: up.URL + "/api/cat%20alog"}, nil))
	for _, c := range routeCases {
		own := c.op == OpSignRequest || c.op == OpLegacySign || c.op == OpLoadCredentials
		if c.status != 0 || own || c.op == OpCreateTable || c.op == OpRegisterTable {
			continue
		}
		rawRequest(t, front, c.method, c.target)
		select {
		case s := <-got:
			if s.method != c.method || s.uri != "/api/cat%20alog"+c.target {
				t.Errorf("%s %s arrived as %s %s", c.method, c.target, s.method, s.uri)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s %s not forwarded", c.method, c.target)
		}
	}
}

func mustURL(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := parseBase("test", s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// TestAnswersNotCacheable: every answer the front read goes out with
// Cache-Control: no-store, whatever the catalog said.
func TestAnswersNotCacheable(t *testing.T) {
	up, _ := recordingUpstream(t, http.StatusOK, upstreamTable, map[string]string{"Cache-Control": "public, max-age=3600", "Expires": "Thu, 01 Dec 2099 16:00:00 GMT", "Content-Type": "application/json"})
	front := serveFront(t, newFront(t, Config{Upstream: up.URL}, nil))
	for _, p := range []string{"/v1/namespaces/db/tables/t", "/v1/namespaces/db/views/v", "/v1/config"} {
		resp, err := http.Get(front + p)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 || resp.Header.Get("Cache-Control") != "no-store" || resp.Header.Get("Expires") != "" {
			t.Fatalf("%s: %d %v", p, resp.StatusCode, resp.Header)
		}
	}
}

// TestForwardingHeaders: the client's forwarding headers never reach the
// catalog; X-Forwarded-For is the peer countersign saw. The signer URI in
// a table answer never comes from the caller's Host.
func TestForwardingHeaders(t *testing.T) {
	up, got := recordingUpstream(t, http.StatusOK, upstreamTable, nil)
	front := serveFront(t, newFront(t, Config{Upstream: up.URL}, nil))
	req, _ := http.NewRequest("GET", front+"/v1/namespaces/db/tables/t", nil)
	req.Host = "evil.example"
	for k, v := range map[string]string{"X-Forwarded-For": "6.6.6.6", "X-Forwarded-Host": "evil.example", "X-Forwarded-Proto": "https",
		"Forwarded": "for=6.6.6.6;host=evil.example", "X-Real-IP": "6.6.6.6", "X-Keep": "yes"} {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var a map[string]any
	json.NewDecoder(resp.Body).Decode(&a)
	resp.Body.Close()
	s := <-got
	for _, h := range []string{"X-Forwarded-Host", "X-Forwarded-Proto", "Forwarded", "X-Real-Ip"} {
		if v := s.header.Values(h); len(v) != 0 {
			t.Errorf("%s forwarded: %v", h, v)
		}
	}
	if v := s.header.Values("X-Forwarded-For"); len(v) != 1 || v[0] != "127.0.0.1" {
		t.Errorf("X-Forwarded-For %v", v)
	}
	if s.header.Get("X-Keep") != "yes" {
		t.Error("other headers not forwarded")
	}
	cfg, _ := a["config"].(map[string]any)
	if cfg["s3.signer.uri"] != front {
		t.Fatalf("s3.signer.uri %v, want the listener's address %s", cfg["s3.signer.uri"], front)
	}
}

// TestAnswerBudget: answers being read share one budget; one that finds
// it spent is 503 with Retry-After, not another allocation.
func TestAnswerBudget(t *testing.T) {
	release := make(chan struct{})
	var started atomic.Int64
	big := strings.Repeat("a", 150<<10)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"x":"`+big)
		w.(http.Flusher).Flush()
		if strings.HasSuffix(r.URL.Path, "/v") {
			started.Add(1)
			<-release
		}
		io.WriteString(w, `"}`)
	}))
	defer up.Close()
	front := serveFront(t, newFront(t, Config{Upstream: up.URL, MaxResponseBytes: 256 << 10, AnswerBudgetBytes: 320 << 10}, nil))
	first := make(chan int, 1)
	go func() {
		resp, err := http.Get(front + "/v1/namespaces/db/views/v")
		if err != nil {
			first <- 0
			return
		}
		resp.Body.Close()
		first <- resp.StatusCode
	}()
	for started.Load() == 0 {
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond) // the first answer's 150 KiB are read
	cl := &http.Client{Timeout: 5 * time.Second}
	resp, err := cl.Get(front + "/v1/namespaces/db/views/w")
	if err != nil {
		t.Fatalf("second answer: %v (it waited instead of being refused)", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("second answer: %d %v", resp.StatusCode, resp.Header)
	}
	close(release)
	if st := <-first; st != 200 {
		t.Fatalf("first answer: %d", st)
	}
	// The budget is back: a third answer is read.
	resp, err = cl.Get(front + "/v1/namespaces/db/views/w")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("after release: %v %v", resp, err)
	}
	resp.Body.Close()
}

// TestReroutingHeadersRefused: a method-override or original-URL header
// would let a catalog behind a framework that honours it execute another
// route than the one the front parsed (a HEAD tableExists streamed as
// such, executed as dropTable); refused before anything is forwarded.
func TestReroutingHeadersRefused(t *testing.T) {
	up, got := recordingUpstream(t, http.StatusOK, `{"identifiers":[]}`, nil)
	front := serveFront(t, newFront(t, Config{Upstream: up.URL}, nil))
	for _, h := range [][2]string{
		{"X-HTTP-Method-Override", "DELETE"}, {"x-http-method-override", "POST"}, {"X-HTTP-Method", "DELETE"},
		{"X-Method-Override", "DELETE"}, {"X-Original-URL", "/v1/namespaces/db/tables/secret"},
		{"X-Rewrite-URL", "/v1/namespaces/db/tables/secret"}, {"X-Original-Method", "DELETE"},
		{"X-HTTP-Method-Override", ""}, {"X_HTTP_Method_Override", "DELETE"}, {"x_original_url", "/v1/namespaces/db/tables/secret"},
	} {
		if st := rawRequest(t, front, "GET", "/v1/namespaces/db/tables", h[0], h[1]); st != http.StatusBadRequest {
			t.Errorf("%s: %q: %d", h[0], h[1], st)
		}
		select {
		case s := <-got:
			t.Fatalf("%s reached the catalog: %s %s %v", h[0], s.method, s.uri, s.header)
		default:
		}
	}
	if st := rawRequest(t, front, "GET", "/v1/namespaces/db/tables", "X-Method", "x"); st != http.StatusOK {
		t.Fatalf("other header: %d", st)
	}
	<-got
}
