package catalog

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/countersign/countersign/internal/policyinput"
	"github.com/countersign/countersign/policy"
)

// operatorPolicy is the shipped table-scope library over data with one
// table the data locates, a sibling, and a root for the warehouse "prod".
func operatorPolicy(t *testing.T) LocationPolicy {
	t.Helper()
	dir := t.TempDir()
	data := `{"countersign": {
	  "tables": {"prod/db/fixed": {"location": "s3://lake/wh/db/fixed/"}, "prod/db/other": {"location": "s3://lake/wh/db/other/"}},
	  "table_roots": {"prod": "s3://lake/wh/"}}}`
	authz := "package countersign.authz\n\nimport data.countersign.lib.table_scope\n\ndefault allow := false\n\nallow if table_scope.allow\n"
	for name, text := range map[string]string{"data.json": data, "authz.rego": authz} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	eng, err := policy.Load(context.Background(), policy.Options{Paths: []string{"../deploy/policies/lib", dir}})
	if err != nil {
		t.Fatal(err)
	}
	return engineLocations{eng}
}

// engineLocations is a policy.Engine as the front's LocationPolicy
// (serve gives it the policy.Manager, whose method has a context).
type engineLocations struct{ e *policy.Engine }

func (l engineLocations) CheckTableLocation(_ context.Context, t *policyinput.Table, loc string) error {
	return l.e.CheckTableLocation(t, loc)
}

