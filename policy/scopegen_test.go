package policy_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/policy"
)

// The scope compiler on random policies: the examples exercise a few
// forms; these policies combine many more (functions, else, sets counted
// and negated, data iteration, regexes, headers, ARNs, equality,
// exclusions), and the property must hold for every one: what the policy
// allows, the scope covers.

var genPrefixes = []string{"wh/", "wh/db/", "wh/db/t/", "wh/db/t2/", "wh/sales/", "wh/db/t", "x/", ""}

// genCond is one condition on the object, in Rego.
func genCond(r *rand.Rand, depth int) string {
	p := strconv.Quote(genPrefixes[r.IntN(len(genPrefixes))])
	switch r.IntN(16) {
	case 0, 1, 2:
		return "startswith(input.resource.key, " + p + ")"
	case 3:
		return "input.resource.key == " + strconv.Quote(genPrefixes[r.IntN(len(genPrefixes))]+"f.parquet")
	case 4:
		return `regex.match("^wh/[a-z]+/", input.resource.key)`
	case 5:
		return `input.request.headers["x-team"] == "data"`
	case 6:
		return "startswith(input.resource.arn, " + strconv.Quote("arn:aws:s3:::lake/"+genPrefixes[r.IntN(len(genPrefixes))]) + ")"
	case 7:
		return "not startswith(input.resource.key, " + p + ")"
	case 8:
		return `endswith(input.resource.key, ".parquet")`
	case 9:
		return "some q in data.gen.prefixes\n\tstartswith(input.resource.key, q)"
	case 10:
		return "under(input.resource, " + p + ")"
	case 11:
		return `input.operation == "GetObject"`
	case 12:
		return "k := input.resource.key\n\tstartswith(k, " + p + ")"
	case 13:
		return `startswith(input.resource.key, input.request.headers["x-prefix"])`
	case 14:
		if depth < 2 {
			return "not " + "blocked"
		}
		return "true"
	default:
		return `input.access == "read"`
	}
}

func genBody(r *rand.Rand, depth int) string {
	n := 1 + r.IntN(3)
	conds := make([]string, n)
	for i := range conds {
		conds[i] = genCond(r, depth)
	}
	return "\t" + strings.Join(conds, "\n\t")
}

func genPolicy(r *rand.Rand) string {
	var b strings.Builder
	b.WriteString("package countersign.authz\n\ndefault allow := false\n\n")
	b.WriteString("under(res, p) if startswith(res.key, p)\n\n")
	b.WriteString("blocked if {\n" + genBody(r, 2) + "\n}\n\n")
	switch r.IntN(4) {
	case 3: // a computed allow (README, "Policies")
		b.WriteString("allow := count(deny) == 0 if {\n" + genBody(r, 0) + "\n}\n\n")
		for i := range 1 + r.IntN(2) {
			fmt.Fprintf(&b, "deny contains \"d%d\" if {\n%s\n}\n\n", i, genBody(r, 1))
		}
	case 0: // plain allow rules
		for range 1 + r.IntN(3) {
			b.WriteString("allow if {\n" + genBody(r, 0) + "\n}\n\n")
		}
	case 1: // permit and deny, as the examples compose them
		b.WriteString("allow if {\n\tcount(deny) == 0\n\tcount(permit) > 0\n}\n\n")
		for i := range 1 + r.IntN(3) {
			fmt.Fprintf(&b, "permit contains \"p%d\" if {\n%s\n}\n\n", i, genBody(r, 0))
		}
		for i := range r.IntN(3) {
			fmt.Fprintf(&b, "deny contains msg if {\n%s\n\tmsg := sprintf(\"d%d %%v\", [object.get(input.resource, \"arn\", \"\")])\n}\n\n", genBody(r, 1), i)
		}
	default: // a helper rule with else
		b.WriteString("ok := true if {\n" + genBody(r, 0) + "\n} else := false\n\n")
		b.WriteString("allow if {\n\tok\n" + genBody(r, 1) + "\n}\n\n")
	}
	return b.String()
}

