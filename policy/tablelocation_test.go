package policy_test

import (
	"context"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/storage/inmem"

	"github.com/countersign/countersign/policy"
)

// locationData is operator data with every kind of table: one the data
// locates, ones only a root places, one whose namespace has its own root,
// one whose root is not a location, one with no root at all.
const locationData = `{"countersign": {
  "tables": {
    "prod/db/t":     {"grants": {"analysts": ["read"]}},
    "prod/db/op":    {"location": "s3://lake/wh/op/", "grants": {"analysts": ["read"]}},
    "prod/db/t2":    {"location": "s3://lake/wh/db/t2", "grants": {"analysts": ["read"]}},
    "prod/db.sub/e": {"grants": {"analysts": ["read"]}},
    "prod/x/bad":    {"grants": {"analysts": ["read"]}},
    "other/db/none": {"grants": {"analysts": ["read"]}}
  },
  "table_roots": {"prod": "s3://lake/wh/", "prod/db.sub": "s3://lake/wh/subs/", "prod/x": "gs://lake/x/"}
}}`

func loadLocationPolicy(t *testing.T) *policy.Engine {
	t.Helper()
	dir := t.TempDir()
	authz, err := os.ReadFile(filepath.Join(examplesDir, "table-scope", "authz.rego"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "authz.rego"), authz, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "data.json"), []byte(locationData), 0o644); err != nil {
		t.Fatal(err)
	}
	eng, err := policy.Load(context.Background(), policy.Options{Paths: []string{libDir, dir}})
	if err != nil {
		t.Fatal(err)
	}
	return eng
}

// TestCatalogLocationOnlyNarrows: a location the catalog gives (any
// committer can set it) never widens what the operator's data allows:
// it replaces neither the data's location nor escapes a root, and a table
// with neither is refused.
func TestCatalogLocationOnlyNarrows(t *testing.T) {
	eng := loadLocationPolicy(t)
	tbl := func(prefix, ns, name string) *policy.Table {
		return &policy.Table{Prefix: prefix, Namespace: strings.Split(ns, "."), Name: name}
	}
	for _, c := range []struct {
		table *policy.Table
		loc   string
		why   string // "" allowed
	}{
		{tbl("prod", "db", "op"), "s3://lake/wh/op", ""},
		{tbl("prod", "db", "op"), "s3://lake/wh/op/current/", ""},
		{tbl("prod", "db", "op"), "s3://lake/wh/", "outside the operator's s3://lake/wh/op/"},
		{tbl("prod", "db", "op"), "s3://lake/", "outside the operator's"},
		{tbl("prod", "db", "op"), "s3://lake/wh/db/t2/", "outside the operator's"},
		{tbl("prod", "db", "t"), "s3://lake/wh/db/t", ""},
		{tbl("prod", "db", "t"), "s3://lake", "not strictly under the operator's root s3://lake/wh/"},
		{tbl("prod", "db", "t"), "s3://lake/wh/", "not strictly under"},
		{tbl("prod", "db", "t"), "s3://lake/wh/db/t2/", "overlaps table prod/db/t2's location"},
		{tbl("prod", "db", "t"), "s3://lake/wh/db/", "overlaps table prod/db/t2's location"},
		{tbl("prod", "db", "t"), "s3://lake/wh/subs/", "contains the root"},
		{tbl("prod", "db", "t"), "s3://lake/wh/subs/t/", "lies inside the root s3://lake/wh/subs/"},
		{tbl("prod", "db", "t"), "s3://lake/wh/db/../op/", "path segment"},
		{tbl("prod", "db", "t"), "s3://lake/wh/db//t/", "path segment"},
		{tbl("prod", "db", "t"), "gs://lake/wh/db/t/", "not an s3:// location"},
		{tbl("prod", "db.sub", "e"), "s3://lake/wh/subs/e/", ""},
		{tbl("prod", "db.sub", "e"), "s3://lake/wh/db/e/", "not strictly under the operator's root s3://lake/wh/subs/"},
		{tbl("prod", "x", "bad"), "s3://lake/x/bad/", "is not an s3:// location"},
		{tbl("other", "db", "none"), "s3://lake/wh/db/none/", `no root in data.countersign.table_roots (keys "other/db", "other")`},
	} {
		err := eng.CheckTableLocation(c.table, c.loc)
		switch {
		case c.why == "" && err != nil:
			t.Errorf("%+v at %s refused: %v", c.table, c.loc, err)
		case c.why != "" && (err == nil || !strings.Contains(err.Error(), c.why)):
			t.Errorf("%+v at %s: %v, want an error naming %q", c.table, c.loc, err, c.why)
		}
	}
}

