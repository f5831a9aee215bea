package fastpath

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/internal/policyinput"
	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/loader"
	"github.com/open-policy-agent/opa/v1/topdown"
	"github.com/open-policy-agent/opa/v1/util"
)

// The fast path's correctness is checked against the full evaluation: for
// every input of a random stream, Authorize (through the residual) and
// authorizeFull (rego.EvalInput over the whole package, what countersign did
// before the fast path) must return the same Decision, or both an error.

const examplesRoot = "../../../deploy/policies"

// differentialInputs is how many random inputs each policy gets.
func differentialInputs() int {
	switch {
	case raceEnabled:
		return 400
	case testing.Short():
		return 1000
	}
	return 3000
}

// forceBuild makes a test engine build a scope's residual at its first
// sighting, on the deciding goroutine, so every input after the first of a
// scope goes through the fast path.
func forceBuild(e *Engine) {
	if e.fast != nil {
		e.fast.syncBuild, e.fast.admitAfter = true, 1
	}
}

// testEngine loads dir, and the library beside it when there is one (an
// example policy of deploy/policies with deploy/policies/lib, as serve
// loads them); grants, if set, replaces data.countersign.grants.
func testEngine(t testing.TB, dir string, grants map[string]any, opts Options) *Engine {
	t.Helper()
	paths := []string{dir}
	if lib := filepath.Join(filepath.Dir(dir), "lib"); lib != dir {
		if _, err := os.Stat(lib); err == nil {
			paths = []string{lib, dir}
		}
	}
	res, err := loader.NewFileLoader().WithRegoVersion(ast.RegoV1).Filtered(paths, skipFiles)
	if err != nil {
		t.Fatal(err)
	}
	var mods []module
	for name, m := range res.Modules {
		mods = append(mods, module{name: name, raw: m.Raw, parsed: m.Parsed})
	}
	docs := res.Documents
	if grants != nil {
		docs["countersign"].(map[string]any)["grants"] = grants
	}
	e, err := newEngine(context.Background(), dir, mods, docs, "", opts)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// moduleEngine compiles Rego source files (name -> source) and data.
func moduleEngine(t testing.TB, files map[string]string, data map[string]any) *Engine {
	t.Helper()
	var mods []module
	for name, src := range files {
		m, err := ast.ParseModuleWithOpts(name, src, ast.ParserOptions{RegoVersion: ast.RegoV1})
		if err != nil {
			t.Fatal(err)
		}
		mods = append(mods, module{name: name, raw: []byte(src), parsed: m})
	}
	e, err := newEngine(context.Background(), "test", mods, data, "", Options{})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// ---- a realistic 10,000-grant data document ----

var (
	grantBuckets = []string{"lake", "lake", "lake", "lake2", "raw"}
	grantAccess  = []string{"read", "read", "read", "list", "write", "delete"}
)

// genGrants builds data.countersign.grants with n grants for 400 groups
// (25 each) on table prefixes wh/db<0-39>/t<0-24>/ and database prefixes
// wh/db<0-39>/, keyed group -> bucket -> access -> prefixes, plus the
// example groups analysts and etl.
func genGrants(n int) map[string]any {
	r := rand.New(rand.NewPCG(1, 2))
	grants := map[string]any{
		"analysts": map[string]any{"lake": map[string]any{
			"read": []any{"wh/db/t/", "wh/sales/"}, "list": []any{"wh/db/t/", "wh/sales/"}}},
		"etl": map[string]any{"lake": map[string]any{
			"read": []any{"wh/db/"}, "write": []any{"wh/db/"}, "delete": []any{"wh/db/t/"}, "list": []any{"wh/db/"}}},
	}
	for i := range n {
		g := fmt.Sprintf("g%03d", i%400)
		b := grantBuckets[r.IntN(len(grantBuckets))]
		a := grantAccess[r.IntN(len(grantAccess))]
		p := fmt.Sprintf("wh/db%d/t%d/", r.IntN(40), r.IntN(25))
		if r.IntN(10) == 0 {
			p = fmt.Sprintf("wh/db%d/", r.IntN(40))
		}
		gm, _ := grants[g].(map[string]any)
		if gm == nil {
			gm = map[string]any{}
			grants[g] = gm
		}
		bm, _ := gm[b].(map[string]any)
		if bm == nil {
			bm = map[string]any{}
			gm[b] = bm
		}
		l, _ := bm[a].([]any)
		bm[a] = append(l, p)
	}
	return grants
}

// ---- random inputs ----

type inputGen struct {
	r        *rand.Rand
	vr       *rand.Rand                  // version ids and versioned shapes: their own stream, so the other draws stay as they were
	friendly map[*policyinput.Input]bool // scopes drawn to be allowed more often
	grants   map[string]any
	groups   []string
	keys     []string // prefixes that some grant or table covers, and near misses
}

func newInputGen(seed uint64, grants map[string]any) *inputGen {
	g := &inputGen{r: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), vr: rand.New(rand.NewPCG(seed^0x5bd1e995, seed)), grants: grants, friendly: map[*policyinput.Input]bool{}}
	g.groups = []string{"analysts", "etl", "nobody", "g001", "g002", "g017", "g123", "g399", "Analysts"}
	prefixes := map[string]bool{}
	for grp, bm := range grants {
		for _, am := range bm.(map[string]any) {
			for _, ps := range am.(map[string]any) {
				for _, p := range ps.([]any) {
					prefixes[p.(string)] = true
				}
			}
		}
		if len(g.groups) < 40 && strings.HasPrefix(grp, "g") && g.r.IntN(20) == 0 {
			g.groups = append(g.groups, grp)
		}
	}
	for p := range prefixes {
		g.keys = append(g.keys, p)
	}
	g.keys = append(g.keys,
		"wh/db/t/", "wh/db/t2/", "wh/db/t2", "wh/db/t_old/", "wh/db/t2_old/", "wh/db/t", "wh/db/",
		"wh/db/sub/events/", "wh/db/sub/events_old/", "wh/sales/", "wh/sales2/", "wh/", "", "other/",
		"wh/db1/t1/", "wh/db1/t10/", "wh/db1/t1", "wh/db12/", "wh/db1/")
	slices.Sort(g.keys)
	return g
}

func (g *inputGen) pick(xs []string) string { return xs[g.r.IntN(len(xs))] }

func (g *inputGen) key() string { return g.keyUnder(g.pick(g.keys)) }

// keyUnder is a key at or under p, or beside it (p_old/...).
func (g *inputGen) keyUnder(p string) string {
	switch g.r.IntN(8) {
	case 0:
		return p
	case 1:
		return p + "metadata/v3.metadata.json"
	case 2:
		return strings.TrimSuffix(p, "/") + "_old/data/f.parquet"
	case 3:
		return p + "data/日本/ü.parquet"
	default:
		return fmt.Sprintf("%sdata/%05d-%d.parquet", p, g.r.IntN(100000), g.r.IntN(9))
	}
}

type opShape struct {
	op, action, access string
	list, copy         bool
	versioned          bool // the request names a version (resource.version_id)
}

var opShapes = []opShape{
	{op: "GetObject", action: "s3:GetObject", access: "read"},
	{op: "GetObject", action: "s3:GetObject", access: "read"},
	{op: "HeadObject", action: "s3:GetObject", access: "read"},
	{op: "PutObject", action: "s3:PutObject", access: "write"},
	{op: "UploadPart", action: "s3:PutObject", access: "write"},
	{op: "DeleteObject", action: "s3:DeleteObject", access: "delete"},
	{op: "DeleteObjects", action: "s3:DeleteObject", access: "delete"},
	{op: "ListObjectsV2", action: "s3:ListBucket", access: "list", list: true},
	{op: "HeadBucket", action: "s3:ListBucket", access: "list"},
	{op: "CopyObject", action: "s3:PutObject", access: "write", copy: true},
	{op: "UploadPartCopy", action: "s3:PutObject", access: "write", copy: true},
	{op: "PutObjectAcl", action: "s3:PutObjectAcl", access: "admin"},
	{op: "Unknown", action: "s3:Unknown", access: "admin"},
	{op: "GetObject", action: "s3:GetObject", access: ""},
	{op: "GetObject", action: "s3:GetObject", access: "reads"},
	// The versioned forms, opShapes[firstVersioned:], drawn from the
	// generator's own stream for them (inputGen.vr).
	{op: "GetObject", action: "s3:GetObjectVersion", access: "read", versioned: true},
	{op: "DeleteObject", action: "s3:DeleteObjectVersion", access: "delete_version", versioned: true},
	{op: "DeleteObjects", action: "s3:DeleteObjectVersion", access: "delete_version", versioned: true},
}

const firstVersioned = 15

var tables = []*policyinput.Table{
	nil, nil,
	{Prefix: "prod", Namespace: []string{"db"}, Name: "t"},
	{Prefix: "prod", Namespace: []string{"db"}, Name: "t"},
	{Prefix: "prod", Namespace: []string{"db"}, Name: "t2"},
	{Prefix: "prod", Namespace: []string{"db", "sub"}, Name: "events"},
	{Prefix: "prod", Namespace: []string{"db"}, Name: "t2"},
	{Prefix: "prod", Namespace: []string{"db", "sub"}, Name: "events"},
	{Prefix: "prod", Namespace: []string{"db.sub"}, Name: "events"},
	{Prefix: "prod", Namespace: []string{"db"}, Name: "missing"},
	{Prefix: "", Namespace: []string{"db"}, Name: "t"},
	{Prefix: "prod", Namespace: nil, Name: "t"},
	// With the catalog front: the catalog's location for the caller.
	{Prefix: "prod", Namespace: []string{"db"}, Name: "t", Location: "s3://lake/wh/db/t"},
	{Prefix: "prod", Namespace: []string{"db"}, Name: "t", Location: "s3://lake/wh/db/t2/"},
	{Prefix: "prod", Namespace: []string{"db"}, Name: "new", Location: "s3a://lake/wh/db/"},
}

func (g *inputGen) principal() *policyinput.Principal {
	if g.r.IntN(15) == 0 {
		return nil
	}
	p := &policyinput.Principal{ID: g.pick([]string{"alice", "bob", "svc-etl", "spark"}), Issuer: "https://idp.example/", Claims: map[string]any{}}
	switch g.r.IntN(10) {
	case 0:
		p.Groups = nil
	case 1:
		p.Groups = []string{}
	default:
		for range 1 + g.r.IntN(4) {
			p.Groups = append(p.Groups, g.pick(g.groups))
		}
		if g.r.IntN(2) == 0 {
			p.Groups = append(p.Groups, g.pick([]string{"analysts", "etl"}))
		}
	}
	if g.r.IntN(4) == 0 { // a catalog token
		p.Issuer = "https://catalog.example/"
		switch g.r.IntN(6) {
		case 0:
			p.Claims["location"] = "s3://lake/wh/db/t/"
		case 1:
			p.Claims["location"] = []any{"s3://lake/wh/db/t2", "s3a://lake/wh/sales/"}
		case 2:
			p.Claims["location"] = "s3://lake"
		case 3:
			p.Claims["location"] = "gs://lake/wh/db/t/"
		case 4:
			p.Claims["location"] = 42.0
		}
		switch g.r.IntN(5) {
		case 0:
			p.Claims["access"] = []any{"read", "list"}
		case 1:
			p.Claims["access"] = []any{"read", "write", "delete", "list"}
		case 2:
			p.Claims["access"] = "read"
		}
	}
	if g.r.IntN(3) == 0 {
		p.Claims["exp"] = float64(1700000000 + g.r.IntN(1000))
		p.Claims["nested"] = map[string]any{"a": []any{"x", true, nil, 1.5}}
	}
	if g.r.IntN(10) == 0 {
		p.Claims = nil
	}
	return p
}

func (g *inputGen) headers(friendly bool) map[string]string {
	switch g.r.IntN(12) {
	case 0:
		return nil
	case 1:
		return map[string]string{}
	}
	h := map[string]string{
		"range":                 fmt.Sprintf("bytes=%d-%d", g.r.IntN(1000), 1000+g.r.IntN(100000)),
		"amz-sdk-invocation-id": fmt.Sprintf("%08x-%04x", g.r.Uint32(), g.r.IntN(1<<16)),
		"x-amz-content-sha256":  "UNSIGNED-PAYLOAD",
		"user-agent":            "aws-sdk-java/2.x",
	}
	if !friendly && g.r.IntN(6) == 0 {
		h[g.pick([]string{"x-amz-acl", "X-Amz-Grant-Read", "x-amz-object-lock-mode", "x-http-method-override",
			"x-amz-website-redirect-location", "x-amz-bypass-governance-retention", "x-method-override", "x-amz-grantee", "x-amz-copy-source"})] = "v"
	}
	return h
}

// relevant are the prefixes that may allow a scope's objects: the table's
// location, the catalog token's, the principal's group grants.
func (g *inputGen) relevant(scope *policyinput.Input) []string {
	var ps []string
	if t := scope.Table; t != nil && t.Name != "missing" {
		switch t.Name {
		case "t":
			ps = append(ps, "wh/db/t/")
		case "t2":
			ps = append(ps, "wh/db/t2/")
		case "events":
			ps = append(ps, "wh/db/sub/events/")
		}
	}
	if p := scope.Principal; p != nil {
		var tok []string
		switch loc := p.Claims["location"].(type) {
		case string:
			tok = []string{strings.TrimPrefix(strings.TrimPrefix(strings.TrimPrefix(loc, "s3://lake"), "s3://warehouse"), "/")}
		case []any:
			tok = []string{"wh/db/t2/", "wh/sales/"}
		}
		if g.r.IntN(2) == 0 {
			ps = append(tok, ps...)
		} else {
			ps = append(ps, tok...)
		}
		for _, grp := range p.Groups {
			bm, _ := g.grants[grp].(map[string]any)
			am, _ := bm[scope.Resource.Bucket].(map[string]any)
			for _, access := range []string{scope.Access, "read"} {
				l, _ := am[access].([]any)
				for _, x := range l {
					ps = append(ps, x.(string))
				}
			}
		}
	}
	return ps
}

func (g *inputGen) resource(bucket string, list bool) policyinput.Resource {
	return g.resourceKey(bucket, g.key(), list)
}

func (g *inputGen) resourceKey(bucket, key string, list bool) policyinput.Resource {
	if list {
		p := key
		if g.r.IntN(3) == 0 {
			p = strings.TrimSuffix(p, "/")
		}
		return policyinput.Resource{Bucket: bucket, Prefix: &p, ARN: "arn:aws:s3:::" + bucket}
	}
	return policyinput.Resource{Bucket: bucket, Key: key, ARN: "arn:aws:s3:::" + bucket + "/" + key}
}

// scope draws everything but the per-object fields.
func (g *inputGen) scope() *policyinput.Input {
	s := opShapes[g.r.IntN(firstVersioned)]
	if s.op == "GetObject" && g.vr.IntN(4) == 0 {
		s = opShapes[firstVersioned+g.vr.IntN(3)] // instead of some reads: a versioned form
	}
	in := &policyinput.Input{
		Version: 1, Principal: g.principal(),
		Operation: s.op, Action: s.action, Access: s.access,
		Table:   tables[g.r.IntN(len(tables))],
		Request: policyinput.Request{Method: g.pick([]string{"GET", "PUT", "HEAD", "DELETE", "POST"}), Region: "us-east-1", Host: "lake.s3.us-east-1.amazonaws.com"},
		Source:  policyinput.Source{IP: g.pick([]string{"10.0.0.7", "10.0.0.8", "192.0.2.1"})},
	}
	if g.r.IntN(25) == 0 {
		in.Version = g.pick2([]int{0, 2})
	}
	in.Resource.Bucket = g.pick([]string{"lake", "lake", "lake", "lake", "lake2", "raw", "warehouse", "other"})
	if g.r.IntN(2) == 0 { // a scope likely to be allowed
		s = opShapes[g.r.IntN(11)]
		if g.vr.IntN(6) == 0 {
			s = opShapes[firstVersioned+g.vr.IntN(3)]
		}
		in.Version, in.Operation, in.Action, in.Access = 1, s.op, s.action, s.access
		in.Resource.Bucket = g.pick([]string{"lake", "warehouse"})
		if g.r.IntN(3) > 0 {
			in.Table = tables[2+g.r.IntN(5)] // one in the data
			in.Resource.Bucket = "lake"
		}
		if in.Principal == nil && g.r.IntN(2) == 0 {
			in.Principal = g.principal()
		}
		if in.Principal != nil && g.r.IntN(2) == 0 {
			p := *in.Principal
			p.Issuer = "https://catalog.example/"
			p.Claims = map[string]any{"location": g.pick([]string{"s3://lake/wh/db/t/", "s3://lake/wh/sales/", "s3://warehouse/"})}
			if g.r.IntN(2) == 0 {
				p.Claims["access"] = []any{"read", "write", "delete", "list"}
			}
			in.Principal = &p
		}
		g.friendly[in] = true
	}
	if s.copy {
		src := g.resource(g.pick([]string{"lake", "lake", "warehouse", "raw"}), false)
		if rel := g.relevant(in); len(rel) > 0 && g.r.IntN(2) == 0 {
			src = g.resourceKey(in.Resource.Bucket, g.keyUnder(g.pick(rel)), false)
		}
		if g.vr.IntN(3) == 0 {
			src.VersionID = g.versionID()
		}
		in.CopySource = &src
	}
	if s.versioned {
		in.Resource.VersionID = "v" // marks a versioned scope; object() draws the id
	}
	if s.list {
		in.Resource.Prefix = new(string) // marks a list scope
	}
	return in
}

func (g *inputGen) pick2(xs []int) int { return xs[g.r.IntN(len(xs))] }

// versionID is a version id as S3 and versitygw spell them, or an odd one.
func (g *inputGen) versionID() string {
	vs := []string{"null", "3HL4kqtJlcpXroDTDmJ+gq", "v1", "v2", "01HX", "日本", "wh/db/t/", "x"}
	return vs[g.vr.IntN(len(vs))]
}

// object fills the per-object fields of a copy of scope.
func (g *inputGen) object(scope *policyinput.Input) *policyinput.Input {
	in := *scope
	list := scope.Resource.Prefix != nil
	key := g.key()
	if rel := g.relevant(scope); len(rel) > 0 && g.r.IntN(4) > 0 {
		// The first relevant prefix (the table's, else the token's)
		// most of the time.
		if g.r.IntN(3) > 0 {
			key = g.keyUnder(rel[0])
		} else {
			key = g.keyUnder(g.pick(rel))
		}
	}
	if scope.Operation == "HeadBucket" {
		in.Resource = policyinput.Resource{Bucket: scope.Resource.Bucket, ARN: "arn:aws:s3:::" + scope.Resource.Bucket}
	} else {
		in.Resource = g.resourceKey(scope.Resource.Bucket, key, list)
	}
	switch {
	case scope.Resource.VersionID != "":
		in.Resource.VersionID = g.versionID()
	case g.vr.IntN(20) == 0:
		// A version id the action does not match: the policy must still
		// decide it exactly as OPA does.
		in.Resource.VersionID = g.versionID()
	}
	in.Request.Headers = policyinput.HeadersOf(g.headers(g.friendly[scope]))
	if g.r.IntN(3) == 0 {
		in.Source.IP = g.pick([]string{"10.0.0.7", "10.0.0.8", "192.0.2.1", "2001:db8::1"})
	}
	return &in
}

// stream yields n inputs in scan-like bursts: a scope, then several objects
// of it, so that the fast path decides most of them from a cached residual.
func (g *inputGen) stream(n int, yield func(*policyinput.Input)) {
	for n > 0 {
		scope := g.scope()
		for range min(n, 1+g.r.IntN(12)) {
			yield(g.object(scope))
			n--
		}
	}
}

func describeInput(in *policyinput.Input) string {
	b, _ := jsonMarshalIndent(in)
	return string(b)
}

// checkSame compares the fast path with the full evaluation for in.
func checkSame(t *testing.T, e *Engine, in *policyinput.Input) bool {
	t.Helper()
	ctx := context.Background()
	want, werr := e.authorizeRego(ctx, in)
	got, gerr := e.Authorize(ctx, in)
	full, ferr := e.authorizeFull(ctx, in)
	if (werr != nil) != (gerr != nil) || got != want {
		t.Errorf("fast path differs from the full evaluation\ninput: %s\nfast: %+v err %v\nfull: %+v err %v", describeInput(in), got, gerr, want, werr)
		return false
	}
	if (werr != nil) != (ferr != nil) || full != want {
		t.Errorf("full evaluation with the direct input differs\ninput: %s\ndirect: %+v err %v\nrego: %+v err %v", describeInput(in), full, ferr, want, werr)
		return false
	}
	return true
}

// headerSibling is in with the same object and header names and other
// header values (one with "evil" in each, which the "iteration" and
// "header-values" policies of TestFastPathSemantics deny): a remembered
// decision (scope.memo) may answer it only if the policy ignores them.
func headerSibling(in *policyinput.Input, i int) *policyinput.Input {
	cp := *in
	if in.Request.Headers != nil {
		cp.Request.Headers = make(policyinput.Headers, len(in.Request.Headers))
		for j, h := range in.Request.Headers {
			cp.Request.Headers[j] = policyinput.Header{Name: h.Name, Value: fmt.Sprintf("evil-%d-%s", i, h.Value)}
		}
	}
	return &cp
}

func TestFastPathDifferential(t *testing.T) {
	big := genGrants(10000)
	small := exampleGrants(t)
	cases := []struct {
		name, dir string
		grants    map[string]any
	}{
		{"grants", "grants", nil},
		{"table-scope", "table-scope", nil},
		{"catalog-token", "catalog-token", nil},
		{"combined", "combined", nil},
		{"dev", "dev", nil},
		{"grants-10k", "grants", big},
		{"combined-10k", "combined", big},
	}
	seed := runSeed(t)
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			e := testEngine(t, filepath.Join(examplesRoot, c.dir), c.grants, Options{})
			if e.fast == nil {
				t.Fatalf("no fast path: %s", e.noFast)
			}
			forceBuild(e)
			src := small
			if c.grants != nil {
				src = c.grants
			}
			g := newInputGen(seed+uint64(i+1), src)
			n, allowed, failures := 0, 0, 0
			both := func() bool { return allowed >= n/100 && allowed <= n-n/100 }
			// Some policies allow few random inputs (catalog-token about 4%,
			// in runs of one scope): more batches until both outcomes are
			// exercised, at most four, rather than a failure by the seed.
			for batch := 0; batch < 4 && (batch == 0 || !both()); batch++ {
				g.stream(differentialInputs(), func(in *policyinput.Input) {
					if failures > 10 {
						return
					}
					if !checkSame(t, e, in) || !checkSame(t, e, headerSibling(in, n)) {
						failures++
					}
					if d, _ := e.authorizeRego(context.Background(), in); d.Allow {
						allowed++
					}
					n++
				})
			}
			st := &e.fast.stats
			t.Logf("%s: %d inputs, %d allowed; fast path: %d hits, %d misses, %d unsupported, %d fallbacks; %d residuals built, %d unsupported",
				c.name, n, allowed, st.hits.Load(), st.misses.Load(), st.unsupported.Load(), st.fallbacks.Load(), st.builds.Load(), st.failed.Load())
			if hits := st.hits.Load(); hits < uint64(n)/2 {
				t.Errorf("only %d of %d decisions came from the fast path", hits, n)
			}
			// The examples read header names, not values: the sibling of
			// an input decided by the residual is often remembered.
			if mh := st.memoHits.Load(); mh < uint64(n)/10 {
				t.Errorf("only %d of %d siblings were remembered decisions", mh, n)
			}
			if fb := st.fallbacks.Load(); fb != 0 {
				t.Errorf("%d fallbacks on a policy without errors", fb)
			}
			if st.failed.Load() > 0 {
				for _, s := range e.fast.l2.Values() {
					if s.err != nil {
						t.Errorf("unsupported residual: %v", s.err)
						break
					}
				}
			}
			if !both() { // (seeds vary per run)
				t.Errorf("%d of %d allowed: the inputs do not exercise both outcomes", allowed, n)
			}
		})
	}
}

