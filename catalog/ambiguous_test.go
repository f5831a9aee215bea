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

// TestOtherSpellingsRefused: "Location", "NAME" and "Storage-Credentials"
// are other members than "location", "name" and "storage-credentials" to
// Iceberg's Java parsers, and the same ones to a decoder that matches a
// struct's fields case-insensitively (encoding/json: SeaweedFS's catalog,
// iceberg-go), which takes the last. The front reads by the exact name;
// any other spelling of a member it reads is refused, in answers and in
// the table requests whose name and location it reads.
func TestOtherSpellingsRefused(t *testing.T) {
	for _, body := range []string{
		`{"metadata":{"location":"s3://lake/wh/db/a","Location":"s3://lake/other"}}`,
		`{"metadata":{"LOCATION":"s3://lake/other"}}`,
		`{"metadata":{"location":"s3://lake/wh/db/a","Properties":{"s3.secret-access-key":"SECRET"}}}`,
		`{"metadata":{"location":"s3://lake/wh/db/a"},"Storage-Credentials":[{"prefix":"s3://lake","config":{"s3.secret-access-key":"SECRET"}}]}`,
		`{"metadata":{"location":"s3://lake/wh/db/a"},"config":{},"CONFIG":{"s3.secret-access-key":"SECRET"}}`,
		`{"metadata":{"location":"s3://lake/wh/db/a"},"Config":{"s3.secret-access-key":"SECRET"}}`,
		`{"metadata":{"location":"s3://lake/wh/db/a"},"Overrides":{"s3.access-key-id":"AKIA"}}`,
		`{"metadata":{"location":"s3://lake/wh/db/a"},"ſtorage-credentials":[]}`, // U+017F folds to 's'
		`{"metadata":{"location":"s3://lake/wh/db/a"},"Remote-Signing-Config":{"s3.secret-access-key":"SECRET"}}`,
	} {
		if out, _, _, err := inspect([]byte(body)); err == nil {
			t.Errorf("inspect forwarded %s", out)
		}
		if out, _, err := rewriteTable([]byte(body), signing{signerURI: "u", endpoint: "e"}); err == nil {
			t.Errorf("rewriteTable answered %s", out)
		}
	}
	// Through the front, on loadTable and loadView.
	up, _ := recordingUpstream(t, http.StatusOK, `{"metadata":{"location":"s3://lake/wh/db/a"},"Storage-Credentials":[{"prefix":"s3://lake","config":{"s3.secret-access-key":"SECRET"}}]}`,
		map[string]string{"Content-Type": "application/json"})
	front := serveFront(t, newFront(t, Config{Upstream: up.URL}, nil))
	for _, p := range []string{"/v1/namespaces/db/tables/a", "/v1/namespaces/db/views/v"} {
		resp, err := http.Get(front + p)
		if err != nil {
			t.Fatal(err)
		}
		assertErrorModel(t, resp, http.StatusBadGateway, `"Storage-Credentials"`)
	}

	// The exact spelling is read.
	doc, err := decodeObject([]byte(`{"metadata":{"location":"s3://lake/wh/db/a","Other":"x"}}`))
	if err != nil || tableLocation(doc) != "s3://lake/wh/db/a" {
		t.Fatalf("location %v %v", doc, err)
	}

	up, got := recordingUpstream(t, http.StatusOK, `{"metadata":{"location":"s3://lake/wh/db/a"}}`, map[string]string{"Content-Type": "application/json"})
	f := newFront(t, Config{Upstream: up.URL}, nil)
	front = serveFront(t, f)
	post := func(body string) *http.Response {
		req, _ := http.NewRequest("POST", front+"/v1/namespaces/db/tables", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer ann")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	for _, body := range []string{
		`{"name":"a","Name":"b","schema":{}}`,
		`{"NAME":"b","schema":{}}`,
		`{"name":"a","Location":"s3://lake/other","schema":{}}`,
	} {
		assertErrorModel(t, post(body), http.StatusBadRequest, "refuses other spellings")
	}
	select {
	case s := <-got:
		t.Fatalf("forwarded to the catalog: %s", s.body)
	default:
	}
	resp := post(`{"name":"a","schema":{}}`)
	resp.Body.Close()
	<-got
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("createTable: %d", resp.StatusCode)
	}
	tok, _ := auth.TokenHash([]byte("Bearer ann"))
	if e, ok := f.locations.cache.Peek(locationKey{tok, "/v1/namespaces/db/tables/a"}); !ok || e.location != "s3://lake/wh/db/a" {
		t.Fatalf("table a: %+v %v", e, ok)
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
