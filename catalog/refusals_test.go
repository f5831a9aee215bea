package catalog

import (
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/valyala/fasthttp"

	"github.com/countersign/countersign/internal/policyinput"
)

// TestFrontRecordsItsRefusals: every request the front refuses itself is
// handed to its Refusals before it is answered, with the route's
// operation and table (or "unknown route" and none), the status and the
// message it is answered with, and the request id on the answer; a
// request the catalog answers, even with an error, is not.
func TestFrontRecordsItsRefusals(t *testing.T) {
	up, got := recordingUpstream(t, http.StatusOK, upstreamTable, map[string]string{"Content-Type": "application/json"})
	f, err := newTestFront(Options{Config: Config{Upstream: up.URL, MaxRequestBytes: 1 << 10}, Locations: operatorPolicy(t)})
	if err != nil {
		t.Fatal(err)
	}
	log := recordRefusals(t, f)
	front := serveFront(t, f)
	send := func(method, path, body string, hdr ...string) (*http.Response, string) {
		t.Helper()
		req, _ := http.NewRequest(method, front+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer tok")
		for _, h := range hdr {
			name, value, _ := strings.Cut(h, ": ")
			req.Header.Add(name, value)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp, string(b)
	}
	tbl := func(name string) *policyinput.Table {
		return &policyinput.Table{Prefix: "prod", Namespace: []string{"db"}, Name: name}
	}
	setLocation := `{"requirements":[],"updates":[{"action":"set-location","location":"s3://lake"}]}`
	cases := []struct {
		name, method, path, body string
		hdr                      []string
		op                       string
		table                    *policyinput.Table
		status                   int
		msg                      string
		forwarded                bool
	}{
		{"a spelling refused", "GET", "/v1/namespaces/db%2Ftables%2Fsecret", "", nil, OperationUnknown, nil, 400, "%2F", false},
		{"no route", "GET", "/v1/nothing/here", "", nil, OperationUnknown, nil, 404, "no route", false},
		{"a method the route has not", "DELETE", "/v1/config", "", nil, OperationUnknown, nil, 405, "", false},
		{"two Authorization headers", "GET", "/v1/config", "", []string{"Authorization: Bearer other"}, OperationUnknown, nil, 400, "more than one Authorization header", false},
		{"a header that reroutes", "GET", "/v1/config", "", []string{"X-HTTP-Method-Override: DELETE"}, OperationUnknown, nil, 400, "X-Http-Method-Override header", false},
		{"countersign's own route", "POST", "/v1/prod/namespaces/db/tables/t/sign", "{}", nil, "signRequest", tbl("t"), 404, "does not forward signRequest", false},
		{"set-location", "POST", "/v1/prod/namespaces/db/tables/t", setLocation, nil, "updateTable", tbl("t"), 403, "refuses the set-location update", false},
		{"create outside the root", "POST", "/v1/prod/namespaces/db/tables", `{"name":"n","location":"s3://lake/"}`, nil, "createTable", tbl("n"), 403, "not strictly under", false},
		{"create overlapping another table", "POST", "/v1/prod/namespaces/db/tables", `{"name":"n","location":"s3://lake/wh/db/other/"}`, nil, "createTable", tbl("n"), 403, "overlaps table prod/db/other's location", false},
		{"a member spelled in another case", "POST", "/v1/prod/namespaces/db/tables", `{"Name":"n"}`, nil, "createTable", tbl(""), 400, "", false},
		{"body too large", "POST", "/v1/prod/namespaces/db/tables/t", `{"updates":[],"x":"` + strings.Repeat("x", 2<<10) + `"}`, nil, "updateTable", tbl("t"), 413, "catalog.max_request_bytes", false},
		{"an answer's location outside the operator's", "GET", "/v1/prod/namespaces/db/tables/fixed", "", nil, "loadTable", tbl("fixed"), 403, "countersign does not serve this table", true},
	}
	for _, c := range cases {
		resp, body := send(c.method, c.path, c.body, c.hdr...)
		if resp.StatusCode != c.status || !strings.Contains(body, c.msg) {
			t.Errorf("%s: %d %s; want %d naming %q", c.name, resp.StatusCode, body, c.status, c.msg)
		}
		select {
		case s := <-got:
			if !c.forwarded {
				t.Errorf("%s: forwarded to the catalog: %s %s", c.name, s.method, s.uri)
			}
		default:
			if c.forwarded {
				t.Errorf("%s: not forwarded", c.name)
			}
		}
		recs := log.all()
		if len(recs) == 0 {
			t.Fatalf("%s: nothing recorded", c.name)
		}
		r := recs[len(recs)-1]
		if r.Operation != c.op || !reflect.DeepEqual(r.Table, c.table) || r.Status != c.status || !strings.Contains(body, jsonText(r.Message)) || !strings.Contains(r.Message, c.msg) {
			t.Errorf("%s: recorded %+v (table %+v); want %s %+v %d naming %q, as answered", c.name, r, r.Table, c.op, c.table, c.status, c.msg)
		}
		if id := resp.Header.Get("X-Request-Id"); id != r.RequestID {
			t.Errorf("%s: X-Request-Id %q, recorded as %q", c.name, id, r.RequestID)
		}
	}
	if n := len(log.all()); n != len(cases) {
		t.Fatalf("%d refusals recorded for %d refused requests", n, len(cases))
	}
	if resp, _ := send("DELETE", "/v1/config", ""); resp.Header.Get("Allow") != "GET" {
		t.Errorf("405 without Allow: %v", resp.Header)
	}
	// What the catalog answers is not countersign's refusal.
	if resp, body := send("GET", "/v1/prod/namespaces/db/tables/t", ""); resp.StatusCode != 200 {
		t.Fatalf("loadTable: %d %s", resp.StatusCode, body)
	}
	<-got
	if n := len(log.all()); n != len(cases)+1 {
		t.Fatalf("%d refusals recorded after a forwarded request, want %d", n, len(cases)+1)
	}
}

// jsonText is s as encoding/json writes it inside a string, for
// comparing a message with an answer's body.
func jsonText(s string) string {
	s = strings.ReplaceAll(s, `\`, `\\`)
	return strings.ReplaceAll(s, `"`, `\"`)
}

// TestFrontRecordsBudgetRefusals: the front's 503s for its own limits are
// recorded too, and the recording's answer (here 429) is the one given,
// with the error type of its status.
func TestFrontRecordsBudgetRefusals(t *testing.T) {
	release := make(chan struct{})
	entered := make(chan struct{}, 1)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		entered <- struct{}{}
		<-release
	}))
	defer up.Close()
	defer close(release)
	f := newFront(t, Config{Upstream: up.URL, MaxConcurrency: 1}, nil)
	log := &answering{status: http.StatusTooManyRequests}
	f.rec = log
	front := serveFront(t, f)
	go http.Get(front + "/v1/namespaces")
	<-entered
	resp, err := http.Get(front + "/v1/namespaces")
	if err != nil {
		t.Fatal(err)
	}
	assertErrorModel(t, resp, http.StatusTooManyRequests, "catalog.max_concurrency")
	if len(log.got) != 1 || log.got[0].Status != 503 || log.got[0].Operation != OperationUnknown {
		t.Fatalf("recorded %+v", log.got)
	}
}

// answering records like refusalLog but answers with another status.
type answering struct {
	refusalLog
	status int
}

func (a *answering) Refused(ctx *fasthttp.RequestCtx, r Refusal) Refusal {
	a.refusalLog.Refused(ctx, r)
	r.Status = a.status
	return r
}