func exampleGrants(t testing.TB) map[string]any {
	t.Helper()
	g, err := loadExampleGrants()
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func loadExampleGrants() (map[string]any, error) {
	res, err := loader.NewFileLoader().Filtered([]string{filepath.Join(examplesRoot, "grants")}, skipFiles)
	if err != nil {
		return nil, err
	}
	return res.Documents["countersign"].(map[string]any)["grants"].(map[string]any), nil
}

// TestFastPathSemantics runs the differential check on policies written to
// reach the corners of the interpreter: conflicts (the full evaluation's
// error must come back), else, default functions, iteration, negation,
// built-in errors, sets, objects and arrays built from the key.
func TestFastPathSemantics(t *testing.T) {
	policies := map[string]string{
		"conflict": `package countersign.authz
x := 1 if startswith(input.resource.key, "wh/db")
x := 2 if startswith(input.resource.key, "wh/db1")
allow if x == 1
reason := sprintf("x is %v", [x])`,
		"function-conflict": `package countersign.authz
f(k) := "one" if startswith(k, "wh/")
f(k) := "two" if endswith(k, ".parquet")
allow if f(input.resource.key) == "one"`,
		"conflict-elsewhere": `package countersign.authz
allow if input.principal.id == "alice"
debug := input.resource.key if contains(input.resource.key, "db")
debug := "other" if contains(input.resource.key, "t")`,
		"else": `package countersign.authz
default allow := false
level := "top" if { startswith(input.resource.key, "wh/db/t/") } else := "db" if { startswith(input.resource.key, "wh/db/") } else := "none"
allow if level == "top"
allow if { level == "db"; input.access == "read" }
reason := concat(":", [level, input.resource.arn])`,
		"default-function": `package countersign.authz
default depth(_) := 0
depth(k) := count(split(k, "/")) if contains(k, "/")
allow if depth(input.resource.key) > 3
reason := sprintf("depth %d", [depth(input.resource.key)])`,
		"iteration": `package countersign.authz
import rego.v1
names contains lower(n) if some n, _ in input.request.headers
values contains v if some _, v in input.request.headers
parts contains p if some p in split(input.resource.key, "/")
allow if {
	"range" in names
	not "x-amz-acl" in names
	"data" in parts
	every v in values { not contains(v, "evil") }
}
reason := concat(",", sort(names)) if not allow`,
		"header-values": `package countersign.authz
import rego.v1
allow if {
	startswith(input.resource.key, "wh/")
	not contains(object.get(input.request.headers, "range", ""), "evil")
	not startswith(input.request.headers["user-agent"], "evil")
	not bad_value
}
bad_value if {
	some name, v in input.request.headers
	startswith(name, "amz-sdk-inv")
	contains(v, "evil")
}
reason := sprintf("headers %v", [input.request.headers]) if not allow`,
		"builtin-errors": `package countersign.authz
n := to_number(trim_suffix(split(input.resource.key, "/")[2], ".parquet"))
allow if n > 10
reason := sprintf("n=%v", [n])`,
		"composites": `package countersign.authz
obj := {"k": input.resource.key, "b": input.resource.bucket, "p": input.resource.prefix}
arr := [input.resource.key, input.resource.arn]
allow if {
	obj.b == "lake"
	[k, arn] := arr
	endswith(arn, k)
	is_null(obj.p)
	object.get(input.resource, "key", "") == k
	object.get(input, ["resource", "bucket"], "") == "lake"
}
reason := json.marshal({"obj": obj, "arr": arr, "req": input.request})`,
		"negation": `package countersign.authz
granted_prefixes := {"wh/db/t/", "wh/sales/"}
bad if { some p in granted_prefixes; startswith(input.resource.key, concat("", [p, "secret/"])) }
ok if { some p in granted_prefixes; startswith(input.resource.key, p) }
allow if { ok; not bad }
reason := "secret" if bad
reason := "not granted" if not ok`,
		"whole-input": `package countersign.authz
allow if {
	input.resource.bucket == "lake"
	count(input) == 10
	count(input.resource) == 5
	input.request.headers.range
}
reason := sprintf("%v %v", [object.keys(input.request), input.resource])`,
		"local-taint": `package countersign.authz
import data.lib
allow if {
	k := input.resource.key
	parts := split(k, "/")
	lib.kind(parts[1]) == "db"
}
reason := lib.kind(split(input.resource.key, "/")[1])`,
		"local-taint-lib": `package lib
kind(x) := "db" if startswith(x, "db")
kind(x) := "other" if endswith(x, "1")
`,
		"header-names": `package countersign.authz
import rego.v1
deny contains sprintf("header %s", [n]) if { some n, _ in input.request.headers; startswith(lower(n), "x-amz-grant-") }
deny contains n if { some n, v in input.request.headers; contains(v, "evil") }
deny contains {"h": n} if { some n, _ in input.request.headers; n == "x-amz-acl" }
deny contains "no range" if { not input.request.headers.range }
names contains n if { some n, _ in input.request.headers }
allow if { count(deny) == 0; startswith(input.resource.key, "wh/"); count(names) > 1 }
reason := sprintf("%v %v", [deny, names]) if not allow`,
		"header-conflict": `package countersign.authz
h := v if { some k, v in input.request.headers; startswith(k, "x-amz-") }
allow if { h; startswith(input.resource.key, "wh/") }`,
		"partial-object": `package countersign.authz
seg[i] := p if some i, p in split(input.resource.key, "/")
seg[0] := "forced" if endswith(input.resource.key, ".json")
allow if seg[0] == "wh"
reason := concat(",", [seg[i] | some i in numbers.range(0, 1)])`,
		"dynamic-ref": `package countersign.authz
import data.lib2
allow if data.lib2[input.access]
reason := sprintf("%v", [data.lib2[input.access]])`,
		"dynamic-ref-lib": `package lib2
read := true if startswith(input.resource.key, "wh/db/")
read := false if startswith(input.resource.key, "wh/db/t/")
write := true if contains(input.resource.key, "data")
`,
		"odd-values": `package countersign.authz
allow := "yes" if startswith(input.resource.key, "wh/db/")
allow := true if startswith(input.resource.key, "wh/sales/")
reason := {"key": input.resource.key} if contains(input.resource.key, "data")
reason := 42 if contains(input.resource.key, "metadata")`,
		"constant": `package countersign.authz
allow := true`,
		"scope-constant": `package countersign.authz
default allow := false
allow if input.access == "read"
reason := concat(" ", ["for", input.operation, object.get(input.principal, "id", "nobody")]) if not allow
pair := [input.access, input.operation]
obj := {"a": input.access, "o": input.operation, "n": [input.version, input.access]}
s := {input.access, input.action}
allow if { pair[0] == "write"; obj.n[1] == "write"; "s3:PutObject" in s }
allow if {
	t := {"x": input.operation, "k": input.resource.key}
	t.x == "DeleteObject"
	m := {"y": [input.access]}
	m.y[0] == "delete"
	some i, v in m.y
	startswith(t.k, "wh/db/t/")
}`,
		"source": `package countersign.authz
allow if { net.cidr_contains("10.0.0.0/8", input.source.ip); startswith(input.resource.key, "wh/") }
reason := sprintf("from %s (%v)", [input.source.ip, input.source])`,
		"sub-package": `package countersign.authz
allow if data.countersign.authz.extra.ok
`,
		"version": `package countersign.authz
default allow := false
allow if { input.resource.version_id == ""; startswith(input.resource.key, "wh/") }
allow if { startswith(input.resource.version_id, "v"); input.access == "read" }
allow if { input.copy_source.version_id == "null"; input.resource.version_id != "x" }
allow if { v := input.resource.version_id; count(v) > 3; not contains(v, "+") }
reason := sprintf("version %q of %s (copy from %v)", [input.resource.version_id, input.resource.arn, object.get(input, ["copy_source", "version_id"], "-")]) if not allow`,
		"sub-package-rules": `package countersign.authz.extra
ok if startswith(input.resource.key, "wh/")
conflict := 1 if endswith(input.resource.key, ".parquet")
conflict := 2 if endswith(input.resource.key, "-1.parquet")
`,
	}
	files := func(names ...string) map[string]string {
		m := map[string]string{}
		for _, n := range names {
			m[n+".rego"] = policies[n]
		}
		return m
	}
	cases := map[string]map[string]string{}
	for name := range policies {
		if !strings.HasSuffix(name, "-rules") && !strings.HasSuffix(name, "-lib") {
			cases[name] = files(name)
		}
	}
	cases["sub-package"] = files("sub-package", "sub-package-rules")
	cases["local-taint"] = files("local-taint", "local-taint-lib")
	cases["dynamic-ref"] = files("dynamic-ref", "dynamic-ref-lib")
	seed := runSeed(t)
	for name, fs := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := moduleEngine(t, fs, nil)
			if e.fast == nil {
				t.Fatalf("no fast path: %s", e.noFast)
			}
			forceBuild(e)
			g := newInputGen(seed^7, exampleGrants(t))
			var errs, n int
			g.stream(differentialInputs()/3, func(in *policyinput.Input) {
				n++
				if _, err := e.authorizeRego(context.Background(), in); err != nil {
					errs++
				}
				checkSame(t, e, in)
				sib := headerSibling(in, n)
				if _, err := e.authorizeRego(context.Background(), sib); err != nil {
					errs++
				}
				checkSame(t, e, sib)
			})
			st := &e.fast.stats
			t.Logf("%s: %d inputs (%d full-evaluation errors); %d hits (%d remembered), %d fallbacks, %d unsupported scopes",
				name, n, errs, st.hits.Load(), st.memoHits.Load(), st.fallbacks.Load(), st.failed.Load())
			for _, s := range e.fast.l2.Values() {
				if s.err != nil {
					t.Logf("unsupported: %v", s.err)
					break
				}
			}
			// The fast path gives up only where OPA reports an error, or
			// (header-values: its policy binds a header it negates, so
			// strictNeg is on) where a header under negation is absent.
			if fb := st.fallbacks.Load(); fb > uint64(errs) && name != "header-values" {
				t.Errorf("%d fallbacks for %d errors", fb, errs)
			}
		})
	}
}

