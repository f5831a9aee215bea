package server

import (
	"context"
	"errors"
	"io"
	"net/http"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/countersign/countersign/audit"
	"github.com/countersign/countersign/catalog"
	"github.com/countersign/countersign/signer"
)

// breakableAudit is a real audit log that fails every Append once broken
// (a full or failing disk, as the log reports it).
type breakableAudit struct {
	AuditLog
	broken atomic.Bool
}

func (b *breakableAudit) Append(ctx context.Context, recs ...*audit.Record) error {
	if b.broken.Load() {
		return errors.New("audit: write failed: no space left on device")
	}
	return b.AuditLog.Append(ctx, recs...)
}

// frontRefusalServer is countersign with a real catalog front before up
// (tableCatalog), its audit log in dir, as cmd/countersign wires it.
func frontRefusalServer(t *testing.T, dir string, opts Options) (*Server, *breakableAudit) {
	t.Helper()
	up := tableCatalog(t)
	front, err := catalog.New(catalog.Options{Config: catalog.Config{Upstream: up.URL, MaxRequestBytes: 1 << 10}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(front.Close)
	opts.Catalog, opts.Tables = front, front
	log := &breakableAudit{AuditLog: openTestAuditIn(t, dir)}
	h, err := NewHandler(Stages{Authenticator: testAuthenticator(t), Classifier: testClassifier(t, true), Authorizer: testEngine(t, testPolicy),
		Signer: signer.New(credentials.NewStaticCredentialsProvider("AKTEST", "secret", ""), signer.Options{}), Audit: log}, opts, nil)
	if err != nil {
		t.Fatal(err)
	}
	return New(h, Config{StreamBodies: true}), log
}

// TestFrontRefusalsAreRecorded: every refusal the catalog front makes
// itself has one access record, durable before the answer: the route's
// operation and table (or "unknown route"), the decision its status
// means, the message answered, the caller's address and the request id
// of the answer, and the principal when the bearer authenticates. What
// the catalog answers itself (here a 401 and a loadTable) is not
// countersign's decision and has none.
func TestFrontRefusalsAreRecorded(t *testing.T) {
	dir := t.TempDir()
	s, _ := frontRefusalServer(t, dir, Options{})
	addr := serveTCP(t, s)
	bob := "Bearer " + mintToken("bob", time.Now().Add(time.Hour), "analysts")
	setLocation := `{"requirements":[],"updates":[{"action":"set-location","location":"s3://lake"}]}`
	tbl := func(name string) *audit.Table { return &audit.Table{Namespace: []string{"db"}, Name: name} }
	cases := []struct {
		name, method, path, body, authz string
		op                              string
		table                           *audit.Table
		status                          int
		decision                        audit.Decision
		msg                             string
	}{
		{"a spelling refused", "GET", "/v1/namespaces/db%2Ftables%2Fsecret", "", "", catalog.OperationUnknown, nil, 400, audit.DecisionMalformed, "%2F"},
		{"no route", "GET", "/v1/nothing/here", "", "", catalog.OperationUnknown, nil, 404, audit.DecisionMalformed, "no route"},
		{"a method the route has not", "DELETE", "/v1/config", "", "", catalog.OperationUnknown, nil, 405, audit.DecisionMalformed, ""},
		{"set-location", "POST", "/v1/namespaces/db/tables/t", setLocation, bob, "updateTable", tbl("t"), 403, audit.DecisionDeny, "refuses the set-location update"},
		{"set-location, anonymous", "POST", "/v1/namespaces/db/tables/t", setLocation, "", "updateTable", tbl("t"), 403, audit.DecisionDeny, "refuses the set-location update"},
		{"set-location, a token that does not authenticate", "POST", "/v1/namespaces/db/tables/t", setLocation, "Bearer forged", "updateTable", tbl("t"), 403, audit.DecisionDeny, "set-location"},
		{"body too large", "POST", "/v1/namespaces/db/tables/t", `{"x":"` + strings.Repeat("x", 2<<10) + `"}`, bob, "updateTable", tbl("t"), 413, audit.DecisionMalformed, "catalog.max_request_bytes"},
		{"a control character, authenticated", "GET", "/v1/namespaces/db%00", "", bob, catalog.OperationUnknown, nil, 400, audit.DecisionMalformed, "control character"},
	}
	for i, c := range cases {
		req, _ := http.NewRequest(c.method, "http://"+addr+c.path, strings.NewReader(c.body))
		if c.authz != "" {
			req.Header.Set("Authorization", c.authz)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.status || !strings.Contains(string(b), c.msg) {
			t.Errorf("%s: %d %s; want %d naming %q", c.name, resp.StatusCode, b, c.status, c.msg)
		}
		recs := accessRecords(t, dir, audit.KindAccess)
		if len(recs) != i+1 {
			t.Fatalf("%s: %d access records after %d refusals", c.name, len(recs), i+1)
		}
		r := recs[i]
		if r.Operation != c.op || !reflect.DeepEqual(r.Table, c.table) || r.Status != c.status || r.Decision != c.decision ||
			!strings.Contains(r.Reason, c.msg) || !strings.Contains(string(b), jsonText(r.Reason)) || r.Signing != nil || r.Role != audit.RoleNone {
			t.Errorf("%s: record %s %+v %d %s %q; want %s %+v %d %s naming %q", c.name, r.Operation, r.Table, r.Status, r.Decision, r.Reason, c.op, c.table, c.status, c.decision, c.msg)
		}
		if r.SourceIP != "127.0.0.1" || r.RequestID == "" || r.RequestID != resp.Header.Get("X-Request-Id") {
			t.Errorf("%s: record from %q id %q, answer's id %q", c.name, r.SourceIP, r.RequestID, resp.Header.Get("X-Request-Id"))
		}
		switch {
		case c.authz == bob && (r.Principal == nil || r.Principal.ID != "bob" || r.Principal.Issuer != testIssuer || r.Principal.TokenHMAC == ""):
			t.Errorf("%s: principal %+v, want bob's", c.name, r.Principal)
		case c.authz != bob && r.Principal != nil:
			t.Errorf("%s: principal %+v for a caller that did not authenticate", c.name, r.Principal)
		}
	}
	// The catalog's own answers, an error and a table, are not recorded.
	for _, authz := range []string{"", bob} {
		req, _ := http.NewRequest("GET", "http://"+addr+"/v1/namespaces/db/tables/t", nil)
		if authz == "" {
			req.URL.Path = "/v1/namespaces"
		} else {
			req.Header.Set("Authorization", authz)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 401 && resp.StatusCode != 200 {
			t.Fatalf("forwarded %s: %d", req.URL.Path, resp.StatusCode)
		}
	}
	if n := len(accessRecords(t, dir, audit.KindAccess)); n != len(cases) {
		t.Fatalf("%d access records after the catalog's own answers, want %d", n, len(cases))
	}
}

// jsonText is s as encoding/json writes it inside a string (no HTML
// escaping), for finding a record's reason in an answer's body.
func jsonText(s string) string {
	s = strings.ReplaceAll(s, `\`, `\\`)
	return strings.ReplaceAll(s, `"`, `\"`)
}

// TestFrontAnonymousRefusalFlood: anonymous refusals at the catalog
// front share the sign routes' per-source limit. Within the burst each
// has its record; past it the answer is 429 with Retry-After, nothing is
// recorded one by one, and one summary counts them. An authenticated
// caller's refusals from the same source are still answered and recorded.
func TestFrontAnonymousRefusalFlood(t *testing.T) {
	dir := t.TempDir()
	s, _ := frontRefusalServer(t, dir, Options{RefusalLimit: RefusalLimit{PerSecond: 0.001, Burst: 5, SummaryInterval: time.Hour}})
	statuses := map[int]int{}
	for i := range 50 {
		r := doAs(t, s, "", "GET", "/v1/nothing/here", "")
		statuses[r.status]++
		if r.status == 429 && (r.header["Retry-After"] == "" || !strings.Contains(r.raw, "TooManyRequestsException") || !strings.Contains(r.raw, "limits.refusal_limit")) {
			t.Fatalf("429 #%d: %v %s", i, r.header, r.raw)
		}
	}
	if statuses[404] != 5 || statuses[429] != 45 {
		t.Fatalf("statuses %v, want 5 x 404 and 45 x 429", statuses)
	}
	bob := "Bearer " + mintToken("bob", time.Now().Add(time.Hour))
	if r := doAs(t, s, bob, "GET", "/v1/nothing/here", ""); r.status != 404 {
		t.Fatalf("an authenticated caller from the limited source: %d %s", r.status, r.raw)
	}
	recs := accessRecords(t, dir, audit.KindAccess)
	if len(recs) != 6 || recs[5].Principal == nil || recs[5].Principal.ID != "bob" {
		t.Fatalf("%d access records, want 5 anonymous refusals and bob's", len(recs))
	}
	s.Shutdown() // records the pending summary
	var summaries []*audit.Record
	for _, r := range accessRecords(t, dir, audit.KindLifecycle) {
		if r.Event == audit.EventRefusalsSuppressed {
			summaries = append(summaries, r)
		}
	}
	if len(summaries) != 1 || summaries[0].Detail["count"] != "45" || summaries[0].Detail["statuses"] != "404=45" {
		t.Fatalf("summaries %+v", summaries)
	}
}

// TestFrontRefusalWithoutAuditLog: when the audit log cannot record a
// refusal of the front's, the answer is 503 "audit log unavailable" with
// Retry-After, and nothing is forwarded.
func TestFrontRefusalWithoutAuditLog(t *testing.T) {
	s, log := frontRefusalServer(t, t.TempDir(), Options{})
	log.broken.Store(true)
	bob := "Bearer " + mintToken("bob", time.Now().Add(time.Hour))
	for _, c := range []struct{ authz, method, path, body string }{
		{"", "GET", "/v1/nothing/here", ""},
		{bob, "POST", "/v1/namespaces/db/tables/t", `{"updates":[{"action":"set-location","location":"s3://lake"}]}`},
	} {
		r := doAs(t, s, c.authz, c.method, c.path, c.body)
		if r.status != 503 || r.header["Retry-After"] != "1" || !strings.Contains(r.raw, "audit log unavailable") || !strings.Contains(r.raw, "ServiceUnavailableException") {
			t.Errorf("%s %s with the audit log down: %d %v %s", c.method, c.path, r.status, r.header, r.raw)
		}
	}
	// The refusal stands once the log is back.
	log.broken.Store(false)
	if r := doAs(t, s, "", "GET", "/v1/nothing/here", ""); r.status != 404 {
		t.Fatalf("with the audit log back: %d %s", r.status, r.raw)
	}
}
