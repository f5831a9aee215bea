package server

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/audit"
)

// TestTwoAuthorizationHeadersRefused (found by a black-box probe: the
// first of two headers was the caller, whatever the second said). Over
// TCP, as an engine sends it: two Authorization headers, in either order
// and whether or not both are good, are refused with a 400 that says so,
// nothing is signed, and the record names no principal.
func TestTwoAuthorizationHeadersRefused(t *testing.T) {
	dir := t.TempDir()
	s := newTestServer(t, testPolicy, nil, Options{})
	s.handler.stages.Audit = openTestAuditIn(t, dir)
	addr := serveTCP(t, s)
	body := signBody("GET", "http://localhost:7070/lake/wh/f.parquet")
	alice := "Bearer " + aliceToken()
	send := func(headers ...string) (int, string) {
		t.Helper()
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(10 * time.Second))
		raw := "POST /v1/aws/s3/sign HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
		for _, h := range headers {
			raw += "Authorization: " + h + "\r\n"
		}
		raw += "Content-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body
		if _, err := c.Write([]byte(raw)); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp.StatusCode, string(b)
	}
	if status, b := send(alice); status != 200 {
		t.Fatalf("one header: %d %s", status, b)
	}
	for _, pair := range [][]string{{alice, alice}, {alice, "Bearer other"}, {"Bearer other", alice}, {"", alice}} {
		status, b := send(pair...)
		if status != http.StatusBadRequest || !strings.Contains(b, "more than one Authorization header") || strings.Contains(b, "Credential=") {
			t.Fatalf("%d headers %q: %d %s", len(pair), pair[0][:min(10, len(pair[0]))], status, b)
		}
	}
	recs := accessRecords(t, dir, audit.KindAccess)
	if len(recs) != 5 {
		t.Fatalf("%d access records, want 5", len(recs))
	}
	for i, r := range recs[1:] {
		if r.Decision != audit.DecisionMalformed || r.Principal != nil {
			t.Fatalf("record %d: decision %s, principal %+v", i+1, r.Decision, r.Principal)
		}
	}
}

// TestRefusedBySignerRecordedMalformed (found by a black-box probe): a
// request the policy allowed and the signer then refused as malformed (it
// already carries a header countersign must set) was recorded as "allow"
// with status 400. It is "malformed" now, naming the policy revision that
// allowed it, and it has no signing block.
func TestRefusedBySignerRecordedMalformed(t *testing.T) {
	dir := t.TempDir()
	s := newTestServer(t, testPolicy, nil, Options{})
	s.handler.stages.Audit = openTestAuditIn(t, dir)
	for _, h := range []string{`"Authorization":["AWS4-HMAC-SHA256 x"]`, `"X-Amz-Date":["19700101T000000Z"]`} {
		body := `{"region":"us-east-1","uri":"http://localhost:7070/lake/wh/f.parquet","method":"GET","headers":{` + h + `}}`
		if r := do(t, s, "POST", "/v1/aws/s3/sign", body); r.status != http.StatusBadRequest {
			t.Fatalf("%s: %d %s", h, r.status, r.raw)
		}
	}
	recs := accessRecords(t, dir, audit.KindAccess)
	if len(recs) != 2 {
		t.Fatalf("%d records", len(recs))
	}
	for _, r := range recs {
		if r.Decision != audit.DecisionMalformed || r.Status != http.StatusBadRequest || r.Signing != nil || r.PolicyRevision == "" || r.Operation != "GetObject" {
			t.Fatalf("record %+v", r)
		}
	}
}