// TestFastPathIneligible: policies that use non-deterministic built-ins or
// with are always fully evaluated (their results must not be reused), and
// give the full evaluation's answer.
func TestFastPathIneligible(t *testing.T) {
	for name, src := range map[string]string{
		"http.send": `package countersign.authz
allow if {
	startswith(input.resource.key, "wh/")
	http.send({"method": "GET", "url": "http://127.0.0.1:1/", "raise_error": false, "timeout": "10ms"}).status_code == 0
}`,
		"time.now_ns": `package countersign.authz
allow if { startswith(input.resource.key, "wh/"); time.now_ns() > 0 }`,
		"time in a library": `package countersign.authz
import data.lib
allow if lib.fresh
` + "\n",
		"with": `package countersign.authz
f(x) := x
allow if f(input.resource.key) with input.resource.key as "x"`,
	} {
		t.Run(name, func(t *testing.T) {
			files := map[string]string{"authz.rego": src}
			if name == "time in a library" {
				files["lib.rego"] = "package lib\nfresh if time.now_ns() > input.principal.claims.iat\n"
			}
			e := moduleEngine(t, files, nil)
			if e.fast != nil {
				t.Fatal("the fast path is on")
			}
			t.Logf("full evaluation only: %s", e.noFast)
			g := newInputGen(3, exampleGrants(t))
			g.stream(50, func(in *policyinput.Input) { checkSame(t, e, in) })
		})
	}
}

