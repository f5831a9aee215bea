package catalog

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// The upstream in these tests is a recording stand-in: they check what
// arrives at the catalog (method, path, query, body, headers), which no
// real catalog reports. The front against a real catalog (SeaweedFS's) is
// in e2e/catalog_test.go.

type seen struct {
	method, uri, host string
	header            http.Header
	body              string
}

func recordingUpstream(t *testing.T, status int, answer string, hdr map[string]string) (*httptest.Server, chan seen) {
	ch := make(chan seen, 16)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		ch <- seen{r.Method, r.RequestURI, r.Host, r.Header.Clone(), string(b)}
		for k, v := range hdr {
			w.Header().Set(k, v)
		}
		w.WriteHeader(status)
		io.WriteString(w, answer)
	}))
	t.Cleanup(up.Close)
	return up, ch
}

func TestForwardsRequestAndAnswerUnchanged(t *testing.T) {
	errBody := `{"error":{"message":"Namespace already exists: db","type":"AlreadyExistsException","code":409}}`
	up, got := recordingUpstream(t, http.StatusConflict, errBody, map[string]string{"Content-Type": "application/json", "X-Catalog": "polaris"})
	front := serveFront(t, newFront(t, Config{Upstream: up.URL + "/api/catalog"}, nil))

	body := `{"namespace":["db"],"properties":{"owner":"ann"}}`
	req, _ := http.NewRequest("POST", front+"/v1/prod/namespaces", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer caller-token")
	req.Header.Set("X-Iceberg-Access-Delegation", "vended-credentials")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Connection", "keep-alive")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusConflict || string(b) != errBody || resp.Header.Get("X-Catalog") != "polaris" {
		t.Fatalf("answer changed: %d %q %v", resp.StatusCode, b, resp.Header)
	}
	s := <-got
	if s.method != "POST" || s.uri != "/api/catalog/v1/prod/namespaces" || s.body != body {
		t.Fatalf("forwarded %s %s %q", s.method, s.uri, s.body)
	}
	if s.header.Get("Authorization") != "Bearer caller-token" || s.header.Get("X-Iceberg-Access-Delegation") != "vended-credentials" ||
		s.header.Get("Content-Type") != "application/json" {
		t.Fatalf("headers not forwarded: %v", s.header)
	}
	if s.header.Get("Connection") != "" && !strings.EqualFold(s.header.Get("Connection"), "close") {
		t.Fatalf("hop-by-hop header forwarded: %v", s.header)
	}
	if !strings.HasPrefix(up.URL, "http://"+s.host) {
		t.Fatalf("Host %q is not the upstream's", s.host)
	}
}

func TestForwardsTokenRoute(t *testing.T) {
	tok := `{"access_token":"abc","token_type":"bearer","expires_in":3600}`
	up, got := recordingUpstream(t, http.StatusOK, tok, map[string]string{"Content-Type": "application/json", "Cache-Control": "no-store"})
	front := serveFront(t, newFront(t, Config{Upstream: up.URL}, nil))
	resp, err := http.Post(front+"/v1/oauth/tokens", "application/x-www-form-urlencoded",
		strings.NewReader("grant_type=client_credentials&client_id=a&client_secret=b&scope=catalog"))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	s := <-got
	if string(b) != tok || resp.Header.Get("Cache-Control") != "no-store" || s.uri != "/v1/oauth/tokens" ||
		s.body != "grant_type=client_credentials&client_id=a&client_secret=b&scope=catalog" {
		t.Fatalf("token route: %q %v; upstream saw %+v", b, resp.Header, s)
	}
}

