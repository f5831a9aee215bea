package sessionpolicy_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/countersign/countersign/policy"
	"github.com/countersign/countersign/sessionpolicy"
)

var readActions = []string{"s3:GetObject", "s3:GetObjectTagging", "s3:GetObjectVersion", "s3:GetObjectVersionTagging", "s3:ListMultipartUploadParts"}

func grant(prefix string, actions ...string) policy.ScopeGrant {
	return policy.ScopeGrant{Bucket: "lake", Prefix: prefix, Actions: actions}
}

// TestCompileGrantsExample: the grants example's scope for ann (read and
// list on wh/db/t/ and wh/sales/) as the exact document STS gets.
func TestCompileGrantsExample(t *testing.T) {
	s := policy.Scope{Exact: true, Grants: []policy.ScopeGrant{
		grant("", "s3:GetBucketLocation"),
		grant("wh/db/t/", append(readActions, "s3:ListBucket")...),
		grant("wh/sales/", append(readActions, "s3:ListBucket")...),
	}}
	d, err := sessionpolicy.Compile(s, sessionpolicy.Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"Version":"2012-10-17","Statement":[` +
		`{"Effect":"Allow","Action":["s3:GetObject","s3:GetObjectTagging","s3:GetObjectVersion","s3:GetObjectVersionTagging","s3:ListMultipartUploadParts"],"Resource":["arn:aws:s3:::lake/wh/db/t/*","arn:aws:s3:::lake/wh/sales/*"]},` +
		`{"Effect":"Allow","Action":["s3:ListBucket"],"Resource":["arn:aws:s3:::lake"],"Condition":{"StringLike":{"s3:prefix":["wh/db/t/*","wh/sales/*"]}}},` +
		`{"Effect":"Allow","Action":["s3:GetBucketLocation"],"Resource":["arn:aws:s3:::lake"]}]}`
	if got := d.JSON(); got != want {
		t.Fatalf("document\n got %s\nwant %s", got, want)
	}
	if d.Coarsened != 0 {
		t.Fatalf("coarsened %d times", d.Coarsened)
	}
	doc := parseDoc(t, d.JSON())
	in, out := "wh/db/t/data/f.parquet", "wh/db/t2/data/f.parquet"
	if !doc.allows(t, iamRequest{action: "s3:GetObject", resource: "arn:aws:s3:::lake/" + in}) ||
		doc.allows(t, iamRequest{action: "s3:GetObject", resource: "arn:aws:s3:::lake/" + out}) ||
		doc.allows(t, iamRequest{action: "s3:PutObject", resource: "arn:aws:s3:::lake/" + in}) {
		t.Fatal("object statement does not hold the grants")
	}
	p, wide, none := "wh/db/t/", "wh/db/", ""
	if !doc.allows(t, iamRequest{action: "s3:ListBucket", resource: "arn:aws:s3:::lake", prefix: &p}) ||
		doc.allows(t, iamRequest{action: "s3:ListBucket", resource: "arn:aws:s3:::lake", prefix: &wide}) ||
		doc.allows(t, iamRequest{action: "s3:ListBucket", resource: "arn:aws:s3:::lake", prefix: &none}) ||
		doc.allows(t, iamRequest{action: "s3:ListBucket", resource: "arn:aws:s3:::lake"}) {
		t.Fatal("list statement does not hold the grants")
	}
}

// TestCompileIsDeterministic: the same grants in any order give the same
// bytes.
func TestCompileIsDeterministic(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	gs := randomGrants(r, 60)
	first, err := sessionpolicy.Compile(policy.Scope{Grants: gs}, sessionpolicy.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for range 20 {
		r.Shuffle(len(gs), func(i, j int) { gs[i], gs[j] = gs[j], gs[i] })
		d, err := sessionpolicy.Compile(policy.Scope{Grants: gs}, sessionpolicy.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if d.JSON() != first.JSON() {
			t.Fatalf("order changed the document:\n%s\n%s", first.JSON(), d.JSON())
		}
	}
}

func randomGrants(r *rand.Rand, n int) []policy.ScopeGrant {
	var gs []policy.ScopeGrant
	for range n {
		p := fmt.Sprintf("wh/db%d/t%d/", r.IntN(7), r.IntN(40))
		switch r.IntN(3) {
		case 0:
			gs = append(gs, grant(p, readActions...))
		case 1:
			gs = append(gs, grant(p, "s3:ListBucket"))
		default:
			gs = append(gs, grant(p, "s3:PutObject", "s3:AbortMultipartUpload"))
		}
	}
	return gs
}

// TestCoarsenedDocumentFitsAndCovers: a scope too large for 2,048
// characters is coarsened by longest common prefixes until it fits, and
// still allows every object and list prefix the scope grants; the merges
// widen as little as the limit needs (the merged prefixes are common
// prefixes of what they replace, so wh/db0/ never becomes wh/ while
// others fit).
func TestCoarsenedDocumentFitsAndCovers(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	gs := randomGrants(r, 300)
	d, err := sessionpolicy.Compile(policy.Scope{Grants: gs}, sessionpolicy.Options{})
	if err != nil {
		t.Fatal(err)
	}
	js := d.JSON()
	if len(js) > sessionpolicy.DefaultMaxBytes {
		t.Fatalf("document is %d characters, over %d", len(js), sessionpolicy.DefaultMaxBytes)
	}
	if d.Coarsened == 0 {
		t.Fatal("300 prefixes fit without coarsening: the test does not test it")
	}
	doc := parseDoc(t, js)
	for _, g := range gs {
		key := g.Prefix + "x/y.parquet"
		for _, a := range g.Actions {
			req := iamRequest{action: a, resource: "arn:aws:s3:::lake/" + key}
			if a == "s3:ListBucket" {
				req = iamRequest{action: a, resource: "arn:aws:s3:::lake", prefix: &key}
			}
			if !doc.allows(t, req) {
				t.Fatalf("coarsened document misses %s on %s:\n%s", a, key, js)
			}
		}
	}
	// Not wider than a common prefix of granted prefixes: nothing outside
	// wh/db (every grant's common prefix) is allowed.
	if doc.allows(t, iamRequest{action: "s3:GetObject", resource: "arn:aws:s3:::lake/wh/sales/x"}) {
		t.Fatalf("coarsening widened past the grants' common prefix:\n%s", js)
	}
	// A limit with room to spare needs fewer merges.
	small, err := sessionpolicy.Compile(policy.Scope{Grants: gs}, sessionpolicy.Options{MaxBytes: 1200})
	if err != nil {
		t.Fatal(err)
	}
	if len(small.JSON()) > 1200 || small.Coarsened <= d.Coarsened {
		t.Fatalf("MaxBytes 1200: %d characters after %d merges (2048: %d merges)", len(small.JSON()), small.Coarsened, d.Coarsened)
	}
}

// TestTooLargeFailsClosed: when even one prefix per statement does not fit,
// Compile fails with an error naming the limit; a limit above STS's is
// refused.
func TestTooLargeFailsClosed(t *testing.T) {
	var gs []policy.ScopeGrant
	for i := range 40 {
		// 40 buckets, 40 statements of several actions each.
		gs = append(gs, policy.ScopeGrant{Bucket: fmt.Sprintf("bucket-number-%02d", i), Prefix: "wh/", Actions: readActions})
	}
	_, err := sessionpolicy.Compile(policy.Scope{Grants: gs}, sessionpolicy.Options{})
	if !errors.Is(err, sessionpolicy.ErrTooLarge) || !strings.Contains(err.Error(), "2048") || !strings.Contains(err.Error(), "2,048 characters") {
		t.Fatalf("err = %v, want ErrTooLarge naming the 2048-character limit", err)
	}
	if _, err := sessionpolicy.Compile(policy.Scope{Grants: gs[:1]}, sessionpolicy.Options{MaxBytes: 4096}); err == nil || !strings.Contains(err.Error(), "2048") {
		t.Fatalf("MaxBytes 4096: err = %v, want a refusal naming STS's limit", err)
	}
	if _, err := sessionpolicy.Compile(policy.Scope{Grants: gs[:1]}, sessionpolicy.Options{}); err != nil {
		t.Fatalf("one bucket: %v", err)
	}
}

func TestEmptyScope(t *testing.T) {
	if _, err := sessionpolicy.Compile(policy.Scope{Exact: true}, sessionpolicy.Options{}); !errors.Is(err, sessionpolicy.ErrEmptyScope) {
		t.Fatalf("err = %v, want ErrEmptyScope", err)
	}
}

// TestWildcardsAndEscapes: a prefix holding IAM's wildcards or a policy
// variable is cut before them (wider, never narrower), and characters STS
// does not accept are JSON escapes, so the length is the character count.
func TestWildcardsAndEscapes(t *testing.T) {
	d, err := sessionpolicy.Compile(policy.Scope{Grants: []policy.ScopeGrant{
		grant("wh/a*b/", "s3:GetObject"),
		grant("wh/q?/", "s3:GetObject"),
		grant("wh/日本/\"x\"/", "s3:GetObject"),
	}}, sessionpolicy.Options{})
	if err != nil {
		t.Fatal(err)
	}
	js := d.JSON()
	for _, want := range []string{`"arn:aws:s3:::lake/wh/a*"`, `"arn:aws:s3:::lake/wh/q*"`, `\u65e5\u672c/\"x\"/*"`} {
		if !strings.Contains(js, want) {
			t.Errorf("document lacks %s:\n%s", want, js)
		}
	}
	for _, c := range js {
		if c < 0x20 || c > 0x7e {
			t.Fatalf("document has character %U:\n%s", c, js)
		}
	}
	doc := parseDoc(t, js)
	for _, k := range []string{"wh/a*b/x", "wh/q?/x", "wh/日本/\"x\"/y"} {
		if !doc.allows(t, iamRequest{action: "s3:GetObject", resource: "arn:aws:s3:::lake/" + k}) {
			t.Errorf("%s not allowed:\n%s", k, js)
		}
	}
	if doc.allows(t, iamRequest{action: "s3:GetObject", resource: "arn:aws:s3:::lake/wh/other"}) {
		t.Errorf("cut prefixes widened past the wildcard:\n%s", js)
	}
	v, err := sessionpolicy.Compile(policy.Scope{Grants: []policy.ScopeGrant{grant("wh/${aws:username}/", "s3:GetObject")}}, sessionpolicy.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := v.JSON(); !strings.Contains(got, `"arn:aws:s3:::lake/wh/*"`) || strings.Contains(got, "$") {
		t.Errorf("a policy variable in a prefix: %s", got)
	}
}

func TestBadGrantsRefused(t *testing.T) {
	for _, g := range []policy.ScopeGrant{
		{Bucket: "", Prefix: "a/", Actions: []string{"s3:GetObject"}},
		{Bucket: "la*ke", Prefix: "a/", Actions: []string{"s3:GetObject"}},
		{Bucket: "lake", Prefix: "a/", Actions: []string{"s3:*"}},
		{Bucket: "lake", Prefix: "a/", Actions: []string{"iam:PassRole"}},
	} {
		if _, err := sessionpolicy.Compile(policy.Scope{Grants: []policy.ScopeGrant{g}}, sessionpolicy.Options{}); err == nil {
			t.Errorf("%+v: compiled", g)
		}
	}
}

// TestExactRefusesWhatItCannotName: with Options.Exact a prefix holding
// an IAM metacharacter is refused naming the character (cut, lake/wh/db/$/
// would be minted as lake/wh/db/*, every sibling of $/), and a scope too
// large to name prefix by prefix is refused rather than coarsened; a
// scope it can name is the same document as without Exact.
func TestExactRefusesWhatItCannotName(t *testing.T) {
	for _, p := range []string{"wh/db/$/", "wh/a*b/", "wh/q?/", "wh/${aws:username}/"} {
		_, err := sessionpolicy.Compile(policy.Scope{Grants: []policy.ScopeGrant{grant(p, "s3:GetObject")}}, sessionpolicy.Options{Exact: true})
		c := p[strings.IndexAny(p, sessionpolicy.Metachars)]
		if !errors.Is(err, sessionpolicy.ErrNotExact) || !strings.Contains(err.Error(), fmt.Sprintf("%q", c)) {
			t.Errorf("prefix %q: err = %v, want ErrNotExact naming %q", p, err, c)
		}
		// Without Exact (a signing session) it is still cut, wider.
		if _, err := sessionpolicy.Compile(policy.Scope{Grants: []policy.ScopeGrant{grant(p, "s3:GetObject")}}, sessionpolicy.Options{}); err != nil {
			t.Errorf("prefix %q without Exact: %v", p, err)
		}
	}
	r := rand.New(rand.NewPCG(3, 4))
	gs := randomGrants(r, 300)
	if _, err := sessionpolicy.Compile(policy.Scope{Grants: gs}, sessionpolicy.Options{Exact: true}); !errors.Is(err, sessionpolicy.ErrNotExact) || !strings.Contains(err.Error(), "widen") {
		t.Fatalf("300 prefixes with Exact: err = %v, want ErrNotExact (coarsening would widen)", err)
	}
	plain := []policy.ScopeGrant{grant("wh/db/t/", readActions...), grant("wh/db/t/", "s3:ListBucket")}
	a, err := sessionpolicy.Compile(policy.Scope{Grants: plain}, sessionpolicy.Options{Exact: true})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := sessionpolicy.Compile(policy.Scope{Grants: plain}, sessionpolicy.Options{})
	if a.JSON() != b.JSON() || a.Coarsened != 0 {
		t.Fatalf("exact %s\nplain %s", a.JSON(), b.JSON())
	}
}
