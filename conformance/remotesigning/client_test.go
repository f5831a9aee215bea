package remotesigning

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	smithyhttp "github.com/aws/smithy-go/transport/http"
)

func TestFromProperties(t *testing.T) {
	for _, tc := range []struct {
		props    map[string]string
		endpoint string
	}{
		{map[string]string{"uri": "http://cat/", "token": "t"}, "http://cat/v1/aws/s3/sign"},
		{map[string]string{"uri": "http://cat", "signer.uri": "http://s:1/base/", "signer.endpoint": "/v1/p/namespaces/db/tables/t/sign"}, "http://s:1/base/v1/p/namespaces/db/tables/t/sign"},
		// 1.11 reads the deprecated s3.* names first.
		{map[string]string{"signer.uri": "http://new", "s3.signer.uri": "http://old", "s3.signer.endpoint": "x/sign", "signer.endpoint": "y/sign"}, "http://old/x/sign"},
		{map[string]string{"uri": "http://cat", "s3.signer.endpoint": "https://elsewhere/sign"}, "https://elsewhere/sign"},
	} {
		cfg, err := FromProperties(tc.props)
		if err != nil {
			t.Fatal(err)
		}
		c, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if c.Endpoint() != tc.endpoint {
			t.Fatalf("%v: endpoint %s, want %s", tc.props, c.Endpoint(), tc.endpoint)
		}
	}
	if _, err := FromProperties(map[string]string{"token": "t"}); err == nil {
		t.Fatal("no signer URI accepted")
	}
	cfg, _ := FromProperties(map[string]string{"uri": "http://x", "header.X-Tenant": "a", "rest.client.max-retries": "2"})
	if cfg.Headers["X-Tenant"] != "a" || cfg.MaxRetries != 2 {
		t.Fatalf("header.* or max retries not read: %+v", cfg)
	}
}

// fakeSigner answers every sign request with the client's headers changed
// and extra ones, and the given Cache-Control.
func fakeSigner(t *testing.T, cacheControl string, calls *atomic.Int32, seen chan<- Request) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		var req Request
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			t.Error(err)
		}
		if r.Header.Get("Authorization") != "Bearer tok" {
			t.Errorf("Authorization %q", r.Header.Get("Authorization"))
		}
		if seen != nil {
			seen <- req
		}
		h := map[string][]string{"Authorization": {"AWS4-HMAC-SHA256 sig"}, "X-Amz-Date": {"20260101T000000Z"}, "Cache-Control": {"max-age=1"}}
		for k := range req.Headers {
			h[k] = []string{"changed-by-signer"}
		}
		w.Header().Set("Cache-Control", cacheControl)
		json.NewEncoder(w).Encode(Result{URI: req.URI, Headers: h})
	}))
	t.Cleanup(srv.Close)
	return srv
}

func smithyRequest(t *testing.T, method, rawURL string, body string) *smithyhttp.Request {
	t.Helper()
	r := smithyhttp.NewStackRequest().(*smithyhttp.Request)
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	r.Method, r.URL = method, u
	r.Header.Set("User-Agent", "sdk")
	r.Header.Set("Amz-Sdk-Invocation-Id", "1")
	if body != "" {
		r, err = r.SetStream(strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		r.ContentLength = int64(len(body))
	}
	return r
}

// TestApplyClientWins: the client's headers are restored over the
// returned ones, Cache-Control is dropped, the returned signature headers
// are added; the body goes out only for POST ?delete.
func TestApplyClientWins(t *testing.T) {
	var calls atomic.Int32
	seen := make(chan Request, 4)
	srv := fakeSigner(t, "no-cache", &calls, seen)
	c, err := New(Config{SignerURI: srv.URL, Token: func() string { return "tok" }, Cache: NewCache()})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		method, uri, body string
		wantBody          bool
	}{
		{"PUT", "http://s3.test/b/k?x-id=PutObject", "data", false},
		{"POST", "http://s3.test/b?delete", "<Delete/>", true},
		{"GET", "http://s3.test/b/k", "", false},
	} {
		req := smithyRequest(t, tc.method, tc.uri, tc.body)
		sr, err := describe(req, "us-east-1")
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := sr.Headers["Host"]; ok {
			t.Fatal("Host sent")
		}
		res, err := c.Sign(context.Background(), sr)
		if err != nil {
			t.Fatal(err)
		}
		got := <-seen
		if (got.Body != nil) != tc.wantBody || tc.wantBody && *got.Body != tc.body {
			t.Fatalf("%s %s: body %v", tc.method, tc.uri, got.Body)
		}
		if err := apply(req, sr.Headers, res); err != nil {
			t.Fatal(err)
		}
		if req.Header.Get("User-Agent") != "sdk" || req.Header.Get("Amz-Sdk-Invocation-Id") != "1" {
			t.Fatalf("client headers not restored: %v", req.Header)
		}
		if req.Header.Get("Authorization") == "" || req.Header.Get("X-Amz-Date") == "" || req.Header.Get("Cache-Control") != "" {
			t.Fatalf("signed headers: %v", req.Header)
		}
		if n := len(Conflicts(Exchange{Request: sr, Result: res})); n == 0 {
			t.Fatal("Conflicts does not see changed client headers")
		}
	}
}