// TestScopeKeyCoversInput fails when Input gains a field: appendScopeKey
// (and unknownFields) must then be updated, or two inputs differing in the
// new field would share a residual.
func TestScopeKeyCoversInput(t *testing.T) {
	want := map[string][]string{
		"Input":     {"Version", "Principal", "Operation", "Action", "Access", "Resource", "CopySource", "Table", "Request", "Source", "Mint"},
		"Principal": {"ID", "Issuer", "Groups", "Claims", "Key"},
		"Resource":  {"Bucket", "Key", "Prefix", "ARN", "VersionID"},
		"Table":     {"Prefix", "Namespace", "Name", "Location"},
		"Request":   {"Method", "Region", "Host", "Headers"},
		"Source":    {"IP"},
	}
	for _, typ := range []reflect.Type{reflect.TypeFor[policyinput.Input](), reflect.TypeFor[policyinput.Principal](), reflect.TypeFor[policyinput.Resource](), reflect.TypeFor[policyinput.Table](), reflect.TypeFor[policyinput.Request](), reflect.TypeFor[policyinput.Source]()} {
		var got []string
		for i := range typ.NumField() {
			got = append(got, typ.Field(i).Name)
		}
		if !slices.Equal(got, want[typ.Name()]) {
			t.Errorf("%s has fields %v; update appendScopeKey, then this test", typ.Name(), got)
		}
	}
	// A mint's input is never given a scope key: mints are fully evaluated.
	if _, ok := appendScopeKey(nil, &policyinput.Input{Mint: &policyinput.Mint{Prefix: "wh/"}}); ok {
		t.Error("appendScopeKey encoded a mint's input")
	}
}

