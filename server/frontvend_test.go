package server

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/countersign/countersign/catalog"
	"github.com/countersign/countersign/signer"
	"github.com/countersign/countersign/vend"
)

// recordingVendor stands in for *vend.Service (tested in package vend and,
// against SeaweedFS's STS, in e2e): it mints for any admitted request and
// keeps what it was asked, so the admission in front of it is what is
// under test. With gate set, Mint signals entered and waits for the gate.
type recordingVendor struct {
	mu      sync.Mutex
	minted  []vend.Request
	refused []vendRefused
	entered chan struct{}
	gate    chan struct{}
}

type vendRefused struct {
	req    vend.Request
	status int
}

func (v *recordingVendor) Mint(_ context.Context, r *vend.Request) (*vend.Credentials, error) {
	if v.gate != nil {
		v.entered <- struct{}{}
		<-v.gate
	}
	v.mu.Lock()
	v.minted = append(v.minted, *r)
	v.mu.Unlock()
	return &vend.Credentials{Location: "s3://lake/wh/db/t/", Bucket: "lake", Prefix: "wh/db/t/", Access: vend.ReadWrite,
		AccessKeyID: "ASIAVENDED", SecretAccessKey: "s", SessionToken: "tok", Expires: time.Now().Add(time.Hour)}, nil
}

func (v *recordingVendor) Refused(_ context.Context, r *vend.Request, status int, _ string) error {
	v.mu.Lock()
	v.refused = append(v.refused, vendRefused{*r, status})
	v.mu.Unlock()
	return nil
}

func (v *recordingVendor) counts() (minted int, refused map[int]int) {
	v.mu.Lock()
	defer v.mu.Unlock()
	refused = map[int]int{}
	for _, r := range v.refused {
		refused[r.status]++
	}
	return len(v.minted), refused
}

// tableCatalog stands in for an Iceberg REST catalog that accepts any
// token: loadTable answers db.t at s3://lake/wh/db/t, other routes 401
// at once, without reading the body (what a catalog does to a caller
// without a token), and the table's location for the credentials route.
func tableCatalog(t *testing.T) *httptest.Server {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.Method == "GET" && strings.HasSuffix(r.URL.Path, "/namespaces/db/tables/t") {
			io.WriteString(w, `{"metadata-location":"s3://lake/wh/db/t/metadata/1.json","metadata":{"format-version":2,"location":"s3://lake/wh/db/t","schemas":[]},"config":{}}`)
			return
		}
		w.WriteHeader(http.StatusUnauthorized)
		io.WriteString(w, `{"error":{"message":"no token","type":"NotAuthorizedException","code":401}}`)
	}))
	t.Cleanup(up.Close)
	return up
}