// TestFrontRefusesLocationChanges: a commit with a set-location, and a
// createTable or registerTable at a location the operator's data does not
// allow, are refused before the catalog sees them; a location the catalog
// answers with that the data does not allow is neither served, learned
// nor signed for.
func TestFrontRefusesLocationChanges(t *testing.T) {
	up, got := recordingUpstream(t, http.StatusOK, upstreamTable, map[string]string{"Content-Type": "application/json"})
	f, err := newTestFront(Options{Config: Config{Upstream: up.URL}, Locations: operatorPolicy(t)})
	if err != nil {
		t.Fatal(err)
	}
	front := serveFront(t, f)
	send := func(method, path, body string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(method, front+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer tok")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	setLoc := func(action, loc string) string {
		return `{"requirements":[],"updates":[{"action":"set-properties","updates":{"a":"b"}},{"action":"` + action + `","location":"` + loc + `"}]}`
	}
	for _, c := range []struct {
		name, method, path, body string
		status                   int
		why                      string
	}{
		{"set-location to the bucket", "POST", "/v1/prod/namespaces/db/tables/t", setLoc("set-location", "s3://lake"), 403, "refuses the set-location update on /v1/prod/namespaces/db/tables/t"},
		{"set-location inside the root", "POST", "/v1/prod/namespaces/db/tables/t", setLoc("set-location", "s3://lake/wh/db/t2/"), 403, "set-location"},
		{"set-location in another case", "POST", "/v1/prod/namespaces/db/tables/t", setLoc("SET-Location", "s3://lake"), 403, "set-location"},
		{"set-location under another member spelling", "POST", "/v1/prod/namespaces/db/tables/t", `{"Updates":[{"Action":"set-location","location":"s3://lake"}]}`, 403, "set-location"},
		{"set-location in a transaction", "POST", "/v1/prod/transactions/commit",
			`{"table-changes":[{"identifier":{"namespace":["db"],"name":"u"},"updates":[]},{"identifier":{"namespace":["db"],"name":"t"},"updates":[{"action":"set-location","location":"s3://lake"}]}]}`, 403, "(db.t)"},
		{"set-location in a transaction without a prefix", "POST", "/v1/transactions/commit",
			`{"table-changes":[{"identifier":{"namespace":["db"],"name":"t"},"updates":[{"action":"set-location","location":"s3://lake"}]}]}`, 403, "set-location"},
		{"ambiguous commit", "POST", "/v1/prod/namespaces/db/tables/t", `{"updates":[],"updates":[{"action":"set-location","location":"s3://lake"}]}`, 400, `two members named \"updates\"`},
		{"create at the bucket root", "POST", "/v1/prod/namespaces/db/tables", `{"name":"n","location":"s3://lake/"}`, 403, "not strictly under the operator's root s3://lake/wh/"},
		{"create at another table's location", "POST", "/v1/prod/namespaces/db/tables", `{"name":"n","location":"s3://lake/wh/db/other/"}`, 403, "overlaps table prod/db/other's location"},
		{"create containing another table", "POST", "/v1/prod/namespaces/db/tables", `{"name":"n","location":"s3://lake/wh/db"}`, 403, "overlaps table"},
		{"commit naming another table in its identifier", "POST", "/v1/prod/namespaces/db/tables/t", `{"identifier":{"namespace":["db"],"name":"secret"},"requirements":[],"updates":[]}`, 400, `names \"db.secret\", not the table of the path`},
		{"commit naming another namespace", "POST", "/v1/prod/namespaces/db/tables/t", `{"identifier":{"namespace":["other"],"name":"t"},"updates":[]}`, 400, "not the table of the path"},
		{"commit identifier spelled otherwise", "POST", "/v1/prod/namespaces/db/tables/t", `{"Identifier":{"namespace":["db"],"NAME":"secret"},"updates":[]}`, 400, "refuses other spellings"},
		{"commit identifier not an object", "POST", "/v1/prod/namespaces/db/tables/t", `{"identifier":"db.secret","updates":[]}`, 400, "is not an object"},
		{"create with Location spelled otherwise", "POST", "/v1/prod/namespaces/db/tables", `{"name":"n","Location":"s3://lake/"}`, 400, "refuses other spellings"},
		{"create a located table elsewhere", "POST", "/v1/prod/namespaces/db/tables", `{"name":"fixed","location":"s3://lake/wh/db/fixed2/"}`, 403, "outside the operator's s3://lake/wh/db/fixed/"},
		{"create with no root", "POST", "/v1/nowh/namespaces/db/tables", `{"name":"n","location":"s3://lake/wh/db/n/"}`, 403, "no root in data.countersign.table_roots"},
		{"create with a location not a string", "POST", "/v1/prod/namespaces/db/tables", `{"name":"n","location":7}`, 400, `\"location\" is not a string`},
		{"register another table's metadata", "POST", "/v1/prod/namespaces/db/register", `{"name":"n","metadata-location":"s3://lake/wh/db/other/metadata/v1.metadata.json"}`, 403, "overlaps table prod/db/other's location"},
	} {
		st, body := send(c.method, c.path, c.body)
		if st != c.status || !strings.Contains(body, c.why) {
			t.Errorf("%s: %d %s; want %d naming %q", c.name, st, body, c.status, c.why)
		}
		select {
		case s := <-got:
			t.Errorf("%s: forwarded to the catalog: %s %s", c.name, s.method, s.uri)
		default:
		}
	}
	// What the operator allows is forwarded. (The stand-in answers every
	// request with table t at s3://lake/wh/db/t: for "fixed" that answer
	// is outside the data's location, and refused on the way back.)
	for _, c := range []struct {
		name, path, body string
		status           int
	}{
		{"commit without set-location", "/v1/prod/namespaces/db/tables/t", setLoc("set-properties", "s3://lake"), 200},
		{"commit naming its own table", "/v1/prod/namespaces/db/tables/t", `{"identifier":{"namespace":["db"],"name":"t"},"requirements":[],"updates":[]}`, 200},
		{"create under the root", "/v1/prod/namespaces/db/tables", `{"name":"t","location":"s3://lake/wh/db/t/"}`, 200},
		{"create where the catalog chooses", "/v1/prod/namespaces/db/tables", `{"name":"t"}`, 200},
		{"create a located table narrower", "/v1/prod/namespaces/db/tables", `{"name":"fixed","location":"s3://lake/wh/db/fixed/v2/"}`, 403},
	} {
		if st, body := send("POST", c.path, c.body); st != c.status {
			t.Errorf("%s: %d %s", c.name, st, body)
		}
		if s := <-got; s.body != c.body {
			t.Errorf("%s: the catalog got %q", c.name, s.body)
		}
	}
}

// TestFrontRefusesLocationsOutsideTheOperators: a table answer whose
// location the operator's data does not allow (moved at the catalog by
// any committer) is refused, and the sign route's location lookup
// refuses it too.
func TestFrontRefusesLocationsOutsideTheOperators(t *testing.T) {
	moved := strings.Replace(upstreamTable, `"location": "s3://lake/wh/db/t"`, `"location": "s3://lake"`, 1)
	if moved == upstreamTable {
		t.Fatal("the test table has no location to move")
	}
	up, got := recordingUpstream(t, http.StatusOK, moved, map[string]string{"Content-Type": "application/json"})
	f, err := newTestFront(Options{Config: Config{Upstream: up.URL}, Locations: operatorPolicy(t)})
	if err != nil {
		t.Fatal(err)
	}
	front := serveFront(t, f)
	req, _ := http.NewRequest("GET", front+"/v1/prod/namespaces/db/tables/t", nil)
	req.Header.Set("Authorization", "Bearer tok")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	<-got
	if resp.StatusCode != 403 || !strings.Contains(string(b), "not strictly under the operator's root s3://lake/wh/") || strings.Contains(string(b), "metadata") {
		t.Fatalf("loadTable at a refused location: %d %s", resp.StatusCode, b)
	}
	_, err = f.Locate(ctxT(t), [32]byte{1}, []byte("Bearer tok"), "/v1/prod/namespaces/db/tables/t")
	<-got
	var lr *LocationRefusedError
	if !errors.As(err, &lr) || !strings.Contains(err.Error(), "not strictly under") {
		t.Fatalf("Locate of a table at a refused location: %v", err)
	}
	if r, ok := err.(interface{ Retryable() bool }); !ok || r.Retryable() {
		t.Fatal("a refused location is retryable: the sign route would answer 503, not 403")
	}
}

// TestFrontRefusesOverlappingTables: where the operator gives only a root,
// a location that contains or lies inside another table the front has
// seen is refused, from a table answer and before a createTable; once the
// catalog no longer has that table (404 when asked again), it is
// forgotten.
func TestFrontRefusesOverlappingTables(t *testing.T) {
	var mu sync.Mutex
	tables := map[string]string{ // path -> location
		"/v1/prod/namespaces/db/tables/t":     "s3://lake/wh/db/t",
		"/v1/prod/namespaces/db/tables/copy":  "s3://lake/wh/db/t",
		"/v1/prod/namespaces/db/tables/inner": "s3://lake/wh/db/t/inner",
	}
	forwarded := 0
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		forwarded++
		path := r.URL.Path
		if r.Method == "POST" && path == "/v1/prod/namespaces/db/tables" {
			var req struct{ Name, Location string }
			json.NewDecoder(r.Body).Decode(&req)
			path += "/" + req.Name
			tables[path] = req.Location
		}
		loc, ok := tables[path]
		if !ok {
			w.WriteHeader(404)
			io.WriteString(w, `{"error":{"message":"no such table","type":"NoSuchTableException","code":404}}`)
			return
		}
		io.WriteString(w, strings.Replace(upstreamTable, `"location": "s3://lake/wh/db/t"`, `"location": "`+loc+`"`, 1))
	}))
	t.Cleanup(up.Close)
	f, err := newTestFront(Options{Config: Config{Upstream: up.URL}, Locations: operatorPolicy(t)})
	if err != nil {
		t.Fatal(err)
	}
	front := serveFront(t, f)
	send := func(method, path, body string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(method, front+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer tok")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if st, b := send("GET", "/v1/prod/namespaces/db/tables/t", ""); st != 200 {
		t.Fatalf("load t: %d %s", st, b)
	}
	for _, name := range []string{"copy", "inner"} {
		st, b := send("GET", "/v1/prod/namespaces/db/tables/"+name, "")
		if st != 403 || !strings.Contains(b, "lies inside the location of another table countersign knows") || strings.Contains(b, "tables/t:") {
			t.Errorf("load %s, at or around t's location: %d %s", name, st, b)
		}
	}
	if _, err := f.Locate(ctxT(t), [32]byte{2}, []byte("Bearer tok"), "/v1/prod/namespaces/db/tables/copy"); err == nil || !strings.Contains(err.Error(), "another table") {
		t.Errorf("Locate of a table at t's location: %v", err)
	}
	mu.Lock()
	before := forwarded
	mu.Unlock()
	st, b := send("POST", "/v1/prod/namespaces/db/tables", `{"name":"inside","location":"s3://lake/wh/db/t/inside/"}`)
	mu.Lock()
	after := forwarded
	mu.Unlock()
	// One request reached the catalog: the front asking again about t
	// (still there), not the createTable.
	if st != 403 || !strings.Contains(b, "another table countersign knows") || after-before != 1 {
		t.Errorf("create inside t: %d %s (%d requests reached the catalog)", st, b, after-before)
	}
	if _, ok := tables["/v1/prod/namespaces/db/tables/inside"]; ok {
		t.Error("the catalog created the table inside t")
	}
	// t dropped at the catalog: asked again, forgotten, and copy is served.
	mu.Lock()
	delete(tables, "/v1/prod/namespaces/db/tables/t")
	mu.Unlock()
	if st, b := send("GET", "/v1/prod/namespaces/db/tables/copy", ""); st != 200 {
		t.Fatalf("load copy after t was dropped: %d %s", st, b)
	}
}