// TestScopeKeyExact: inputs with equal scope keys have equal known inputs,
// and inputs differing outside the per-object fields have different keys.
func TestScopeKeyExact(t *testing.T) {
	g := newInputGen(11, exampleGrants(t))
	seen := map[string]string{} // key -> known input
	n := 0
	g.stream(2000, func(in *policyinput.Input) {
		key, ok := appendScopeKey(nil, in)
		if !ok {
			t.Fatalf("cannot encode %s", describeInput(in))
		}
		if in.Principal != nil {
			// The principal's own Key (set once, by auth) gives the same
			// scope key as encoding it.
			keyed := *in
			p := *in.Principal
			p.SetKey()
			keyed.Principal = &p
			if k2, ok := appendScopeKey(nil, &keyed); !ok || string(k2) != string(key) || p.Key == "" {
				t.Fatalf("with Principal.Key the scope key differs: %q, want %q", k2, key)
			}
		}
		k, err := newKnownInput(in)
		if err != nil {
			t.Fatal(err)
		}
		known := k.root.String()
		if prev, ok := seen[string(key)]; ok && prev != known {
			t.Fatalf("one scope key, two known inputs:\n%s\n%s", prev, known)
		}
		seen[string(key)] = known
		n++
	})
	byKnown := map[string]int{}
	for _, known := range seen {
		byKnown[known]++
	}
	for known, c := range byKnown {
		if c > 1 {
			t.Errorf("%d scope keys for one known input (harmless, but the encoding is not canonical): %s", c, known)
		}
	}
	t.Logf("%d inputs, %d scopes", n, len(seen))
}

