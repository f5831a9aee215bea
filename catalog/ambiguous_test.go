package catalog

import (
	"net/http"
	"strings"
	"testing"

	"github.com/countersign/countersign/auth"
)

// Answers that two JSON parsers read differently: encoding/json keeps the
// last of two equal member names, Jackson's tree model too, serde refuses
// them and first-wins readers exist. The front refuses them, whatever the
// route, rather than forward bytes it read one way.
var ambiguousAnswers = []struct{ name, body string }{
	{"config twice, credentials in the first", `{"config":{"s3.secret-access-key":"SECRET"},"config":{}}`},
	{"overrides twice", `{"overrides":{"s3.access-key-id":"AKIA"},"overrides":null}`},
	{"defaults twice, escaped name", `{"defaults":{"s3.session-token":"T"},"d\u0065faults":{}}`},
	{"storage-credentials twice", `{"storage-credentials":[],"storage-credentials":[{"prefix":"s3://lake","config":{}}]}`},
	{"location twice", `{"metadata":{"location":"s3://lake/a","location":"s3://lake/b"}}`},
	{"invalid UTF-8", "{\"config\":{\"k\":\"\xff\"}}"},
	{"lone surrogate", `{"config":{"s3.secret-access-key\ud800":"x"}}`},
	{"trailing data", `{"config":{}} {"config":{"s3.secret-access-key":"x"}}`},
}

func TestAmbiguousAnswersRefused(t *testing.T) {
	for _, a := range ambiguousAnswers {
		if out, _, _, err := inspect([]byte(a.body)); err == nil {
			t.Errorf("%s: inspect forwarded %s", a.name, out)
		}
		table := `{"metadata":{"location":"s3://lake/t"},` + strings.TrimPrefix(a.body, "{")
		if out, _, err := rewriteTable([]byte(table), signing{signerURI: "u", endpoint: "e"}); err == nil {
			t.Errorf("%s: rewriteTable answered %s", a.name, out)
		}
	}
	// The same members once each are read, so the refusal is the
	// duplicate's and not the members'.
	if out, _, changed, err := inspect([]byte(`{"config":{"s3.secret-access-key":"SECRET"}}`)); err != nil || !changed || strings.Contains(string(out), "SECRET") {
		t.Fatalf("single member: %s %v %v", out, changed, err)
	}
}

// TestAmbiguousAnswersThroughTheFront sends the ambiguous answers through
// the front from a stand-in upstream (no real catalog here sends them) on
// a plain route (answer inspected), the configuration route and loadTable.
func TestAmbiguousAnswersThroughTheFront(t *testing.T) {
	for _, a := range ambiguousAnswers[:3] {
		up, _ := recordingUpstream(t, http.StatusOK, a.body, map[string]string{"Content-Type": "application/json"})
		front := serveFront(t, newFront(t, Config{Upstream: up.URL}, nil))
		for _, p := range []string{"/v1/config", "/v1/namespaces/db/views/v", "/v1/namespaces/db/tables/t"} {
			resp, err := http.Get(front + p)
			if err != nil {
				t.Fatal(err)
			}
			assertErrorModel(t, resp, http.StatusBadGateway, "refuses ambiguous JSON")
		}
	}
}

// TestCreateTableWithTwoNamesRefused: the table a createTable names is
// read from the client's body; two "name" members could make countersign
// learn one table's location under another's name.
func TestCreateTableWithTwoNamesRefused(t *testing.T) {
	up, got := recordingUpstream(t, http.StatusOK, `{"metadata":{"location":"s3://lake/wh/db/b"}}`, map[string]string{"Content-Type": "application/json"})
	front := serveFront(t, newFront(t, Config{Upstream: up.URL}, nil))
	post := func(body string) *http.Response {
		req, _ := http.NewRequest("POST", front+"/v1/namespaces/db/tables", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	assertErrorModel(t, post(`{"name":"a","name":"b","schema":{}}`), http.StatusBadRequest, `two members named "name"`)
	assertErrorModel(t, post(`{"name":"a","schema":{"x":"\xff"}}`), http.StatusBadRequest, "is not strict JSON")
	select {
	case s := <-got:
		t.Fatalf("forwarded to the catalog: %s", s.body)
	default:
	}
	resp := post(`{"name":"b","schema":{}}`)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("single name: %d", resp.StatusCode)
	}
	if s := <-got; s.body != `{"name":"b","schema":{}}` {
		t.Fatalf("forwarded %q", s.body)
	}
}

// TestNamesMatchedExactly: "Location" and "Name" are other members than
// "location" and "name" to Iceberg's parsers; encoding/json's struct
// decoding would take them for the same, and the last one.
func TestNamesMatchedExactly(t *testing.T) {
	doc, err := decodeObject([]byte(`{"metadata":{"location":"s3://lake/wh/db/a","Location":"s3://lake/other"}}`))
	if err != nil {
		t.Fatal(err)
	}
	if loc := tableLocation(doc); loc != "s3://lake/wh/db/a" {
		t.Fatalf("location %q", loc)
	}
	doc, _ = decodeObject([]byte(`{"metadata":{"Location":"s3://lake/other"}}`))
	if loc := tableLocation(doc); loc != "" {
		t.Fatalf("location %q from \"Location\"", loc)
	}

	up, _ := recordingUpstream(t, http.StatusOK, `{"metadata":{"location":"s3://lake/wh/db/a"}}`, map[string]string{"Content-Type": "application/json"})
	f := newFront(t, Config{Upstream: up.URL}, nil)
	front := serveFront(t, f)
	req, _ := http.NewRequest("POST", front+"/v1/namespaces/db/tables", strings.NewReader(`{"name":"a","Name":"b","schema":{}}`))
	req.Header.Set("Authorization", "Bearer ann")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("createTable: %d", resp.StatusCode)
	}
	tok, _ := auth.TokenHash([]byte("Bearer ann"))
	if e, ok := f.locations.cache.Peek(locationKey{tok, "/v1/namespaces/db/tables/a"}); !ok || e.location != "s3://lake/wh/db/a" {
		t.Fatalf("table a: %+v %v", e, ok)
	}
	if _, ok := f.locations.cache.Peek(locationKey{tok, "/v1/namespaces/db/tables/b"}); ok {
		t.Fatal("the location of table a was learned under the name b")
	}
}

// TestTwoAuthorizationHeadersRefused: the front authenticates and learns
// by the first Authorization header, a catalog may act on the last; a
// request with two is refused before anything is forwarded.
func TestTwoAuthorizationHeadersRefused(t *testing.T) {
	up, got := recordingUpstream(t, http.StatusOK, `{"namespaces":[]}`, map[string]string{"Content-Type": "application/json"})
	front := serveFront(t, newFront(t, Config{Upstream: up.URL}, nil))
	get := func(authorizations ...string) *http.Response {
		req, _ := http.NewRequest("GET", front+"/v1/namespaces", nil)
		for _, a := range authorizations {
			req.Header.Add("Authorization", a)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	assertErrorModel(t, get("Bearer alice", "Bearer admin"), http.StatusBadRequest, "more than one Authorization header")
	select {
	case s := <-got:
		t.Fatalf("forwarded to the catalog with %v", s.header["Authorization"])
	default:
	}
	resp := get("Bearer alice")
	resp.Body.Close()
	if s := <-got; resp.StatusCode != http.StatusOK || s.header.Get("Authorization") != "Bearer alice" {
		t.Fatalf("one header: %d, forwarded %v", resp.StatusCode, s.header["Authorization"])
	}
}