// FuzzTableChange: whatever the body of a commit, decideTableChange never
// panics, and a body that strict JSON readers read as carrying a
// set-location update (member names and action in any letter case) is
// never let through.
func FuzzTableChange(f *testing.F) {
	for _, s := range []string{
		`{"updates":[{"action":"set-location","location":"s3://lake"}]}`,
		`{"UPDATES":[{"Action":"SET-LOCATION","location":"s3://lake"}]}`,
		`{"updates":[{"action":"set-properties","updates":{"location":"s3://lake"}}]}`,
		`{"updates":{"action":"set-location"}}`,
		`{"updates":[],"updates":[{"action":"set-location"}]}`,
		`{"table-changes":[{"updates":[{"action":"set-location","location":"s3://x"}]}]}`,
		`{"updates":[{"action":"set-location","action":"add-snapshot"}]}`,
		`{"updates":[{"action":"set-\u006cocation"}]}`,
		`{"identifier":{"namespace":["db"],"name":"t"},"updates":[]}`,
		`{"identifier":{"namespace":["db"],"name":"secret"},"updates":[]}`,
		`{"Identifier":{"namespace":["db"],"Name":"secret"},"updates":[]}`,
		`{"identifier":{"namespace":["db"],"name":"t","NAME":"secret"},"updates":[]}`,
		`[]`, ``, `null`,
	} {
		f.Add([]byte(s))
	}
	fr, err := New(Options{Config: Config{Upstream: "http://127.0.0.1:1"}})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, kind := range []changeKind{changeCommit, changeTransaction} {
			table := policyinput.Table{Namespace: []string{"db"}, Name: "t"}
			st, _ := fr.decideTableChange(context.Background(), tableChange{kind: kind, what: "t", table: table}, nil, body)
			if st != 0 || checkStrict(body) != nil {
				continue
			}
			var doc any
			if json.Unmarshal(body, &doc) != nil {
				continue
			}
			if kind == changeCommit && hasSetLocation(doc) {
				t.Fatalf("commit %s let through", body)
			}
			if kind == changeCommit && namesOtherTable(doc) {
				t.Fatalf("commit naming another table %s let through", body)
			}
			if m, ok := doc.(map[string]any); ok && kind == changeTransaction {
				for k, v := range m {
					if !strings.EqualFold(k, "table-changes") {
						continue
					}
					for _, ch := range v.([]any) {
						if hasSetLocation(ch) {
							t.Fatalf("transaction %s let through", body)
						}
					}
				}
			}
		}
	})
}

