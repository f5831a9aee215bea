package server

import (
	"bufio"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/countersign/countersign/internal/syncbuf"
	"github.com/countersign/countersign/signer"
)

// TestTransportErrorsLogNoCredentials sends requests fasthttp cannot read
// (found by a black-box probe: its default logger printed the buffered
// request, bearer token included, to stderr). Each is answered 400, and
// what is logged is one JSON line through the server's logger without
// the token or the session token.
func TestTransportErrorsLogNoCredentials(t *testing.T) {
	logs := new(syncbuf.Buffer)
	log := slog.New(slog.NewJSONHandler(logs, nil))
	h, err := NewHandler(Stages{Authenticator: testAuthenticator(t), Classifier: testClassifier(t, true), Authorizer: testEngine(t, testPolicy),
		Signer: signer.New(credentials.NewStaticCredentialsProvider("AKTEST", "secret", ""), signer.Options{}), Audit: openTestAudit(t)}, Options{}, log)
	if err != nil {
		t.Fatal(err)
	}
	addr := serveTCP(t, New(h, Config{}))
	tok := aliceToken()
	for _, raw := range []string{
		"POST /v1/aws/s3/sign HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + tok + "\r\nX-Amz-Security-Token: SESSIONSECRET\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n{}",
		"POST /v1/aws/s3/sign HTTP/1.1\r\nAuthorization: Bearer " + tok + "\r\nContent-Length: 2\r\n\r\n{}",
		"POST /v1/aws/s3/sign HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + tok + "\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
	} {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		c.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := c.Write([]byte(raw)); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("%q: %v", raw[:40], err)
		}
		resp.Body.Close()
		c.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("%q: status %d", raw, resp.StatusCode)
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for strings.Count(logs.String(), "http transport error") < 3 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	out := logs.String()
	if n := strings.Count(out, "http transport error"); n < 3 {
		t.Fatalf("%d transport errors logged, want 3:\n%s", n, out)
	}
	sig := tok[strings.LastIndexByte(tok, '.')+1:]
	for _, secret := range []string{tok, sig, tok[:40], "SESSIONSECRET"} {
		if strings.Contains(out, secret) {
			t.Fatalf("log holds %q:\n%s", secret, out)
		}
	}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if !strings.HasPrefix(line, "{") {
			t.Fatalf("log line is not JSON: %s", line)
		}
	}
}

func TestTransportLoggerRedacts(t *testing.T) {
	logs := new(syncbuf.Buffer)
	transportLogger{slog.New(slog.NewJSONHandler(logs, nil))}.Printf("error %s", "contents: \"POST / HTTP/1.1\\r\\nAuthorization: Bearer abc.def.ghi\\r\\nauthorization:Basic dXNlcg==\\r\\nX-Amz-Security-Token: FwoGZX\\r\\n\"")
	out := logs.String()
	for _, s := range []string{"abc.def.ghi", "dXNlcg", "FwoGZX"} {
		if strings.Contains(out, s) {
			t.Fatalf("%q logged: %s", s, out)
		}
	}
	if strings.Count(out, "[redacted]") != 3 {
		t.Fatalf("want three redactions: %s", out)
	}
}

// TestEveryAnswerNoCache: the brief's rule is Cache-Control: no-cache on
// every response of the signer, refusals and health checks included.
func TestEveryAnswerNoCache(t *testing.T) {
	s := newTestServer(t, testPolicy, nil, Options{})
	for _, c := range []struct {
		auth, method, path, body string
		status                   int
	}{
		{"Bearer " + aliceToken(), "POST", "/v1/aws/s3/sign", signBody("GET", "http://localhost:7070/lake/wh/f.parquet"), 200},
		{"Bearer " + aliceToken(), "POST", "/v1/aws/s3/sign", `{"region":1}`, 400},
		{"", "POST", "/v1/aws/s3/sign", signBody("GET", "http://localhost:7070/lake/wh/f.parquet"), 401},
		{"Bearer " + aliceToken(), "POST", "/v1/aws/s3/sign", signBody("GET", "http://localhost:7070/other/k"), 403},
		{"Bearer " + aliceToken(), "GET", "/v1/aws/s3/sign", "", 405},
		{"", "GET", "/nowhere", "", 404},
		{"", "GET", "/healthz", "", 200},
		{"", "GET", "/readyz", "", 200},
	} {
		r := doAs(t, s, c.auth, c.method, c.path, c.body)
		if r.status != c.status || r.header["Cache-Control"] != "no-cache" {
			t.Errorf("%s %s: %d with Cache-Control %q, want %d with no-cache: %s", c.method, c.path, r.status, r.header["Cache-Control"], c.status, r.raw)
		}
	}
}