// TestCachePrivateOnly: only "Cache-Control: private" answers are reused,
// keyed by (method, region, uri) and shared by clients with one cache.
func TestCachePrivateOnly(t *testing.T) {
	for _, tc := range []struct {
		cc    string
		calls int32
	}{{"private", 1}, {"no-cache", 3}, {"private, max-age=30", 3}} {
		var calls atomic.Int32
		srv := fakeSigner(t, tc.cc, &calls, nil)
		cache := NewCache()
		a, _ := New(Config{SignerURI: srv.URL, Token: func() string { return "tok" }, Cache: cache})
		b, _ := New(Config{SignerURI: srv.URL, Token: func() string { return "tok" }, Cache: cache})
		r := Request{Method: "GET", Region: "us-east-1", URI: "http://s3.test/b/k", Headers: map[string][]string{"Range": {"bytes=0-1"}}}
		for _, c := range []*Client{a, b, a} {
			if _, err := c.Sign(context.Background(), r); err != nil {
				t.Fatal(err)
			}
		}
		if calls.Load() != tc.calls {
			t.Fatalf("Cache-Control %q: %d sign requests, want %d", tc.cc, calls.Load(), tc.calls)
		}
	}
	cache := NewCache()
	now := time.Now()
	cache.now = func() time.Time { return now }
	k := cacheKey{"GET", "us-east-1", "u"}
	cache.put(k, &Result{URI: "u"})
	now = now.Add(29 * time.Second)
	if _, ok := cache.get(k); !ok {
		t.Fatal("expired before 30 s")
	}
	now = now.Add(time.Second)
	if _, ok := cache.get(k); ok {
		t.Fatal("alive after 30 s")
	}
	for i := 0; i < 150; i++ {
		cache.put(cacheKey{"GET", "r", strings.Repeat("x", i)}, &Result{})
	}
	if cache.Len() != 100 {
		t.Fatalf("%d entries, want at most 100", cache.Len())
	}
}

func TestRetryInterval(t *testing.T) {
	if d := retryInterval("3", 1); d != 3*time.Second {
		t.Fatalf("Retry-After 3: %v", d)
	}
	if d := retryInterval("", 3); d < 4*time.Second || d > 4400*time.Millisecond {
		t.Fatalf("third attempt backoff %v, want 4 s + jitter", d)
	}
	if d := retryInterval("0", 1); d < time.Second {
		t.Fatalf("Retry-After 0 falls back to backoff, got %v", d)
	}
}

func TestFromPropertiesMain(t *testing.T) {
	cfg, err := FromPropertiesMain(map[string]string{
		"uri": "http://catalog", "token": "tok", "header.X-Tenant": "a",
		"s3.signer.uri": "http://removed", "s3.signer.endpoint": "v1/aws/s3/sign",
		PropRemoteSigningEndpoint: "v1/p/namespaces/db/tables/t/sign",
		PropRemoteSigningConfig:   `{"properties":{"k":"v"},"headers":{"X-Sign":["1","2"]}}`,
	})
	if err != nil {
		t.Fatal(err)
	}
	c, _ := New(cfg)
	if c.Endpoint() != "http://catalog/v1/p/namespaces/db/tables/t/sign" || cfg.Token() != "tok" ||
		cfg.Headers["X-Tenant"] != "a" || cfg.Headers["X-Sign"] != "1, 2" || cfg.Properties["k"] != "v" {
		t.Fatalf("%+v %s", cfg, c.Endpoint())
	}
	// The deprecated signer.* still win; without an endpoint there is no default.
	cfg, _ = FromPropertiesMain(map[string]string{"uri": "http://catalog", "signer.uri": "http://signer", "signer.endpoint": "sign"})
	if c, _ := New(cfg); c.Endpoint() != "http://signer/sign" {
		t.Fatal(c.Endpoint())
	}
	if _, err := FromPropertiesMain(map[string]string{"uri": "http://catalog", "s3.signer.endpoint": "v1/aws/s3/sign"}); err == nil {
		t.Fatal("no endpoint accepted")
	}
}