// namesOtherTable is the fuzz oracle for a commit's identifier: an
// "identifier" member (any case) whose "namespace" or "name" (any case)
// is other than db.t, as a case-insensitive decoder reads it.
func namesOtherTable(v any) bool {
	m, _ := v.(map[string]any)
	for k, id := range m {
		if !strings.EqualFold(k, "identifier") || id == nil {
			continue
		}
		im, ok := id.(map[string]any)
		if !ok {
			return true
		}
		for ik, iv := range im {
			switch {
			case strings.EqualFold(ik, "name") && iv != "t":
				return true
			case strings.EqualFold(ik, "namespace"):
				ns, _ := iv.([]any)
				if len(ns) != 1 || ns[0] != "db" {
					return true
				}
			}
		}
	}
	return false
}

// hasSetLocation is the fuzz oracle: an "updates" member (any case) whose
// elements have an "action" member (any case) folding to set-location.
func hasSetLocation(v any) bool {
	m, ok := v.(map[string]any)
	if !ok {
		return false
	}
	for k, u := range m {
		if !strings.EqualFold(k, "updates") {
			continue
		}
		list, _ := u.([]any)
		for _, e := range list {
			em, _ := e.(map[string]any)
			for ak, a := range em {
				if s, ok := a.(string); ok && strings.EqualFold(ak, "action") && strings.EqualFold(s, "set-location") {
					return true
				}
			}
		}
	}
	return false
}

