package catalog

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/countersign/countersign/auth"
)

// A catalog stand-in whose loadTable answers per token: "Bearer ann" may
// load db.t, anyone else is refused; down makes it answer 503.
func tableCatalog(t *testing.T) (*httptest.Server, *atomic.Int64, *atomic.Bool) {
	var hits atomic.Int64
	var down atomic.Bool
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		switch {
		case down.Load():
			w.WriteHeader(http.StatusServiceUnavailable)
		case r.Header.Get("Authorization") != "Bearer ann":
			w.WriteHeader(http.StatusForbidden)
			io.WriteString(w, `{"error":{"message":"not allowed to load db.t","type":"ForbiddenException","code":403}}`)
		case r.URL.Path == "/v1/namespaces/db/tables/t":
			io.WriteString(w, `{"metadata":{"location":"s3://lake/wh/db/t"},"config":{}}`)
		default:
			w.WriteHeader(http.StatusNotFound)
		}
	}))
	t.Cleanup(up.Close)
	return up, &hits, &down
}

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

func TestLocations(t *testing.T) {
	up, hits, down := tableCatalog(t)
	clk := &clock{t: time.Unix(1e9, 0)}
	f, err := newTestFront(Options{Config: Config{Upstream: up.URL, LocationTTL: time.Minute, LocationStaleGrace: time.Minute}, Now: clk.now})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	const table = "/v1/namespaces/db/tables/t"
	ann, _ := auth.TokenHash([]byte("Bearer ann"))
	eve, _ := auth.TokenHash([]byte("Bearer eve"))

	// Unknown: fetched with the caller's token.
	loc, err := f.Locate(ctxT(t), ann, []byte("Bearer ann"), table)
	if err != nil || loc != "s3://lake/wh/db/t" || hits.Load() != 1 {
		t.Fatalf("%q %v hits=%d", loc, err, hits.Load())
	}
	// Known and fresh: no request to the catalog.
	for range 100 {
		if loc, err := f.Locate(ctxT(t), ann, []byte("Bearer ann"), table); err != nil || loc != "s3://lake/wh/db/t" {
			t.Fatal(loc, err)
		}
	}
	if hits.Load() != 1 {
		t.Fatalf("a known table was fetched again: %d", hits.Load())
	}
	// Another caller does not inherit ann's entry: the catalog refuses eve.
	_, err = f.Locate(ctxT(t), eve, []byte("Bearer eve"), table)
	var re *RefusedError
	if !errors.As(err, &re) || re.Status != 403 || re.Message != "not allowed to load db.t" {
		t.Fatalf("eve: %v", err)
	}
	// Stale: fetched again.
	clk.add(61 * time.Second)
	if _, err := f.Locate(ctxT(t), ann, []byte("Bearer ann"), table); err != nil || hits.Load() != 3 {
		t.Fatalf("stale entry not refreshed: %v hits=%d", err, hits.Load())
	}
	// The catalog is down: a stale entry serves within the grace...
	down.Store(true)
	clk.add(90 * time.Second)
	if loc, err := f.Locate(ctxT(t), ann, []byte("Bearer ann"), table); err != nil || loc != "s3://lake/wh/db/t" {
		t.Fatalf("within the grace: %q %v", loc, err)
	}
	// ...and not beyond it.
	clk.add(60 * time.Second)
	_, err = f.Locate(ctxT(t), ann, []byte("Bearer ann"), table)
	var ue *UnavailableError
	if !errors.As(err, &ue) || !ue.Retryable() {
		t.Fatalf("beyond the grace: %v", err)
	}
}

func TestLocationLearnedFromTheCatalogsAnswers(t *testing.T) {
	up, hits, _ := tableCatalog(t)
	f := newFront(t, Config{Upstream: up.URL}, nil)
	front := serveFront(t, f)
	req, _ := http.NewRequest("GET", front+"/v1/namespaces/db/tables/t", nil)
	req.Header.Set("Authorization", "Bearer ann")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	ann, _ := auth.TokenHash([]byte("Bearer  ann ")) // as Authenticate reads it
	loc, err := f.Locate(ctxT(t), ann, nil, "/v1/namespaces/db/tables/t")
	if err != nil || loc != "s3://lake/wh/db/t" || hits.Load() != 1 {
		t.Fatalf("not learned from loadTable: %q %v hits=%d", loc, err, hits.Load())
	}
	// A refused loadTable teaches nothing.
	eve, _ := auth.TokenHash([]byte("Bearer eve"))
	req.Header.Set("Authorization", "Bearer eve")
	resp, _ = http.DefaultClient.Do(req)
	resp.Body.Close()
	if _, err := f.Locate(ctxT(t), eve, []byte("Bearer eve"), "/v1/namespaces/db/tables/t"); err == nil {
		t.Fatal("eve located a table the catalog refused her")
	}
}

func TestNamespaceSeparatorFromConfig(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"defaults":{"namespace-separator":"%1F"},"overrides":{"namespace-separator":"%2E","s3.access-key-id":"x"}}`)
	}))
	defer up.Close()
	f := newFront(t, Config{Upstream: up.URL}, nil)
	if f.NamespaceSeparator() != "\x1f" {
		t.Fatalf("default %q", f.NamespaceSeparator())
	}
	if err := f.Refresh(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	if f.NamespaceSeparator() != "." {
		t.Fatalf("separator %q", f.NamespaceSeparator())
	}
	tb, ok := f.parseTable("/v1/prod/namespaces/a.b/tables/t")
	if !ok || tb.Prefix != "prod" || len(tb.Namespace) != 2 || tb.Namespace[1] != "b" || tb.Name != "t" {
		t.Fatalf("%+v", tb)
	}
	// A client's own /v1/config through the front teaches nothing: one
	// naming the separator in use passes (without its credential), one
	// naming another is refused.
	for _, c := range []struct {
		answer string
		status int
	}{
		{`{"defaults":{},"overrides":{"namespace-separator":"%1F","s3.secret-access-key":"x"}}`, http.StatusOK},
		{`{"defaults":{},"overrides":{"namespace-separator":"%3A","s3.secret-access-key":"x"}}`, http.StatusBadGateway},
	} {
		up2 := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.WriteString(w, c.answer)
		}))
		f2 := newFront(t, Config{Upstream: up2.URL}, nil)
		resp, err := http.Get(serveFront(t, f2) + "/v1/config?warehouse=w")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		up2.Close()
		if f2.NamespaceSeparator() != "\x1f" || resp.StatusCode != c.status || strings.Contains(string(b), "secret") {
			t.Fatalf("%s: separator %q, %d %s", c.answer, f2.NamespaceSeparator(), resp.StatusCode, b)
		}
		if c.status != http.StatusOK && !strings.Contains(string(b), "catalog.namespace_separator") {
			t.Fatalf("the refusal does not name the key to set: %s", b)
		}
	}
	// Configured, the separator is used as given and Refresh asks nothing.
	asked := false
	up3 := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked = true
		io.WriteString(w, `{"defaults":{},"overrides":{"namespace-separator":"%3A"}}`)
	}))
	defer up3.Close()
	f3 := newFront(t, Config{Upstream: up3.URL, NamespaceSeparator: "%2E"}, nil)
	if err := f3.Refresh(ctxT(t)); err != nil || asked || f3.NamespaceSeparator() != "." {
		t.Fatalf("configured separator: %v asked=%v %q", err, asked, f3.NamespaceSeparator())
	}
}
