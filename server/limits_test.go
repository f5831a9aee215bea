package server

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/audit"
)

// accessRecords reads the access records of the audit log in dir.
func accessRecords(t *testing.T, dir string, kind audit.Kind) []*audit.Record {
	t.Helper()
	fsys, err := audit.DirFS(dir)
	if err != nil {
		t.Fatal(err)
	}
	var recs []*audit.Record
	err = audit.Query(context.Background(), fsys, audit.Filter{Kind: kind}, func(rec *audit.Record, _ []byte) error {
		r := *rec
		recs = append(recs, &r)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

// rawExchange sends req on a new connection and returns the answer.
func rawExchange(t *testing.T, addr, req string) *http.Response {
	t.Helper()
	status, werr, rerr := sendOversized(addr, []byte(req))
	if werr != nil || rerr != nil {
		t.Fatalf("status %d, write %v, read %v", status, werr, rerr)
	}
	return &http.Response{StatusCode: status}
}

// Defect 6: every sign request leaves a record, including those refused
// before the body is decoded: too large (413), headers too large (431,
// recorded without a route: it cannot be read), wrong method (405).
// Requests to other routes do not.
func TestEarlyRefusalsAreRecorded(t *testing.T) {
	dir := t.TempDir()
	s := newTestServer(t, testPolicy, nil, Options{})
	s.handler.stages.Audit = openTestAuditIn(t, dir)
	addr := serveTCP(t, s)

	body := strings.Repeat("x", 2<<20)
	if r := rawExchange(t, addr, "POST /v1/aws/s3/sign HTTP/1.1\r\nHost: c\r\nX-Request-Id: big-body\r\nContent-Length: "+strconv.Itoa(len(body))+"\r\n\r\n"+body); r.StatusCode != 413 {
		t.Fatalf("2 MiB body: %d", r.StatusCode)
	}
	if r := rawExchange(t, addr, "POST /v1/aws/s3/sign HTTP/1.1\r\nHost: c\r\nX-Pad: "+strings.Repeat("p", 16<<10)+"\r\nContent-Length: 2\r\n\r\n{}"); r.StatusCode != 431 {
		t.Fatalf("16 KiB header: %d", r.StatusCode)
	}
	if r := rawExchange(t, addr, "GET /v1/aws/s3/sign HTTP/1.1\r\nHost: c\r\nX-Request-Id: wrong-method\r\nConnection: close\r\n\r\n"); r.StatusCode != 405 {
		t.Fatalf("GET: %d", r.StatusCode)
	}
	if r := rawExchange(t, addr, "GET /nowhere HTTP/1.1\r\nHost: c\r\nConnection: close\r\n\r\n"); r.StatusCode != 404 {
		t.Fatalf("unknown route: %d", r.StatusCode)
	}
	// A body over the limit on an unknown route is not a sign request.
	if r := rawExchange(t, addr, "POST /nowhere HTTP/1.1\r\nHost: c\r\nContent-Length: "+strconv.Itoa(len(body))+"\r\n\r\n"+body); r.StatusCode != 413 {
		t.Fatalf("unknown route, big body: %d", r.StatusCode)
	}

	type row struct {
		status           int
		decision, source string
		id               string
	}
	var got []row
	for _, r := range accessRecords(t, dir, audit.KindAccess) {
		id := r.RequestID
		if id != "big-body" && id != "wrong-method" {
			id = "generated"
		}
		got = append(got, row{r.Status, string(r.Decision), r.SourceIP, id})
	}
	want := []row{
		{413, "malformed", "127.0.0.1", "big-body"},
		{431, "malformed", "127.0.0.1", "generated"},
		{405, "malformed", "127.0.0.1", "wrong-method"},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("records\n got %v\nwant %v", got, want)
	}
}

// Defect 7: refusals before authentication are limited per source. Within
// the burst each has its own record; past it the answer is 429 with
// Retry-After, nothing is recorded one by one, and one summary counts what
// was suppressed. Authenticated requests from the same source still sign.
func TestRefusalLimitPerSource(t *testing.T) {
	dir := t.TempDir()
	s := newTestServer(t, testPolicy, nil, Options{RefusalLimit: RefusalLimit{PerSecond: 0.001, Burst: 5, SummaryInterval: time.Hour}})
	s.handler.stages.Audit = openTestAuditIn(t, dir)

	statuses := map[int]int{}
	for i := range 50 {
		r := doAs(t, s, "", "POST", "/v1/aws/s3/sign", signBody("GET", "http://localhost:7070/lake/wh/ok"))
		statuses[r.status]++
		if r.status == 429 {
			if r.header["Retry-After"] == "" || r.body["error"] == nil || !strings.Contains(r.raw, "TooManyRequestsException") {
				t.Fatalf("429 #%d: %v %s", i, r.header, r.raw)
			}
		}
	}
	if statuses[401] != 5 || statuses[429] != 45 {
		t.Fatalf("statuses %v, want 5 x 401 and 45 x 429", statuses)
	}
	if r := do(t, s, "POST", "/v1/aws/s3/sign", signBody("GET", "http://localhost:7070/lake/wh/ok")); r.status != 200 {
		t.Fatalf("authenticated request from the limited source: %d %s", r.status, r.raw)
	}
	if n := len(accessRecords(t, dir, audit.KindAccess)); n != 6 {
		t.Fatalf("%d access records, want 5 refusals + 1 signature", n)
	}
	s.Shutdown() // records the pending summary
	var summaries []*audit.Record
	for _, r := range accessRecords(t, dir, audit.KindLifecycle) {
		if r.Event == audit.EventRefusalsSuppressed {
			summaries = append(summaries, r)
		}
	}
	if len(summaries) != 1 || summaries[0].Detail["count"] != "45" || summaries[0].Detail["statuses"] != "401=45" {
		t.Fatalf("summaries %+v", summaries)
	}
}

// keepAlive is a client connection that sends requests one at a time.
type keepAlive struct {
	c  net.Conn
	br *bufio.Reader
}

func dialKeepAlive(t *testing.T, addr string) *keepAlive {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &keepAlive{c: c, br: bufio.NewReader(c)}
}

func (k *keepAlive) send(method, path, authorization, body string) (*http.Response, []byte, error) {
	req := method + " " + path + " HTTP/1.1\r\nHost: c\r\n"
	if authorization != "" {
		req += "Authorization: " + authorization + "\r\n"
	}
	req += "Content-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body
	k.c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := k.c.Write([]byte(req)); err != nil {
		return nil, nil, err
	}
	resp, err := http.ReadResponse(k.br, nil)
	if err != nil {
		return nil, nil, err
	}
	data, err := io.ReadAll(resp.Body)
	return resp, data, err
}

// closed reports whether the server closed the connection within d (after
// an answer such as 408, or none).
func (k *keepAlive) closed(d time.Duration) bool {
	k.c.SetReadDeadline(time.Now().Add(d))
	_, err := io.Copy(io.Discard, k.br)
	if err == nil {
		return true // EOF
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return false
	}
	return err != nil
}

func signedCall(k *keepAlive) (int, error) {
	resp, _, err := k.send("POST", "/v1/aws/s3/sign", "Bearer "+aliceToken(), signBody("GET", "http://localhost:7070/lake/wh/ok"))
	if err != nil {
		return 0, err
	}
	return resp.StatusCode, nil
}

// Defect 7: a connection that never carried an authenticated request gets
// the short pre-authentication idle timeout; once it carried one, the
// normal idle timeout.
func TestPreAuthIdleTimeout(t *testing.T) {
	base := newTestServer(t, testPolicy, nil, Options{})
	addr := serveTCP(t, New(base.handler, Config{PreAuthIdleTimeout: 300 * time.Millisecond, IdleTimeout: time.Minute}))

	anon := dialKeepAlive(t, addr)
	if resp, _, err := anon.send("GET", "/healthz", "", ""); err != nil || resp.StatusCode != 200 {
		t.Fatalf("healthz: %v %v", resp, err)
	}
	silent := dialKeepAlive(t, addr) // connects, sends nothing
	engine := dialKeepAlive(t, addr)
	if st, err := signedCall(engine); err != nil || st != 200 {
		t.Fatalf("sign: %d %v", st, err)
	}
	if !anon.closed(3 * time.Second) {
		t.Fatal("an anonymous idle connection outlived the pre-authentication idle timeout")
	}
	if !silent.closed(3 * time.Second) {
		t.Fatal("a connection that sent nothing outlived the pre-authentication idle timeout")
	}
	time.Sleep(700 * time.Millisecond)
	if st, err := signedCall(engine); err != nil || st != 200 {
		t.Fatalf("the authenticated connection after 1 s idle: %d %v", st, err)
	}
}

// Defect 7: at the connection limit, a new connection gets a slot by
// closing an idle connection that never authenticated; with only
// authenticated connections open, it is answered 503 with Retry-After in
// Iceberg's error model. Past the per-source limit, 429.
func TestConnectionLimitShedsAnonymousFirst(t *testing.T) {
	base := newTestServer(t, testPolicy, nil, Options{})
	addr := serveTCP(t, New(base.handler, Config{MaxConnections: 20, MaxConnectionsPerSource: 1000}))

	var anon []*keepAlive
	for range 20 {
		k := dialKeepAlive(t, addr)
		if resp, _, err := k.send("GET", "/healthz", "", ""); err != nil || resp.StatusCode != 200 {
			t.Fatalf("healthz: %v %v", resp, err)
		}
		anon = append(anon, k)
	}
	// 20 anonymous idle connections hold every slot; engines still get in.
	var engines []*keepAlive
	for i := range 20 {
		k := dialKeepAlive(t, addr)
		if st, err := signedCall(k); err != nil || st != 200 {
			t.Fatalf("engine %d beside the anonymous connections: %d %v", i, st, err)
		}
		engines = append(engines, k)
	}
	shed := 0
	for _, k := range anon {
		if k.closed(time.Second) {
			shed++
		}
	}
	if shed != 20 {
		t.Fatalf("%d of 20 anonymous idle connections were shed, want 20", shed)
	}
	// Every slot now carries an authenticated connection: none is shed.
	k := dialKeepAlive(t, addr)
	resp, body, err := k.send("POST", "/v1/aws/s3/sign", "Bearer "+aliceToken(), signBody("GET", "http://localhost:7070/lake/wh/ok"))
	if err != nil {
		t.Fatalf("the connection past the limit got no answer: %v", err)
	}
	var e struct {
		Error struct{ Type string } `json:"error"`
	}
	if resp.StatusCode != 503 || resp.Header.Get("Retry-After") == "" || json.Unmarshal(body, &e) != nil || e.Error.Type != "ServiceUnavailableException" {
		t.Fatalf("past the limit: %d %v %s", resp.StatusCode, resp.Header, body)
	}
	for i, k := range engines {
		if st, err := signedCall(k); err != nil || st != 200 {
			t.Fatalf("engine %d after the refusal: %d %v", i, st, err)
		}
	}
}

func TestConnectionLimitPerSource(t *testing.T) {
	base := newTestServer(t, testPolicy, nil, Options{})
	addr := serveTCP(t, New(base.handler, Config{MaxConnectionsPerSource: 3}))
	for range 3 {
		if st, err := signedCall(dialKeepAlive(t, addr)); err != nil || st != 200 {
			t.Fatalf("sign: %d %v", st, err)
		}
	}
	resp, body, err := dialKeepAlive(t, addr).send("GET", "/healthz", "", "")
	if err != nil || resp.StatusCode != 429 || resp.Header.Get("Retry-After") == "" || !strings.Contains(string(body), "TooManyRequestsException") {
		t.Fatalf("4th connection from one source: %v %v %s", resp, err, body)
	}
}

// max_concurrency caps sign requests, not connections: past it a request
// is answered 503 with Retry-After and recorded.
func TestRequestConcurrencyLimit(t *testing.T) {
	dir := t.TempDir()
	base := newTestServer(t, testPolicy, nil, Options{})
	base.handler.stages.Audit = openTestAuditIn(t, dir)
	s := New(base.handler, Config{MaxConcurrency: 2})
	s.inflight <- struct{}{} // two requests in flight
	s.inflight <- struct{}{}
	r := do(t, s, "POST", "/v1/aws/s3/sign", signBody("GET", "http://localhost:7070/lake/wh/ok"))
	if r.status != 503 || r.header["Retry-After"] != "1" || !strings.Contains(r.raw, "max_concurrency") {
		t.Fatalf("at the limit: %d %v %s", r.status, r.header, r.raw)
	}
	if r := do(t, s, "GET", "/healthz", ""); r.status != 200 {
		t.Fatalf("healthz is not a sign request: %d", r.status)
	}
	<-s.inflight
	if r := do(t, s, "POST", "/v1/aws/s3/sign", signBody("GET", "http://localhost:7070/lake/wh/ok")); r.status != 200 {
		t.Fatalf("below the limit: %d %s", r.status, r.raw)
	}
	recs := accessRecords(t, dir, audit.KindAccess)
	if len(recs) != 2 || recs[0].Status != 503 || recs[1].Status != 200 {
		t.Fatalf("records %+v", recs)
	}
}

// TestMalformedFromAuthenticatedCallerNotLimited: a body that does not
// decode is a 400 whoever sends it; with good credentials its record
// names the principal and the source's pre-authentication refusal limit
// is not charged (a black-box probe saw 400s turn into 429s), while the
// same bodies without credentials still are.
func TestMalformedFromAuthenticatedCallerNotLimited(t *testing.T) {
	dir := t.TempDir()
	s := newTestServer(t, testPolicy, nil, Options{RefusalLimit: RefusalLimit{PerSecond: 0.001, Burst: 5, SummaryInterval: time.Hour}})
	s.handler.stages.Audit = openTestAuditIn(t, dir)
	for i := range 20 {
		if r := do(t, s, "POST", "/v1/aws/s3/sign", `{"region":1}`); r.status != 400 || !strings.Contains(r.raw, "region") {
			t.Fatalf("authenticated malformed #%d: %d %s", i, r.status, r.raw)
		}
	}
	statuses := map[int]int{}
	for range 10 {
		statuses[doAs(t, s, "", "POST", "/v1/aws/s3/sign", `{"region":1}`).status]++
		statuses[doAs(t, s, "Bearer not-a-token", "POST", "/v1/aws/s3/sign", `{"region":1}`).status]++
	}
	if statuses[400] != 5 || statuses[429] != 15 {
		t.Fatalf("unauthenticated malformed: %v, want 5 x 400 and 15 x 429", statuses)
	}
	recs := accessRecords(t, dir, audit.KindAccess)
	if len(recs) != 25 {
		t.Fatalf("%d access records, want 20 + 5", len(recs))
	}
	for i, r := range recs {
		named := r.Principal != nil && r.Principal.ID == "alice"
		if r.Decision != audit.DecisionMalformed || named != (i < 20) {
			t.Fatalf("record %d: decision %s, principal %+v", i, r.Decision, r.Principal)
		}
	}
}