// TestHiddenTableNotForgotten: a catalog that hides a table from callers
// without access answers them 404, as if it were gone. Another caller's
// 404 must not free a known table's location (it would then create or
// load a table at it and be signed the hidden table's objects); the
// caller it was learned from, or a drop through the front, does.
func TestHiddenTableNotForgotten(t *testing.T) {
	var mu sync.Mutex
	tables := map[string]string{
		"/v1/prod/namespaces/db/tables/t":    "s3://lake/wh/db/t",
		"/v1/prod/namespaces/db/tables/mine": "s3://lake/wh/db/t",
	}
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case r.Method == "DELETE":
			delete(tables, r.URL.Path)
			w.WriteHeader(204)
			return
		case r.URL.Path == "/v1/prod/tables/rename":
			tables["/v1/prod/namespaces/db/tables/t2"] = tables["/v1/prod/namespaces/db/tables/t"]
			delete(tables, "/v1/prod/namespaces/db/tables/t")
			w.WriteHeader(204)
			return
		}
		loc, ok := tables[r.URL.Path]
		hidden := strings.HasSuffix(r.URL.Path, "/t") || strings.HasSuffix(r.URL.Path, "/t2")
		if !ok || hidden && r.Header.Get("Authorization") != "Bearer owner" {
			w.WriteHeader(404)
			io.WriteString(w, `{"error":{"message":"no such table","type":"NoSuchTableException","code":404}}`)
			return
		}
		io.WriteString(w, strings.Replace(upstreamTable, `"location": "s3://lake/wh/db/t"`, `"location": "`+loc+`"`, 1))
	}))
	t.Cleanup(up.Close)
	f, err := newTestFront(Options{Config: Config{Upstream: up.URL}, Locations: operatorPolicy(t)})
	if err != nil {
		t.Fatal(err)
	}
	front := serveFront(t, f)
	send := func(token, method, path string, body ...string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(method, front+path, strings.NewReader(strings.Join(body, "")))
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if st, b := send("owner", "GET", "/v1/prod/namespaces/db/tables/t"); st != 200 {
		t.Fatalf("owner loads t: %d %s", st, b)
	}
	// The attacker's table at t's location: the catalog hides t from it.
	if st, b := send("attacker", "GET", "/v1/prod/namespaces/db/tables/mine"); st != 403 || !strings.Contains(b, "another table countersign knows") {
		t.Fatalf("attacker's table at the hidden table's location: %d %s", st, b)
	}
	if _, err := f.Locate(ctxT(t), [32]byte{9}, []byte("Bearer attacker"), "/v1/prod/namespaces/db/tables/mine"); err == nil {
		t.Fatal("Locate served the attacker's table at the hidden table's location")
	}
	// Renamed through the front: known under its new name.
	if st, b := send("owner", "POST", "/v1/prod/tables/rename", `{"source":{"namespace":["db"],"name":"t"},"destination":{"namespace":["db"],"name":"t2"}}`); st != 204 {
		t.Fatalf("rename t: %d %s", st, b)
	}
	if st, b := send("attacker", "GET", "/v1/prod/namespaces/db/tables/mine"); st != 403 {
		t.Fatalf("attacker's table after t was renamed: %d %s", st, b)
	}
	// Dropped through the front: forgotten, the location is free.
	if st, b := send("owner", "DELETE", "/v1/prod/namespaces/db/tables/t2"); st != 204 {
		t.Fatalf("drop t: %d %s", st, b)
	}
	if st, b := send("attacker", "GET", "/v1/prod/namespaces/db/tables/mine"); st != 200 {
		t.Fatalf("after t was dropped: %d %s", st, b)
	}
}