func genKey(r *rand.Rand) string {
	k := genPrefixes[r.IntN(len(genPrefixes))]
	switch r.IntN(4) {
	case 0:
		return k + "f.parquet"
	case 1:
		return k + []string{"a/b", "t/x.parquet", "", "2/y"}[r.IntN(4)]
	case 2:
		return k
	}
	return k + "z.tmp"
}

// TestScopeCoversRandomPolicies: for random policies (seeded: the run's
// seed is logged, COUNTERSIGN_TEST_SEED repeats it) and random objects,
// whatever Engine.Authorize allows, the principal's scope for the class
// covers: a grant with an action of the class whose prefix starts the
// key. A policy that does not compile (the generator can write one) is
// skipped; too many skips fail the test.
func TestScopeCoversRandomPolicies(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("COUNTERSIGN_TEST_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		seed = v
	}
	t.Logf("seed %d (COUNTERSIGN_TEST_SEED=%d to repeat)", seed, seed)
	r := rand.New(rand.NewPCG(seed, 15))
	n := 60
	if v, err := strconv.Atoi(os.Getenv("COUNTERSIGN_SCOPEGEN_N")); err == nil && v > 0 {
		n = v // longer runs by hand
	}
	if testing.Short() {
		n = 15
	}
	ctx := context.Background()
	var compiled, allows, exact int
	data, _ := json.Marshal(map[string]any{"gen": map[string]any{"prefixes": []string{"wh/db/t/", "wh/sales/"}}})
	for i := range n {
		src := genPolicy(r)
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "authz.rego"), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "data.json"), data, 0o644); err != nil {
			t.Fatal(err)
		}
		e, err := policy.Load(ctx, policy.Options{Paths: []string{dir}})
		if err != nil {
			continue // refused (a constant allow, a conflict): not a policy to scope
		}
		compiled++
		for _, access := range []string{"read", "write"} {
			s, err := e.Scope(ctx, policy.ScopeQuery{Principal: scopeAnn, Access: access, Bucket: "lake"})
			if err != nil {
				t.Fatalf("policy %d: %v\n%s", i, err, src)
			}
			if s.Exact {
				exact++
			}
			for range 40 {
				key := genKey(r)
				op, action, method := "GetObject", "s3:GetObject", "GET"
				if access == "write" {
					op, action, method = "PutObject", "s3:PutObject", "PUT"
				}
				hdrs := map[string]string{}
				if r.IntN(2) == 0 {
					hdrs["x-team"] = "data"
				}
				if r.IntN(2) == 0 {
					hdrs["x-prefix"] = genPrefixes[r.IntN(len(genPrefixes))]
				}
				in := &policy.Input{Version: 1, Principal: &scopeAnn, Operation: op, Action: action, Access: access,
					Resource: policy.Resource{Bucket: "lake", Key: key, ARN: "arn:aws:s3:::lake/" + key},
					Request:  policy.Request{Method: method, Region: "us-east-1", Host: "lake.s3.amazonaws.com", Headers: policy.HeadersOf(hdrs)}}
				d, err := e.Authorize(ctx, in)
				if err != nil || !d.Allow {
					continue
				}
				allows++
				covered := false
				for _, g := range s.Grants {
					if g.Bucket == "lake" && strings.HasPrefix(key, g.Prefix) && slicesContains(g.Actions, action) {
						covered = true
					}
				}
				if !covered {
					t.Fatalf("policy %d allows %s %q (headers %v), its %s scope does not cover it:\nscope %+v\n%s", i, op, key, hdrs, access, s, src)
				}
			}
		}
	}
	t.Logf("%d of %d random policies compiled; %d allows, all covered; %d of %d scopes exact", compiled, n, allows, exact, 2*compiled)
	if compiled < n/2 || allows < 50 {
		t.Fatalf("%d policies compiled, %d allows: the generator does not exercise the compiler", compiled, allows)
	}
}

func slicesContains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}