// TestCheckTableLocationMatchesLibrary holds the front's Go form of the
// rule to the library's: over a grid of tables and locations, a read
// under the location on the table's route is allowed by the policy
// exactly when CheckTableLocation accepts the location.
func TestCheckTableLocationMatchesLibrary(t *testing.T) {
	eng := loadLocationPolicy(t)
	ctx := context.Background()
	tables := []*policy.Table{
		{Prefix: "prod", Namespace: []string{"db"}, Name: "t"},
		{Prefix: "prod", Namespace: []string{"db"}, Name: "op"},
		{Prefix: "prod", Namespace: []string{"db"}, Name: "t2"},
		{Prefix: "prod", Namespace: []string{"db", "sub"}, Name: "e"},
		{Prefix: "prod", Namespace: []string{"x"}, Name: "bad"},
		{Prefix: "other", Namespace: []string{"db"}, Name: "none"},
	}
	prefixes := []string{"", "wh", "wh/", "wh/db", "wh/db/t", "wh/db/t/", "wh/db/t2", "wh/db/t2/x", "wh/op", "wh/op/n",
		"wh/subs", "wh/subs/e", "wh/subs/e/x", "wh/db//t", "wh/./t", "wh/db/../op", "x/bad", "x/y/"}
	n, allowed := 0, 0
	for _, tb := range tables {
		for _, scheme := range []string{"s3://", "s3a://", "gs://"} {
			for _, bucket := range []string{"lake", "other"} {
				for _, p := range prefixes {
					loc := scheme + bucket + "/" + p
					table := *tb
					table.Location = loc
					key := strings.TrimSuffix(p, "/") + "/f.parquet"
					in := &policy.Input{
						Version: 1, Principal: &policy.Principal{ID: "ann", Groups: []string{"analysts"}},
						Operation: "GetObject", Action: "s3:GetObject", Access: "read",
						Resource: policy.Resource{Bucket: bucket, Key: strings.TrimPrefix(key, "/"), ARN: "arn:aws:s3:::" + bucket + "/" + key},
						Table:    &table,
						Request:  policy.Request{Method: "GET", Headers: policy.HeadersOf(map[string]string{})},
					}
					d, err := eng.Authorize(ctx, in)
					if err != nil {
						t.Fatal(err)
					}
					cerr := eng.CheckTableLocation(tb, loc)
					if d.Allow != (cerr == nil) {
						t.Errorf("%+v at %q: policy allow %v (%s), CheckTableLocation %v", tb, loc, d.Allow, d.Reason, cerr)
					}
					n++
					if d.Allow {
						allowed++
					}
				}
			}
		}
	}
	if allowed == 0 || allowed == n {
		t.Fatalf("%d of %d cases allowed: the grid does not test both sides", allowed, n)
	}
	t.Logf("%d cases, %d allowed", n, allowed)
}

func FuzzParseLocation(f *testing.F) {
	for _, s := range []string{"s3://lake/wh/db/t", "s3a://lake/", "s3n://lake", "s3://", "s3:///x", "gs://lake/x", "s3://lake//x", "s3://lake/a/../b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		l, ok := policy.ParseLocation(s)
		if !ok {
			return
		}
		if l.Bucket == "" || strings.Contains(l.Bucket, "/") || l.Prefix != "" && !strings.HasSuffix(l.Prefix, "/") {
			t.Fatalf("ParseLocation(%q) = %+v", s, l)
		}
		again, ok := policy.ParseLocation(l.String())
		if !ok || again != l || !l.Within(l) || l.StrictlyWithin(l) {
			t.Fatalf("ParseLocation(%q) = %+v, its String %q reads %+v", s, l, l.String(), again)
		}
	})
}

// TestCatalogLocationNeverWidensGrant: on the shipped table-scope example,
// a catalog location moved by a committer (set-location to the bucket, to
// the namespace, to a sibling table) lets t's route reach nothing outside
// t's location in the data.
func TestCatalogLocationNeverWidensGrant(t *testing.T) {
	eng, err := policy.Load(context.Background(), policy.Options{Paths: []string{libDir, filepath.Join(examplesDir, "table-scope")}})
	if err != nil {
		t.Fatal(err)
	}
	for _, loc := range []string{"s3://lake", "s3://lake/wh/db/", "s3://lake/wh/db/t2/", "s3://lake/elsewhere/"} {
		for _, key := range []string{"wh/db/t2/metadata/v1.metadata.json", "elsewhere/f.parquet", "wh/db/t/data/f.parquet"} {
			in := &policy.Input{
				Version: 1, Principal: &policy.Principal{ID: "eve", Groups: []string{"etl"}},
				Operation: "DeleteObject", Action: "s3:DeleteObject", Access: "delete",
				Resource: policy.Resource{Bucket: "lake", Key: key, ARN: "arn:aws:s3:::lake/" + key},
				Table:    &policy.Table{Prefix: "prod", Namespace: []string{"db"}, Name: "t", Location: loc},
				Request:  policy.Request{Method: "DELETE", Headers: policy.HeadersOf(map[string]string{})},
			}
			d, err := eng.Authorize(context.Background(), in)
			if err != nil {
				t.Fatal(err)
			}
			if d.Allow {
				t.Errorf("table t moved by its catalog to %s: delete of %s allowed", loc, key)
			}
		}
	}
}