func jsonMarshalIndent(v any) ([]byte, error) { return json.MarshalIndent(v, "", "  ") }

// TestFastPathBackgroundBuild: without the test knobs, a scope is built
// in the background after its second sighting and then decides.
func TestFastPathBackgroundBuild(t *testing.T) {
	e := testEngine(t, filepath.Join(examplesRoot, "grants"), genGrants(10000), Options{})
	ins := scanInputs(200)
	ctx := context.Background()
	for i, in := range ins {
		checkSame(t, e, in)
		if e.fast.stats.hits.Load() > 0 {
			t.Logf("first fast decision at input %d", i)
			break
		}
		time.Sleep(time.Millisecond)
	}
	eventuallyTrue(t, "a fast decision", func() bool {
		_, _ = e.Authorize(ctx, ins[0])
		return e.fast.stats.hits.Load() > 0
	})
	if b := e.fast.stats.builds.Load(); b != 1 {
		t.Fatalf("%d builds", b)
	}
}

func eventuallyTrue(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestInputValueExact: the direct conversion of the full evaluation's input
// equals rego's JSON round trip, for random inputs and odd claims.
func TestInputValueExact(t *testing.T) {
	g := newInputGen(13, exampleGrants(t))
	check := func(in *policyinput.Input) {
		t.Helper()
		got, ok := InputValue(in)
		var x any = in
		if err := util.RoundTripFast(&x); err != nil {
			t.Fatal(err)
		}
		want, err := ast.InterfaceToValue(x)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			t.Fatalf("not converted: %s", describeInput(in))
		}
		if got.Compare(want) != 0 || got.String() != want.String() {
			t.Fatalf("conversion differs\n got: %v\nwant: %v", got, want)
		}
	}
	g.stream(2000, check)
	in := scanInputs(1)[0]
	in.Principal.Claims = map[string]any{
		"big": 1e21, "small": 1e-7, "neg": math.Copysign(0, -1), "int": 42, "i64": int64(-7), "num": json.Number("1.50"),
		"html": "<a&b>", "nested": map[string]any{"l": []any{1.5, "x", nil, true, map[string]any{}}},
		"strs": []string{"a", "b"}, "empty": []any{}, "null": nil,
	}
	check(in)
	in.Mint = &policyinput.Mint{Prefix: "wh/db/t/", Access: "read-write", DurationSeconds: 900}
	check(in)
	in.Resource.Key = "bad\xffutf8"
	if _, ok := InputValue(in); ok {
		t.Fatal("invalid UTF-8 converted")
	}
}