func TestStreamsAnswers(t *testing.T) {
	release := make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"namespaces":[["a"]`)
		w.(http.Flusher).Flush()
		<-release
		io.WriteString(w, `,["b"]]}`)
	}))
	defer up.Close()
	defer close(release)
	front := serveFront(t, newFront(t, Config{Upstream: up.URL}, nil))
	resp, err := http.Get(front + "/v1/namespaces")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	// The first part arrives while the upstream is still writing.
	r := bufio.NewReader(resp.Body)
	buf := make([]byte, len(`{"namespaces":[["a"]`))
	done := make(chan error, 1)
	go func() { _, err := io.ReadFull(r, buf); done <- err }()
	select {
	case err := <-done:
		if err != nil || string(buf) != `{"namespaces":[["a"]` {
			t.Fatalf("%q %v", buf, err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the answer was not streamed: nothing arrived before the upstream finished")
	}
}

func TestUpstreamDownIs502(t *testing.T) {
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := ln.Addr().String()
	ln.Close() // nothing listens: connection refused
	front := serveFront(t, newFront(t, Config{Upstream: "http://" + addr}, nil))
	start := time.Now()
	resp, err := http.Get(front + "/v1/namespaces")
	if err != nil {
		t.Fatal(err)
	}
	assertErrorModel(t, resp, http.StatusBadGateway, "could not be reached")
	if time.Since(start) > 5*time.Second {
		t.Fatalf("took %s", time.Since(start))
	}
}

func TestUpstreamSlowIs504(t *testing.T) {
	// An upstream that accepts and never answers.
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	front := serveFront(t, newFront(t, Config{Upstream: "http://" + ln.Addr().String(), ResponseTimeout: 300 * time.Millisecond}, nil))
	start := time.Now()
	resp, err := http.Get(front + "/v1/namespaces/db/tables/t")
	if err != nil {
		t.Fatal(err)
	}
	assertErrorModel(t, resp, http.StatusGatewayTimeout, "did not answer in time")
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("a slow upstream held the request %s", d)
	}
}

func TestLimits(t *testing.T) {
	up, got := recordingUpstream(t, http.StatusOK, `{"metadata":{"location":"s3://b/t"},"config":{}}`, nil)
	front := serveFront(t, newFront(t, Config{Upstream: up.URL, MaxRequestBytes: 10, MaxResponseBytes: 20}, nil))
	resp, err := http.Post(front+"/v1/namespaces/db/tables/t", "application/json", strings.NewReader(strings.Repeat("x", 11)))
	if err != nil {
		t.Fatal(err)
	}
	assertErrorModel(t, resp, http.StatusRequestEntityTooLarge, "catalog.max_request_bytes")
	// A table answer too large to inspect is not passed on.
	resp, err = http.Get(front + "/v1/namespaces/db/tables/t")
	if err != nil {
		t.Fatal(err)
	}
	assertErrorModel(t, resp, http.StatusBadGateway, "catalog.max_response_bytes")
	<-got
}

func TestCredentialsRouteNotForwarded(t *testing.T) {
	up, got := recordingUpstream(t, http.StatusOK, `{"storage-credentials":[{"prefix":"s3://b/","config":{"s3.secret-access-key":"S"}}]}`, nil)
	front := serveFront(t, newFront(t, Config{Upstream: up.URL}, nil))
	resp, err := http.Get(front + "/v1/prod/namespaces/db/tables/t/credentials")
	if err != nil {
		t.Fatal(err)
	}
	assertErrorModel(t, resp, http.StatusNotFound, "does not forward loadCredentials")
	select {
	case s := <-got:
		t.Fatalf("forwarded: %+v", s)
	default:
	}
}

func assertErrorModel(t *testing.T, resp *http.Response, status int, msg string) {
	t.Helper()
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var e struct {
		Error struct {
			Message string `json:"message"`
			Type    string `json:"type"`
			Code    int    `json:"code"`
		} `json:"error"`
	}
	if resp.StatusCode != status || json.NewDecoder(bytes.NewReader(b)).Decode(&e) != nil || e.Error.Code != status ||
		e.Error.Type == "" || !strings.Contains(e.Error.Message, msg) {
		t.Fatalf("want %d in Iceberg's error model with %q, got %d %s", status, msg, resp.StatusCode, b)
	}
}

func TestEmptyAnswersPassThrough(t *testing.T) {
	up, got := recordingUpstream(t, http.StatusOK, "", nil)
	front := serveFront(t, newFront(t, Config{Upstream: up.URL}, nil))
	for _, method := range []string{"HEAD", "POST"} {
		path := "/v1/namespaces/db/tables/t/metrics"
		if method == "HEAD" {
			path = "/v1/namespaces/db/tables/t"
		}
		req, _ := http.NewRequest(method, front+path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("%s with an empty answer: %d", method, resp.StatusCode)
		}
		<-got
	}
	// An empty table answer is not a table answer: refused.
	resp, err := http.Get(front + "/v1/namespaces/db/tables/t")
	if err != nil {
		t.Fatal(err)
	}
	assertErrorModel(t, resp, http.StatusBadGateway, "cannot read the catalog's answer")
}

func TestConcurrencyLimit(t *testing.T) {
	release := make(chan struct{})
	entered := make(chan struct{}, 1)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		entered <- struct{}{}
		<-release
	}))
	defer up.Close()
	defer close(release)
	front := serveFront(t, newFront(t, Config{Upstream: up.URL, MaxConcurrency: 1}, nil))
	go http.Get(front + "/v1/namespaces")
	<-entered
	resp, err := http.Get(front + "/v1/namespaces")
	if err != nil {
		t.Fatal(err)
	}
	if resp.Header.Get("Retry-After") != "1" {
		t.Fatalf("no Retry-After: %v", resp.Header)
	}
	assertErrorModel(t, resp, http.StatusServiceUnavailable, "catalog.max_concurrency")
}