// BenchmarkCatalogLocationDecision: sign decisions on the per-table route
// with the catalog's location, where a root places the table (the rule's
// most expensive case: every located table and root is checked), once the
// fast path has the scope's residual (warmed first), over 26 keys.
func BenchmarkCatalogLocationDecision(b *testing.B) {
	t := &testing.T{}
	eng := loadLocationPolicy(t)
	in := &policy.Input{
		Version: 1, Principal: &policy.Principal{ID: "ann", Groups: []string{"analysts"}},
		Operation: "GetObject", Action: "s3:GetObject", Access: "read",
		Resource: policy.Resource{Bucket: "lake", ARN: "arn:aws:s3:::lake/wh/db/t/data/f.parquet"},
		Table:    &policy.Table{Prefix: "prod", Namespace: []string{"db"}, Name: "t", Location: "s3://lake/wh/db/t"},
		Request:  policy.Request{Method: "GET", Headers: policy.HeadersOf(map[string]string{})},
	}
	keys := make([]string, 26)
	for i := range keys {
		keys[i] = "wh/db/t/data/f" + string(rune('a'+i)) + ".parquet"
	}
	ctx := context.Background()
	for i := range 50 { // the residual is built in the background
		in.Resource.Key = keys[i%len(keys)]
		if _, err := eng.Authorize(ctx, in); err != nil {
			b.Fatal(err)
		}
		time.Sleep(2 * time.Millisecond)
	}
	i := 0
	for b.Loop() {
		in.Resource.Key = keys[i%len(keys)]
		i++
		if d, err := eng.Authorize(ctx, in); err != nil || !d.Allow {
			b.Fatal(err, d.Reason)
		}
	}
}

// TestCatalogAcceptedMatchesRefused: lib/table_scope.rego decides whether
// the catalog's location is the table's twice, in catalog_accepted (what
// the table's location is built from; short, so that partial evaluation
// stays cheap) and in refused (the reasons a denial gives). On the grid
// of TestCheckTableLocationMatchesLibrary the two must agree: accepted
// exactly when nothing is refused.
func TestCatalogAcceptedMatchesRefused(t *testing.T) {
	ctx := context.Background()
	var data map[string]any
	if err := json.Unmarshal([]byte(locationData), &data); err != nil {
		t.Fatal(err)
	}
	lib, err := filepath.Glob(filepath.Join(libDir, "*.rego"))
	if err != nil {
		t.Fatal(err)
	}
	opts := []func(*rego.Rego){
		rego.Query("accepted := {x | data.countersign.lib.table_scope.catalog_accepted; x := true}; refused := data.countersign.lib.table_scope.refused"),
		rego.Store(inmem.NewFromObject(data)),
	}
	for _, f := range lib {
		if strings.HasSuffix(f, "_test.rego") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		opts = append(opts, rego.Module(f, string(src)))
	}
	pq, err := rego.New(opts...).PrepareForEval(ctx)
	if err != nil {
		t.Fatal(err)
	}
	tables := []map[string]any{
		{"prefix": "prod", "namespace": []any{"db"}, "name": "t"},
		{"prefix": "prod", "namespace": []any{"db"}, "name": "op"},
		{"prefix": "prod", "namespace": []any{"db"}, "name": "t2"},
		{"prefix": "prod", "namespace": []any{"db", "sub"}, "name": "e"},
		{"prefix": "prod", "namespace": []any{"x"}, "name": "bad"},
		{"prefix": "other", "namespace": []any{"db"}, "name": "none"},
		{"prefix": "prod", "namespace": []any{"db"}, "name": "unknown"},
	}
	prefixes := []string{"", "wh", "wh/", "wh/db", "wh/db/t", "wh/db/t/", "wh/db/t2", "wh/db/t2/x", "wh/op", "wh/op/n", "wh/op//n", "wh/op/./n",
		"wh/subs", "wh/subs/", "wh/subs/e", "wh/subs/e/x", "wh/db//t", "wh/./t", "wh/db/../op", "x/bad", "x/y/", "wh/db/t2_old/"}
	n, accepted := 0, 0
	for _, tb := range tables {
		for _, scheme := range []string{"s3://", "s3a://", "gs://", ""} {
			for _, bucket := range []string{"lake", "other"} {
				for _, p := range prefixes {
					table := maps.Clone(tb)
					table["location"] = scheme + bucket + "/" + p
					rs, err := pq.Eval(ctx, rego.EvalInput(map[string]any{"table": table}))
					if err != nil {
						t.Fatal(err)
					}
					if len(rs) != 1 {
						t.Fatalf("%v: %d results", table, len(rs))
					}
					acc := len(rs[0].Bindings["accepted"].([]any)) == 1
					refused := rs[0].Bindings["refused"].([]any)
					if acc != (len(refused) == 0) {
						t.Errorf("%v: catalog_accepted %v, refused %v", table, acc, refused)
					}
					n++
					if acc {
						accepted++
					}
				}
			}
		}
	}
	if accepted == 0 || accepted == n {
		t.Fatalf("%d of %d locations accepted: the grid does not test both sides", accepted, n)
	}
	t.Logf("%d cases, %d accepted", n, accepted)
}