// frontServer is countersign with a real catalog front before up and
// vendor minting, served on a loopback socket with streamed bodies, as
// cmd/countersign wires it.
func frontServer(t *testing.T, up string, vendor Vendor, opts Options, cfg Config) string {
	t.Helper()
	front, err := catalog.New(catalog.Options{Config: catalog.Config{Upstream: up}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(front.Close)
	opts.Catalog, opts.Tables = front, front
	h, err := NewHandler(Stages{Authenticator: testAuthenticator(t), Classifier: testClassifier(t, true), Authorizer: testEngine(t, testPolicy),
		Signer: signer.New(credentials.NewStaticCredentialsProvider("AKTEST", "secret", ""), signer.Options{}), Audit: openTestAudit(t), Vendor: vendor}, opts, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg.StreamBodies = true
	return serveTCP(t, New(h, cfg))
}

// vendCall asks for credentials on the credentials route ("credentials")
// or in a loadTable answer ("loadTable") and reports whether any came.
func vendCall(t *testing.T, addr, route, token, requestID string) (status int, vended bool, rid string) {
	t.Helper()
	path := "/v1/namespaces/db/tables/t"
	if route == "credentials" {
		path += "/credentials"
	}
	req, _ := http.NewRequest("GET", "http://"+addr+path, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("X-Iceberg-Access-Delegation", "vended-credentials")
	if requestID != "" {
		req.Header.Set("X-Request-Id", requestID)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		StorageCredentials []any `json:"storage-credentials"`
	}
	b, _ := io.ReadAll(resp.Body)
	json.Unmarshal(b, &body)
	return resp.StatusCode, len(body.StorageCredentials) > 0, resp.Header.Get("X-Request-Id")
}

// Both entry points of a mint share one admission: under a rate limit of
// one request per principal, five concurrent requests mint once on the
// credentials route and once through loadTable, the rest refused 429 and
// recorded; with one request slot held by a mint, the others are refused
// 503 and recorded on both routes alike.
func TestLoadTableVendingIsAdmittedLikeTheCredentialsRoute(t *testing.T) {
	up := tableCatalog(t)
	t.Run("rate limit", func(t *testing.T) {
		for _, route := range []string{"credentials", "loadTable"} {
			vendor := &recordingVendor{}
			addr := frontServer(t, up.URL, vendor, Options{RateLimit: RateLimit{PerSecond: 0.001, Burst: 1}}, Config{})
			tok := mintToken("bob", time.Now().Add(time.Hour), "etl")
			var wg sync.WaitGroup
			var mu sync.Mutex
			vended := 0
			for range 5 {
				wg.Go(func() {
					if _, ok, _ := vendCall(t, addr, route, tok, ""); ok {
						mu.Lock()
						vended++
						mu.Unlock()
					}
				})
			}
			wg.Wait()
			minted, refused := vendor.counts()
			if minted != 1 || vended != 1 || refused[http.StatusTooManyRequests] != 4 || len(refused) != 1 {
				t.Errorf("%s: %d minted, %d answers with credentials, refusals recorded %v; want 1, 1 and 4 × 429", route, minted, vended, refused)
			}
		}
	})
	t.Run("request slot", func(t *testing.T) {
		for _, route := range []string{"credentials", "loadTable"} {
			vendor := &recordingVendor{entered: make(chan struct{}, 5), gate: make(chan struct{})}
			addr := frontServer(t, up.URL, vendor, Options{}, Config{MaxConcurrency: 1})
			tok := mintToken("bob", time.Now().Add(time.Hour), "etl")
			first := make(chan bool)
			go func() { _, ok, _ := vendCall(t, addr, route, tok, ""); first <- ok }()
			<-vendor.entered // the first mint holds the only slot
			var wg sync.WaitGroup
			for i := range 4 {
				wg.Go(func() {
					done := make(chan bool, 1)
					go func() { _, ok, _ := vendCall(t, addr, route, tok, ""); done <- ok }()
					select {
					case ok := <-done:
						if ok {
							t.Errorf("%s: request %d had credentials while the only request slot was taken", route, i+2)
						}
					case <-time.After(3 * time.Second):
						t.Errorf("%s: request %d waits for a mint instead of being refused while the only request slot is taken", route, i+2)
					}
				})
			}
			wg.Wait()
			close(vendor.gate)
			if !<-first {
				t.Errorf("%s: the admitted request has no credentials", route)
			}
			minted, refused := vendor.counts()
			if minted != 1 || refused[http.StatusServiceUnavailable] != 4 || len(refused) != 1 {
				t.Errorf("%s: %d minted, refusals recorded %v; want 1 and 4 × 503", route, minted, refused)
			}
		}
	})
}

// A mint through loadTable is recorded with the caller's source address
// and request id, which its answer carries, as the credentials route's.
func TestLoadTableMintRecordsSourceAndRequestID(t *testing.T) {
	vendor := &recordingVendor{}
	addr := frontServer(t, tableCatalog(t).URL, vendor, Options{}, Config{})
	status, ok, rid := vendCall(t, addr, "loadTable", mintToken("bob", time.Now().Add(time.Hour), "etl"), "load-7")
	if status != 200 || !ok || rid != "load-7" {
		t.Fatalf("loadTable: %d, credentials %v, X-Request-Id %q", status, ok, rid)
	}
	if len(vendor.minted) != 1 {
		t.Fatalf("%d mints", len(vendor.minted))
	}
	m := vendor.minted[0]
	if m.SourceIP != "127.0.0.1" || m.RequestID != "load-7" || m.Identity == nil || m.Identity.Principal.ID != "bob" {
		t.Fatalf("mint recorded with source %q, request id %q, identity %+v", m.SourceIP, m.RequestID, m.Identity)
	}
	// Without a client id, one is made, recorded and answered.
	if _, _, rid := vendCall(t, addr, "loadTable", mintToken("bob", time.Now().Add(time.Hour), "etl"), ""); rid == "" || vendor.minted[1].RequestID != rid {
		t.Fatalf("answer's request id %q, recorded %q", rid, vendor.minted[1].RequestID)
	}
	// A loadTable that asks for no credentials is no mint: no id is added.
	req, _ := http.NewRequest("GET", "http://"+addr+"/v1/namespaces/db/tables/t", nil)
	req.Header.Set("Authorization", "Bearer x")
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.Header.Get("X-Request-Id") != "" {
		t.Fatalf("plain loadTable: %v %v", err, resp.Header)
	}
}

// A token the catalog accepts and countersign does not (expired, another
// signer) gets no credentials through loadTable, and the refusal is
// recorded as on the credentials route: 401, no identity.
func TestLoadTableRejectedTokenIsRecorded(t *testing.T) {
	for _, route := range []string{"credentials", "loadTable"} {
		vendor := &recordingVendor{}
		addr := frontServer(t, tableCatalog(t).URL, vendor, Options{}, Config{})
		expired := mintToken("bob", time.Now().Add(-time.Hour), "etl")
		if _, ok, _ := vendCall(t, addr, route, expired, "bad-tok"); ok {
			t.Fatalf("%s: credentials for an expired token", route)
		}
		minted, refused := vendor.counts()
		if minted != 0 || refused[http.StatusUnauthorized] != 1 || len(refused) != 1 {
			t.Fatalf("%s: %d minted, refusals recorded %v; want one 401", route, minted, refused)
		}
		r := vendor.refused[0].req
		if r.Identity != nil || r.RequestID != "bad-tok" || r.SourceIP != "127.0.0.1" || r.Table == nil || r.Table.Name != "t" {
			t.Fatalf("%s: refusal recorded as %+v", route, r)
		}
	}
}

// With the catalog front on, no request body is read whole before its
// route is known: the listener reads at most the sign routes' limit
// (limits.max_body_bytes) of any body; a sign or credentials route refuses
// a larger one (413) from its headers; a forwarded catalog route streams
// its body to the catalog, which may answer before it is sent; and the
// routes whose body the front reads are refused beyond
// catalog.max_request_bytes from the headers. Each answer arrives while
// the client has sent only the first 64 KiB of a 16 MiB body.
func TestBodiesAreNotReadBeforeTheirRoute(t *testing.T) {
	up := tableCatalog(t)
	s := func() string {
		return frontServer(t, up.URL, &recordingVendor{}, Options{RefusalLimit: RefusalLimit{PerSecond: 1e6, Burst: 1e6}}, Config{})
	}()
	for _, tc := range []struct {
		path   string
		length int
		want   int
	}{
		{"/v1/aws/s3/sign", 16 << 20, http.StatusRequestEntityTooLarge},
		{"/v1/namespaces/db/tables/t/sign", 16 << 20, http.StatusRequestEntityTooLarge},
		{"/api/2.1/unity-catalog/temporary-path-credentials", 16 << 20, http.StatusRequestEntityTooLarge},
		{"/v1/namespaces", 16 << 20, http.StatusUnauthorized},                      // streamed: the catalog's answer
		{"/v1/namespaces/db/tables", 16<<20 + 1, http.StatusRequestEntityTooLarge}, // createTable, over catalog.max_request_bytes
		{"/v1/nowhere", 16 << 20, http.StatusNotFound},                             // no such route: refused from its request line
	} {
		status, err := answerBeforeBody(s, "POST", tc.path, tc.length)
		if err != nil || status != tc.want {
			t.Errorf("POST %s with Content-Length %d, 64 KiB sent: status %d, %v; want %d before the body", tc.path, tc.length, status, err, tc.want)
		}
	}
}

// answerBeforeBody sends a request's headers declaring length bytes of
// body and its first 64 KiB, and reads the answer without sending more.
func answerBeforeBody(addr, method, path string, length int) (int, error) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	fmt.Fprintf(c, "%s %s HTTP/1.1\r\nHost: cs\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", method, path, length, strings.Repeat("x", 64<<10))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

// The listener itself holds no more than the sign routes' limit of a body
// with the front on; streaming replaces the catalog's larger limit.
func TestFrontListenerBodyLimit(t *testing.T) {
	s := newTestServer(t, testPolicy, nil, Options{})
	withFront := New(s.handler, Config{StreamBodies: true})
	for _, srv := range []*Server{s, withFront} {
		if got, want := srv.fast.MaxRequestBodySize, srv.cfg.MaxBodyBytes; got != want {
			t.Errorf("listener body limit %d, want the sign routes' %d", got, want)
		}
	}
	if !withFront.fast.StreamRequestBody || s.fast.StreamRequestBody {
		t.Error("bodies are streamed exactly when the front is on")
	}
	// A chunked sign body over the limit is refused as one with a length.
	addr := serveTCP(t, withFront)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	chunk := strings.Repeat("x", 64<<10)
	go func() {
		fmt.Fprintf(c, "POST /v1/aws/s3/sign HTTP/1.1\r\nHost: cs\r\nTransfer-Encoding: chunked\r\n\r\n")
		for range 20 {
			if _, err := fmt.Fprintf(c, "%x\r\n%s\r\n", len(chunk), chunk); err != nil {
				return
			}
		}
		fmt.Fprintf(c, "0\r\n\r\n")
	}()
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil || resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("chunked 1.25 MiB sign body: %v %v", resp, err)
	}
	// Within the limit, chunked or not, a sign request is signed.
	body := signBody("GET", "http://localhost:7070/lake/wh/f.parquet")
	for _, chunked := range []bool{false, true} {
		req, _ := http.NewRequest("POST", "http://"+addr+"/v1/aws/s3/sign", io.MultiReader(strings.NewReader(body)))
		if !chunked {
			req.ContentLength = int64(len(body))
		}
		req.Header.Set("Authorization", "Bearer "+aliceToken())
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("chunked %v: %d %s", chunked, resp.StatusCode, b)
		}
	}
}

// The bodies the front reads whole (createTable, registerTable) share a
// budget of four maximal bodies: four callers that declare 16 MiB and
// send it slowly hold it, and the fifth is refused 503 from its headers,
// before a byte of its body is held.
func TestFrontHeldBodiesBudget(t *testing.T) {
	addr := frontServer(t, tableCatalog(t).URL, &recordingVendor{}, Options{}, Config{})
	for range 4 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		fmt.Fprintf(c, "POST /v1/namespaces/db/tables HTTP/1.1\r\nHost: cs\r\nContent-Length: %d\r\n\r\n%s", 16<<20, strings.Repeat("x", 64<<10))
	}
	time.Sleep(300 * time.Millisecond) // the four are held, waiting for their bodies
	status, err := answerBeforeBody(addr, "POST", "/v1/namespaces/db/tables", 16<<20)
	if err != nil || status != http.StatusServiceUnavailable {
		t.Fatalf("fifth maximal createTable: %d %v, want 503 from its headers", status, err)
	}
	// The four hold the whole budget: a 1 MiB one waits its turn too.
	if status, err := answerBeforeBody(addr, "POST", "/v1/namespaces/db/tables", 1<<20); err != nil || status != http.StatusServiceUnavailable {
		t.Fatalf("1 MiB createTable beside four maximal ones: %d %v, want 503", status, err)
	}
}