// TestReadBodiesDecodedAsUTF8: the bodies the front reads (a table's name
// and location) must be the text the catalog reads. A servlet decodes by
// the Content-Type's charset; a compressed body is decoded by the catalog,
// not the front. Both are refused before anything is forwarded.
func TestReadBodiesDecodedAsUTF8(t *testing.T) {
	up, got := recordingUpstream(t, http.StatusOK, `{"metadata":{"location":"s3://lake/wh/db/x"}}`, map[string]string{"Content-Type": "application/json"})
	front := serveFront(t, newFront(t, Config{Upstream: up.URL}, nil))
	post := func(path, body string, hdr ...string) int {
		req, _ := http.NewRequest("POST", front+path, strings.NewReader(body))
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	create := `{"name":"ä","schema":{}}`
	for _, c := range []struct{ path, ct, ce string }{
		{"/v1/namespaces/db/tables", "application/json; charset=ISO-8859-1", ""},
		{"/v1/namespaces/db/tables", "application/json; charset=utf-16", ""},
		{"/v1/namespaces/db/register", "application/json;charset=windows-1252", ""},
		{"/v1/namespaces/db/tables/t", "application/json; charset=latin1", ""},
		{"/v1/transactions/commit", "application/json; charset=\"iso-8859-1\"", ""},
		{"/v1/tables/rename", "application/json; charset=ascii", ""},
		{"/v1/namespaces/db/tables", "application/json; charset", ""},
		{"/v1/namespaces/db/tables", "application/json", "gzip"},
	} {
		if st := post(c.path, create, "Content-Type", c.ct, "Content-Encoding", c.ce); st != http.StatusBadRequest {
			t.Errorf("%s %q %q: %d", c.path, c.ct, c.ce, st)
		}
		select {
		case s := <-got:
			t.Fatalf("%s %q reached the catalog: %s", c.path, c.ct, s.body)
		default:
		}
	}
	// Without a charset, a servlet reads only application/json as UTF-8.
	for _, ct := range []string{"", "text/plain", "application/octet-stream"} {
		if st := post("/v1/namespaces/db/tables", create, "Content-Type", ct); st != http.StatusBadRequest {
			t.Errorf("non-ASCII body as %q: %d", ct, st)
		}
		select {
		case s := <-got:
			t.Fatalf("%q reached the catalog: %s", ct, s.body)
		default:
		}
	}
	for _, c := range [][2]string{{"application/json", create}, {"application/json; charset=UTF-8", create}, {"Application/JSON;charset=utf-8", create},
		{"", `{"name":"\u00e4","schema":{}}`}, {"text/plain", `{"name":"\u00e4","schema":{}}`}} {
		if st := post("/v1/namespaces/db/tables", c[1], "Content-Type", c[0]); st != http.StatusOK {
			t.Errorf("%q %s: %d", c[0], c[1], st)
		}
		<-got
	}
	// A route whose body the front does not read streams it as it came.
	if st := post("/v1/namespaces/db/properties", `{"updates":{}}`, "Content-Type", "application/json; charset=ISO-8859-1"); st != http.StatusOK {
		t.Errorf("updateProperties: %d", st)
	}
	<-got
}
