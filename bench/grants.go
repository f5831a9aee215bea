package bench

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
)

// GrantsOptions sizes a generated grants data document for the example
// policies' grants library (deploy/policies/lib/grants.rego):
// data.countersign.grants[group][bucket][access] = [key prefixes].
type GrantsOptions struct {
	// Grants is the total number of (group, bucket, access, prefix) grants.
	Grants int
	// Groups are bench-g0 ... bench-g<Groups-1> (GroupName).
	Groups int
	// Workload names the bucket and table locations the bench reads:
	// every group gets read, write, delete and list on every bench table
	// (4 * Tables * Groups grants); the rest are grants on other prefixes
	// that never match, so a decision scans a realistic list.
	Workload Workload
	Seed     uint64
}

// Grants returns data.countersign.grants and the bench tables' entries for
// data.countersign.tables ("<prefix>/<namespace>/<table>": location and
// per-group grants, for the per-table route).
func Grants(o GrantsOptions) (grants map[string]map[string]map[string][]string, tables map[string]any, err error) {
	w := o.Workload
	if o.Groups < 1 || w.Tables < 1 {
		return nil, nil, fmt.Errorf("bench: at least one group and one table are required")
	}
	matching := 4 * w.Tables * o.Groups
	if o.Grants < matching {
		return nil, nil, fmt.Errorf("bench: %d grants cannot cover %d tables for %d groups (need at least %d)", o.Grants, w.Tables, o.Groups, matching)
	}
	accesses := []string{"read", "write", "delete", "list"}
	rng := rand.New(rand.NewPCG(o.Seed, 0x6772616e7473))
	grants = map[string]map[string]map[string][]string{}
	add := func(group, bucket, access, prefix string) {
		g := grants[group]
		if g == nil {
			g = map[string]map[string][]string{}
			grants[group] = g
		}
		b := g[bucket]
		if b == nil {
			b = map[string][]string{}
			g[bucket] = b
		}
		b[access] = append(b[access], prefix)
	}
	for g := 0; g < o.Groups; g++ {
		for t := 0; t < w.Tables; t++ {
			for _, a := range accesses {
				add(GroupName(g), w.Bucket, a, w.TableKey(t))
			}
		}
	}
	// The rest: other tables of other namespaces in the same bucket (so
	// they share the lists a decision walks), each group its own.
	for i := 0; i < o.Grants-matching; i++ {
		g := i % o.Groups
		prefix := fmt.Sprintf("%s/g%d_ns%d/tbl%d/", strings.TrimSuffix(w.Warehouse, "/"), g, rng.IntN(50), i)
		if w.Warehouse == "" {
			prefix = strings.TrimPrefix(prefix, "/")
		}
		add(GroupName(g), w.Bucket, accesses[rng.IntN(len(accesses))], prefix)
	}
	// Shuffle every list so the matching prefix is anywhere in it.
	for _, g := range grants {
		for _, b := range g {
			for _, list := range b {
				rng.Shuffle(len(list), func(i, j int) { list[i], list[j] = list[j], list[i] })
			}
		}
	}

	tables = map[string]any{}
	all := map[string][]string{}
	for g := 0; g < o.Groups; g++ {
		all[GroupName(g)] = accesses
	}
	ns := w.Namespace
	if ns == "" {
		ns = "default"
	}
	for t := 0; t < w.Tables; t++ {
		tables[w.CatalogPrefix+"/"+ns+"/"+TableName(t)] = map[string]any{
			"location": "s3://" + w.Bucket + "/" + w.TableKey(t),
			"grants":   all,
		}
	}
	return grants, tables, nil
}

// WritePolicy copies a policy directory's .rego files (not its _test.rego
// files), and those of the library directory beside it (../lib, which the
// example policies of deploy/policies are loaded with) when there is one,
// into outDir, and writes outDir/data.json: the directory's own data.json
// with countersign.grants replaced by the generated grants and the bench
// tables added to countersign.tables. outDir alone is then the policy.
func WritePolicy(policyDir, outDir string, o GrantsOptions) (grantCount int, err error) {
	grants, tables, err := Grants(o)
	if err != nil {
		return 0, err
	}
	dirs := []string{policyDir}
	if lib := filepath.Join(filepath.Dir(filepath.Clean(policyDir)), "lib"); lib != filepath.Clean(policyDir) {
		if info, err := os.Stat(lib); err == nil && info.IsDir() {
			dirs = append(dirs, lib)
		}
	}
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return 0, err
	}
	copied := map[string]string{} // file name -> directory
	for _, dir := range dirs {
		entries, err := os.ReadDir(dir)
		if err != nil {
			return 0, err
		}
		for _, e := range entries {
			name := e.Name()
			if e.IsDir() || !strings.HasSuffix(name, ".rego") || strings.HasSuffix(name, "_test.rego") {
				continue
			}
			if other, ok := copied[name]; ok {
				return 0, fmt.Errorf("%s is in both %s and %s", name, other, dir)
			}
			b, err := os.ReadFile(filepath.Join(dir, name))
			if err != nil {
				return 0, err
			}
			if err := os.WriteFile(filepath.Join(outDir, name), b, 0o644); err != nil {
				return 0, err
			}
			copied[name] = dir
		}
	}
	if len(copied) == 0 {
		return 0, fmt.Errorf("%s: no .rego files", policyDir)
	}
	doc := map[string]any{}
	if b, err := os.ReadFile(filepath.Join(policyDir, "data.json")); err == nil {
		if err := json.Unmarshal(b, &doc); err != nil {
			return 0, fmt.Errorf("%s/data.json: %w", policyDir, err)
		}
	} else if !os.IsNotExist(err) {
		return 0, err
	}
	cs, _ := doc["countersign"].(map[string]any)
	if cs == nil {
		cs = map[string]any{}
		doc["countersign"] = cs
	}
	cs["grants"] = grants
	t, _ := cs["tables"].(map[string]any)
	if t == nil {
		t = map[string]any{}
		cs["tables"] = t
	}
	for k, v := range tables {
		t[k] = v
	}
	b, err := json.MarshalIndent(doc, "", " ")
	if err != nil {
		return 0, err
	}
	if err := os.WriteFile(filepath.Join(outDir, "data.json"), append(b, '\n'), 0o644); err != nil {
		return 0, err
	}
	for _, g := range grants {
		for _, bk := range g {
			for _, list := range bk {
				grantCount += len(list)
			}
		}
	}
	return grantCount, nil
}
