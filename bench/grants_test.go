package bench

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestGrants(t *testing.T) {
	w := DefaultWorkload()
	grants, tables, err := Grants(GrantsOptions{Grants: 10000, Groups: 100, Workload: w, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	total, covering := 0, 0
	for g, byBucket := range grants {
		if !strings.HasPrefix(g, "bench-g") || len(byBucket) != 1 {
			t.Fatalf("group %s: %v buckets", g, len(byBucket))
		}
		for _, list := range byBucket["lake"] {
			total += len(list)
			for _, p := range list {
				if strings.HasPrefix(p, "wh/db/t") {
					covering++
				}
			}
		}
	}
	if len(grants) != 100 || total != 10000 || covering != 4*10*100 {
		t.Errorf("%d groups, %d grants, %d on the bench tables", len(grants), total, covering)
	}
	// Every group may read, write, delete and list every bench table.
	for g := range 100 {
		for _, a := range []string{"read", "write", "delete", "list"} {
			n := 0
			for _, p := range grants[GroupName(g)]["lake"][a] {
				if strings.HasPrefix(p, "wh/db/t") {
					n++
				}
			}
			if n != 10 {
				t.Fatalf("%s %s: %d bench tables", GroupName(g), a, n)
			}
		}
	}
	tbl, ok := tables["prod/db/t3"].(map[string]any)
	if !ok || tbl["location"] != "s3://lake/wh/db/t3/" || len(tables) != 10 {
		t.Errorf("tables %v", tables["prod/db/t3"])
	}
	if _, _, err := Grants(GrantsOptions{Grants: 10, Groups: 100, Workload: w}); err == nil {
		t.Error("10 grants for 100 groups accepted")
	}
}

func TestWritePolicy(t *testing.T) {
	out := t.TempDir()
	n, err := WritePolicy("../deploy/policies/combined", out, GrantsOptions{Grants: 200, Groups: 5, Workload: DefaultWorkload(), Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if n != 200 {
		t.Errorf("%d grants written", n)
	}
	files, _ := filepath.Glob(filepath.Join(out, "*"))
	for _, f := range files {
		if strings.HasSuffix(f, "_test.rego") {
			t.Errorf("copied a test: %s", f)
		}
	}
	for _, name := range []string{"authz.rego", "grants.rego", "guardrails.rego", "table_scope.rego", "catalog_token.rego", "location.rego"} {
		if _, err := os.Stat(filepath.Join(out, name)); err != nil {
			t.Errorf("the example with its library: %v", err)
		}
	}
	b, err := os.ReadFile(filepath.Join(out, "data.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Countersign struct {
			Grants       map[string]any
			Tables       map[string]any
			CatalogToken map[string]any `json:"catalog_token"`
		}
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	// The example's own tables and catalog issuers stay; its grants are replaced.
	if len(doc.Countersign.Grants) != 5 || doc.Countersign.Tables["prod/db/t"] == nil || doc.Countersign.Tables["prod/db/t9"] == nil || doc.Countersign.CatalogToken == nil {
		t.Errorf("data.json: %d groups, tables %d, catalog %v", len(doc.Countersign.Grants), len(doc.Countersign.Tables), doc.Countersign.CatalogToken)
	}
	if _, err := os.Stat(filepath.Join(out, "authz.rego")); err != nil {
		t.Error(err)
	}
}