// TestNativeBuiltins: the Go versions of built-ins give OPA's results
// (a built-in error being undefined) wherever they decide.
func TestNativeBuiltins(t *testing.T) {
	vals := []ast.Value{
		ast.String(""), ast.String("wh/db/t/x"), ast.String("wh/"), ast.String("WH/Db"), ast.String("x-amz-acl"),
		ast.String("ß"), ast.String("İ"), ast.Number("0"), ast.Number("1"), ast.Number("1.0"), ast.Number("-2.5"),
		ast.Boolean(true), ast.Boolean(false), ast.NullValue,
		ast.NewArray(ast.StringTerm("a"), ast.IntNumberTerm(1)), ast.NewArray(),
		ast.NewSet(ast.StringTerm("read"), ast.StringTerm("x-amz-acl")), ast.NewSet(),
		ast.NewObject([2]*ast.Term{ast.StringTerm("k"), ast.StringTerm("read")}),
	}
	m := getMachine(context.Background(), &program{}, nil)
	defer putMachine(m)
	for name, native := range natives {
		bi := ast.BuiltinMap[name]
		f := topdown.GetBuiltin(name)
		n := bi.Decl.Arity()
		var args [3]ast.Value
		var try func(i int)
		try = func(i int) {
			if i < n {
				for _, v := range vals {
					args[i] = v
					try(i + 1)
				}
				return
			}
			got, ok, done := native(m, append([]ast.Value(nil), args[:n]...))
			if !done {
				return
			}
			ops := make([]*ast.Term, n)
			for j := range ops {
				ops[j] = ast.NewTerm(args[j])
			}
			var want []ast.Value
			err := f(topdown.BuiltinContext{Context: context.Background()}, ops, func(t *ast.Term) error {
				want = append(want, t.Value)
				return nil
			})
			switch {
			case !ok && (err == nil && len(want) > 0):
				t.Errorf("%s%v: native undefined, OPA %v", name, args[:n], want)
			case ok && (err != nil || len(want) != 1 || !ast.ValueEqual(got, want[0])):
				t.Errorf("%s%v: native %v, OPA %v (err %v)", name, args[:n], got, want, err)
			}
		}
		try(0)
	}
}

// TestFastPathCacheBounded: the cache keeps at most CacheSize scopes and,
// whatever their number, residuals of at most maxRules rules.
func TestFastPathCacheBounded(t *testing.T) {
	e := testEngine(t, filepath.Join(examplesRoot, "grants"), genGrants(10000), Options{CacheSize: 8})
	forceBuild(e)
	f := e.fast
	in := scanInputs(1)[0]
	for i := range 20 {
		p := *in.Principal
		p.ID = fmt.Sprintf("u%d", i)
		x := *in
		x.Principal = &p
		checkSame(t, e, &x)
	}
	if n := f.l2.Len(); n != 8 {
		t.Fatalf("%d scopes cached", n)
	}
	perScope := f.rules.Load() / 8
	f.maxRules = 3 * perScope
	for i := range 5 {
		p := *in.Principal
		p.ID = fmt.Sprintf("v%d", i)
		x := *in
		x.Principal = &p
		checkSame(t, e, &x)
	}
	if n, r := f.l2.Len(), f.rules.Load(); n > 3 || r > f.maxRules {
		t.Fatalf("%d scopes, %d rules cached (budget %d)", n, r, f.maxRules)
	}
	var sum int64
	for _, s := range f.l2.Values() {
		if s.prog != nil {
			sum += int64(s.prog.nRules)
		}
	}
	if sum != f.rules.Load() {
		t.Fatalf("rule count %d, cached scopes hold %d", f.rules.Load(), sum)
	}
}

