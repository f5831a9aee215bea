package server

import (
	"context"
	"errors"
	"testing"

	"github.com/valyala/fasthttp"

	"github.com/countersign/countersign/catalog"
)

// fakeTables stands in for *catalog.Front's TableLocator side (the real
// front against a real catalog is tested in e2e/catalog_test.go): it
// answers one location per raw table path, or err.
type fakeTables struct {
	locations map[string]string
	err       error
	sep       string
	asked     []string
}

type retryable struct{ error }

func (retryable) Retryable() bool { return true }

func (f *fakeTables) Locate(_ context.Context, token [32]byte, authorization []byte, table string) (string, error) {
	f.asked = append(f.asked, table)
	if token == ([32]byte{}) || len(authorization) == 0 {
		return "", errors.New("no token")
	}
	if f.err != nil {
		return "", f.err
	}
	loc, ok := f.locations[table]
	if !ok {
		return "", errors.New("the catalog refused this caller table " + table + " (HTTP 404)")
	}
	return loc, nil
}

func (f *fakeTables) NamespaceSeparator() string { return f.sep }

type fakeFront struct{ path, base string }

func (f *fakeFront) Serve(ctx *fasthttp.RequestCtx, path, base string, _ catalog.Vendor, _ catalog.Refusals) {
	f.path, f.base = path, base
	ctx.SetStatusCode(299)
}

const locationPolicy = `package countersign.authz

default allow := false

allow if {
	input.table.location == "s3://lake/wh/db/t"
	startswith(input.resource.key, "wh/db/t/")
}
`

func TestTableLocationFromTheCatalog(t *testing.T) {
	tables := &fakeTables{locations: map[string]string{
		"/v1/prod/namespaces/db/tables/t": "s3://lake/wh/db/t",
		"/v1/namespaces/a.b/tables/t":     "s3://lake/wh/db/t",
	}, sep: "."}
	s := newTestServer(t, locationPolicy, nil, Options{Tables: tables, BasePaths: []string{"/catalog"}})
	in := signBody("GET", "http://localhost:7070/lake/wh/db/t/data/f.parquet")
	out := signBody("GET", "http://localhost:7070/lake/wh/db/t2/data/f.parquet")
	if r := do(t, s, "POST", "/catalog/v1/prod/namespaces/db/tables/t/sign", in); r.status != 200 {
		t.Fatalf("inside the location: %d %s", r.status, r.raw)
	}
	if tables.asked[0] != "/v1/prod/namespaces/db/tables/t" {
		t.Fatalf("asked for %q", tables.asked[0])
	}
	if r := do(t, s, "POST", "/v1/prod/namespaces/db/tables/t/sign", out); r.status != 403 {
		t.Fatalf("outside the location: %d %s", r.status, r.raw)
	}
	// The catalog's separator splits the namespace.
	if r := do(t, s, "POST", "/v1/namespaces/a.b/tables/t/sign", in); r.status != 200 {
		t.Fatalf("separator: %d %s", r.status, r.raw)
	}
	// A table the catalog refuses the caller: nothing signed.
	r := do(t, s, "POST", "/v1/prod/namespaces/db/tables/other/sign", in)
	if r.status != 403 || r.body["error"].(map[string]any)["message"] != "the catalog refused this caller table /v1/prod/namespaces/db/tables/other (HTTP 404); nothing was signed" {
		t.Fatalf("refused: %d %s", r.status, r.raw)
	}
	// The legacy route names no table and asks nothing.
	n := len(tables.asked)
	do(t, s, "POST", "/v1/aws/s3/sign", in)
	if len(tables.asked) != n {
		t.Fatal("the legacy route asked the catalog")
	}
	// The catalog cannot be asked: 503, nothing signed.
	tables.err = retryable{errors.New("the catalog could not be asked")}
	if r := do(t, s, "POST", "/v1/prod/namespaces/db/tables/t/sign", in); r.status != 503 || r.header["Retry-After"] != "1" {
		t.Fatalf("unavailable: %d %v %s", r.status, r.header, r.raw)
	}
}

func TestCatalogFrontGetsOtherRoutes(t *testing.T) {
	front := &fakeFront{}
	s := newTestServer(t, testPolicy, nil, Options{Catalog: front, BasePaths: []string{"/catalog", "/catalog/v2"}})
	for path, want := range map[string][2]string{
		"/v1/config":                      {"/v1/config", ""},
		"/catalog/v1/namespaces":          {"/v1/namespaces", "/catalog"},
		"/catalog/v2/v1/namespaces/db":    {"/v1/namespaces/db", "/catalog/v2"},
		"/catalogue/v1/oauth/tokens":      {"/catalogue/v1/oauth/tokens", ""},
		"/v1/namespaces/db/tables/t":      {"/v1/namespaces/db/tables/t", ""},
		"/v1/namespaces/db/tables/t/plan": {"/v1/namespaces/db/tables/t/plan", ""},
	} {
		front.path, front.base = "", ""
		if r := do(t, s, "GET", path, ""); r.status != 299 || front.path != want[0] || front.base != want[1] {
			t.Errorf("%s: %d, front got %q %q", path, r.status, front.path, front.base)
		}
	}
	// countersign's own routes never reach it.
	front.path = ""
	for _, path := range []string{"/healthz", "/v1/aws/s3/sign", "/catalog/v1/namespaces/db/tables/t/sign"} {
		do(t, s, "POST", path, signBody("GET", "http://localhost:7070/lake/f"))
		if front.path != "" {
			t.Fatalf("%s reached the front", path)
		}
	}
	// Without a front, other routes are 404 as before.
	s = newTestServer(t, testPolicy, nil, Options{})
	if r := do(t, s, "GET", "/v1/config", ""); r.status != 404 {
		t.Fatalf("no front: %d", r.status)
	}
}