// TestObjectKeyExact: the remembered decisions' key (appendObjectKey) tells
// apart inputs that differ in any per-object field but header values.
func TestObjectKeyExact(t *testing.T) {
	empty := ""
	base := func() *policyinput.Input {
		return &policyinput.Input{Resource: policyinput.Resource{Bucket: "lake", Key: "wh/db/t/a", ARN: "arn:aws:s3:::lake/wh/db/t/a"},
			Request: policyinput.Request{Headers: policyinput.HeadersOf(map[string]string{"range": "bytes=0-1", "user-agent": "x"})}, Source: policyinput.Source{IP: "10.0.0.1"}}
	}
	key := func(in *policyinput.Input) string { return string(appendObjectKey(nil, in)) }
	want := key(base())
	for name, mutate := range map[string]func(*policyinput.Input){
		"key":          func(in *policyinput.Input) { in.Resource.Key += "b" },
		"arn":          func(in *policyinput.Input) { in.Resource.ARN += "b" },
		"prefix empty": func(in *policyinput.Input) { in.Resource.Prefix = &empty },
		"ip":           func(in *policyinput.Input) { in.Source.IP = "10.0.0.2" },
		"version":      func(in *policyinput.Input) { in.Resource.VersionID = "v1" },
		"version null": func(in *policyinput.Input) { in.Resource.VersionID = "null" },
		"key into version": func(in *policyinput.Input) {
			in.Resource.ARN, in.Resource.VersionID = "arn:aws:s3:::lake/wh/db/t/", "a"
		},
		"no headers":      func(in *policyinput.Input) { in.Request.Headers = nil },
		"empty headers":   func(in *policyinput.Input) { in.Request.Headers = policyinput.Headers{} },
		"one more header": func(in *policyinput.Input) { in.Request.Headers = in.Request.Headers.With("x-amz-acl", "") },
		"header renamed": func(in *policyinput.Input) {
			var hs policyinput.Headers
			for _, h := range in.Request.Headers {
				if h.Name != "range" {
					hs = append(hs, h)
				}
			}
			in.Request.Headers = hs.With("rang", "e")
		},
		"key into arn": func(in *policyinput.Input) {
			in.Resource.Key, in.Resource.ARN = "wh/db/t/", "aarn:aws:s3:::lake/wh/db/t/a"
		},
	} {
		in := base()
		mutate(in)
		if key(in) == want {
			t.Errorf("%s: same object key", name)
		}
	}
	a, b := base(), base()
	b.Request.Headers = b.Request.Headers.With("range", "bytes=5-9")
	if key(a) != key(b) {
		t.Error("header values changed the object key")
	}
	p1, p2 := "", "x"
	a.Resource.Prefix, b.Resource.Prefix = &p1, &p2
	if key(a) == key(b) {
		t.Error("prefixes differ, keys do not")
	}
	if key(&policyinput.Input{Request: policyinput.Request{Headers: policyinput.HeadersOf(map[string]string{})}}) == key(&policyinput.Input{}) {
		t.Error("empty and nil headers have one key")
	}
}

// TestHeadersOutOfOrder: headers given out of order, or with a name twice
// (a literal; the server's are in order), give the object key and UTF-8
// verdict of the map they spell (policyinput.Headers.Normalized): an
// order can neither change a key nor hide a header.
func TestHeadersOutOfOrder(t *testing.T) {
	headers := func() map[string]string {
		return map[string]string{"amz-sdk-request": "attempt=1", "range": "bytes=0-1", "user-agent": "x"}
	}
	in := func(h policyinput.Headers) *policyinput.Input {
		return &policyinput.Input{Resource: policyinput.Resource{Bucket: "lake", Key: "k", ARN: "arn:aws:s3:::lake/k"},
			Request: policyinput.Request{Headers: h}}
	}
	keyOf := func(x *policyinput.Input) (string, bool) {
		b, valid := appendValidHeaderNames(nil, x)
		return string(b), valid
	}
	want, _ := keyOf(in(policyinput.HeadersOf(headers())))
	for name, hs := range map[string]policyinput.Headers{
		"unsorted":  {{Name: "range", Value: "bytes=0-1"}, {Name: "amz-sdk-request", Value: "attempt=1"}, {Name: "user-agent", Value: "x"}},
		"reversed":  {{Name: "user-agent", Value: "x"}, {Name: "range", Value: "bytes=0-1"}, {Name: "amz-sdk-request", Value: "attempt=1"}},
		"duplicate": {{Name: "amz-sdk-request", Value: "attempt=1"}, {Name: "range", Value: "bytes=0-1"}, {Name: "user-agent", Value: "x"}, {Name: "range", Value: "bytes=0-1"}},
	} {
		if got, valid := keyOf(in(hs)); got != want || !valid {
			t.Errorf("%s: key %q valid %v, want %q valid", name, got, valid, want)
		}
	}
	// A header more changes the key, wherever it stands.
	h := policyinput.Headers{{Name: "x-amz-acl", Value: "public-read"}, {Name: "range", Value: "bytes=0-1"}, {Name: "amz-sdk-request", Value: "attempt=1"}, {Name: "user-agent", Value: "x"}}
	if got, _ := keyOf(in(h)); got == want {
		t.Error("a header out of order left the key unchanged")
	}
	// Invalid UTF-8 in a value is seen out of order too, and in the entry
	// of a duplicated name that stands (the later one).
	h = policyinput.Headers{{Name: "range", Value: "bytes=\xff"}, {Name: "amz-sdk-request", Value: "attempt=1"}}
	if _, valid := keyOf(in(h)); valid {
		t.Error("invalid UTF-8 in a header value passed out of order")
	}
	h = policyinput.Headers{{Name: "range", Value: "bytes=0-1"}, {Name: "range", Value: "bytes=\xff"}}
	if _, valid := keyOf(in(h)); valid {
		t.Error("invalid UTF-8 in the later of two entries passed")
	}
}
