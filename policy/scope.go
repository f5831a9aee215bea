package policy

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/countersign/countersign/internal/policyinput"
	"github.com/countersign/countersign/policy/internal/cover"
	"github.com/countersign/countersign/s3req"
	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/storage"
)

// The scope compiler (docs/design.md, "Scope compiler"): from the policy,
// partially evaluated with the per-object fields unknown, the key prefixes
// and actions a principal's allows can reach in one bucket, for an STS
// session policy (package sessionpolicy).

// ScopeQuery asks what a principal may reach.
type ScopeQuery struct {
	Principal Principal
	// Access is a data access class (read, write, delete, delete_version,
	// list), or "" for all of them. admin is never compiled.
	Access string
	// Bucket is the bucket the scope is about (required: the policy is
	// compiled per bucket).
	Bucket string
	// Prefix, if set, confines the scope to keys (and list prefixes) under
	// it: a vended credential's table location.
	Prefix string
	// Table is the per-table route's table, nil for the legacy route.
	Table *Table
}

// ScopeGrant is one resource of a scope: the objects under Prefix in
// Bucket, for the object actions among Actions, and for s3:ListBucket the
// list prefixes under Prefix (its s3:prefix condition). s3:GetBucketLocation
// comes with Prefix "".
type ScopeGrant struct {
	Bucket  string   `json:"bucket"`
	Prefix  string   `json:"prefix"`
	Actions []string `json:"actions"` // sorted IAM actions
}

// Scope is what a principal may reach in a bucket: an over-approximation
// of the policy's allows (every object the policy allows is covered) and,
// when Exact, no wider than the policy's prefixes.
type Scope struct {
	// Grants are sorted by prefix; none when the policy allows nothing.
	Grants []ScopeGrant `json:"grants"`
	// Exact is false when some access class's residual is not a set of
	// prefixes on the key (a regex, a prefix taken from a header, an
	// exclusion, a policy the compiler cannot partially evaluate): that
	// class is granted bucket-wide (under ScopeQuery.Prefix if set), or
	// the prefixes that bound it when there are some, and every request
	// is still decided per object by the policy. Conditions on other
	// fields (headers, operation, source address) never reach a session
	// policy, exact or not.
	Exact bool `json:"exact"`
	// Why says which class fell back to bucket-wide and why.
	Why string `json:"why,omitempty"`
	// Revision is the policy revision the scope was compiled from.
	Revision string `json:"revision"`
}

// ErrScopeQuery is the error of a ScopeQuery the compiler refuses.
var ErrScopeQuery = errors.New("policy: scope query")

// scopeCompiler holds an engine's partial queries for the scope compiler,
// prepared at first use.
type scopeCompiler struct {
	mods  []*ast.Module
	store storage.Store

	once    sync.Once
	prepErr error
	queries map[scopeKind]rego.PreparedPartialQuery

	// cache holds recent scopes by query (an Engine is immutable, so a
	// scope never outlives the policy it was compiled from), and
	// partials counts partial evaluations (tests).
	cache    *lru.Cache[[32]byte, Scope]
	partials atomic.Int64
}

// scopeCacheSize is how many compiled scopes an Engine keeps: a mint or a
// session-cache miss asks again for the same principal, class and table.
const scopeCacheSize = 1024

// scopeKind is what is unknown in a partial evaluation.
type scopeKind uint8

const (
	scopeObject      scopeKind = iota // the key: read, write, delete, delete_version
	scopeListPrefix                   // a list's prefix (a string)
	scopeBucketLevel                  // nothing: HeadBucket, GetBucketLocation (no key, no prefix)
)

// scopeUnknowns: besides the per-object fields, the operation, action and
// the whole request are unknown, so that one scope covers every operation
// of the class and every header, method and host.
var scopeUnknowns = map[scopeKind][]string{
	scopeObject:      {"input.resource.key", "input.resource.arn", "input.resource.version_id", "input.operation", "input.action", "input.request", "input.source"},
	scopeListPrefix:  {"input.resource.prefix", "input.resource.arn", "input.resource.version_id", "input.operation", "input.action", "input.request", "input.source"},
	scopeBucketLevel: {"input.resource.arn", "input.resource.version_id", "input.operation", "input.action", "input.request", "input.source"},
}

// scopeDefined are the unknown fields every input has.
var scopeDefined = []ast.Ref{
	ast.MustParseRef("input.resource.arn"), ast.MustParseRef("input.resource.version_id"),
	ast.MustParseRef("input.operation"), ast.MustParseRef("input.action"),
}

// scopeNever: a scope is what S3 requests may reach, and no S3 request
// has a mint's operation or action. Without this, a rule that allows
// mints on their own (input.operation == "MintCredentials") would make
// every class's scope the whole bucket, and a mint, whose default is that
// the scope covers its prefix, could then vend what no request may read.
var scopeNever = []cover.Never{
	{Ref: ast.MustParseRef("input.operation"), Values: []ast.Value{ast.String(policyinput.OperationMint)}},
	{Ref: ast.MustParseRef("input.action"), Values: []ast.Value{ast.String(policyinput.ActionMint)}},
}

func (c *scopeCompiler) prepare() {
	c.cache, _ = lru.New[[32]byte, Scope](scopeCacheSize) // cannot fail: the size is positive
	c.queries = map[scopeKind]rego.PreparedPartialQuery{}
	for _, k := range []scopeKind{scopeObject, scopeListPrefix, scopeBucketLevel} {
		opts := []func(*rego.Rego){
			rego.Query("data." + Package + ".allow == true"),
			rego.Store(c.store),
			rego.Unknowns(scopeUnknowns[k]),
		}
		for _, m := range c.mods {
			opts = append(opts, rego.ParsedModule(m))
		}
		pq, err := rego.New(opts...).PrepareForPartial(context.Background())
		if err != nil {
			c.prepErr = err
			return
		}
		c.queries[k] = pq
	}
}

// Scope compiles what q.Principal may reach in q.Bucket (see Scope). The
// error is q's (ErrScopeQuery) or ctx's; a policy the compiler cannot
// express gives a bucket-wide Scope with Exact false, never an error.
func (e *Engine) Scope(ctx context.Context, q ScopeQuery) (Scope, error) {
	classes, err := q.classes()
	if err != nil {
		return Scope{}, err
	}
	if e.scope == nil {
		return Scope{}, fmt.Errorf("%w: the engine has no scope compiler", ErrScopeQuery)
	}
	e.scope.once.Do(e.scope.prepare)
	key, keyed := q.cacheKey()
	if keyed {
		if s, ok := e.scope.cache.Get(key); ok {
			return s.clone(), nil
		}
	}
	out := Scope{Exact: true, Revision: e.revision}
	var grants []ScopeGrant
	var whys []string
	for _, class := range classes {
		g, why, err := e.scopeClass(ctx, q, class)
		if err != nil {
			return Scope{}, err
		}
		if why != "" {
			out.Exact = false
			whys = append(whys, fmt.Sprintf("%s: %s", class, why))
		}
		grants = append(grants, g...)
	}
	out.Grants = mergeGrants(grants)
	out.Why = strings.Join(whys, "; ")
	if keyed {
		e.scope.cache.Add(key, out.clone())
	}
	return out, nil
}

// cacheKey is the SHA-256 of q's JSON (map keys sorted, so equal queries
// give equal keys).
func (q ScopeQuery) cacheKey() ([32]byte, bool) {
	raw, err := json.Marshal(q)
	if err != nil {
		return [32]byte{}, false
	}
	return sha256.Sum256(raw), true
}

// clone is s with its own grant slices: a cached scope is never shared
// with a caller that might change it.
func (s Scope) clone() Scope {
	out := s
	out.Grants = make([]ScopeGrant, len(s.Grants))
	for i, g := range s.Grants {
		out.Grants[i] = ScopeGrant{Bucket: g.Bucket, Prefix: g.Prefix, Actions: slices.Clone(g.Actions)}
	}
	if s.Grants == nil {
		out.Grants = nil
	}
	return out
}

func (q ScopeQuery) classes() ([]s3req.Access, error) {
	if q.Bucket == "" {
		return nil, fmt.Errorf("%w: no bucket (a scope is compiled per bucket)", ErrScopeQuery)
	}
	if q.Access == "" {
		return s3req.DataAccess, nil
	}
	a := s3req.Access(q.Access)
	if !slices.Contains(s3req.DataAccess, a) {
		return nil, fmt.Errorf("%w: access class %q is not one of read, write, delete, delete_version, list (admin operations are never granted through a session policy)", ErrScopeQuery, q.Access)
	}
	return []s3req.Access{a}, nil
}

// scopeClass is one access class's grants; why is set when they are wider
// than the policy on keys: the bucket-wide fallback, or prefixes the
// policy narrows further in a way a session policy cannot express.
func (e *Engine) scopeClass(ctx context.Context, q ScopeQuery, class s3req.Access) ([]ScopeGrant, string, error) {
	actions := s3req.ActionsOf(class)
	within := cover.All()
	if q.Prefix != "" {
		within = cover.Prefixes(q.Prefix)
	}
	fallback := func(why string) ([]ScopeGrant, string, error) {
		g := []ScopeGrant{{Bucket: q.Bucket, Prefix: q.Prefix, Actions: actions}}
		return g, why, nil
	}
	if class != s3req.AccessList {
		set, why, err := e.cover(ctx, q, class, scopeObject)
		if err != nil || set.All && why != "" {
			return fallbackOr(err, why, fallback)
		}
		return prefixGrants(q.Bucket, set.Intersect(within), actions), why, nil
	}
	set, why, err := e.cover(ctx, q, class, scopeListPrefix)
	if err != nil || set.All && why != "" {
		return fallbackOr(err, why, fallback)
	}
	grants := prefixGrants(q.Bucket, set.Intersect(within), []string{"s3:ListBucket"})
	if q.Prefix == "" {
		// Bucket-level requests (HeadBucket, GetBucketLocation): IAM
		// authorizes HeadBucket as s3:ListBucket, which cannot be granted
		// without also allowing a listing with no prefix, so only
		// GetBucketLocation is (docs/design.md, "Scope compiler").
		bl, _, err := e.cover(ctx, q, class, scopeBucketLevel)
		switch {
		case err != nil && !errors.Is(err, errScopeFallback):
			return nil, "", err
		case err != nil || !bl.Empty():
			grants = append(grants, ScopeGrant{Bucket: q.Bucket, Actions: []string{"s3:GetBucketLocation"}})
		}
	}
	return grants, why, nil
}

// errScopeFallback marks a partial evaluation that failed for a reason of
// the policy's (not ctx's): the class falls back to bucket-wide.
var errScopeFallback = errors.New("policy: scope not compiled")

func fallbackOr(err error, why string, fallback func(string) ([]ScopeGrant, string, error)) ([]ScopeGrant, string, error) {
	if err != nil {
		if !errors.Is(err, errScopeFallback) {
			return nil, "", err
		}
		return fallback(err.Error())
	}
	return fallback(why)
}

func prefixGrants(bucket string, s cover.Set, actions []string) []ScopeGrant {
	if s.All {
		return []ScopeGrant{{Bucket: bucket, Actions: slices.Clone(actions)}}
	}
	out := make([]ScopeGrant, 0, len(s.Prefixes))
	for _, p := range s.Prefixes {
		out = append(out, ScopeGrant{Bucket: bucket, Prefix: p, Actions: slices.Clone(actions)})
	}
	return out
}

// mergeGrants sorts the grants by prefix and merges the actions of equal
// prefixes.
func mergeGrants(gs []ScopeGrant) []ScopeGrant {
	slices.SortStableFunc(gs, func(a, b ScopeGrant) int {
		return strings.Compare(a.Bucket+"\x00"+a.Prefix, b.Bucket+"\x00"+b.Prefix)
	})
	var out []ScopeGrant
	for _, g := range gs {
		if n := len(out); n > 0 && out[n-1].Bucket == g.Bucket && out[n-1].Prefix == g.Prefix {
			out[n-1].Actions = append(out[n-1].Actions, g.Actions...)
			continue
		}
		out = append(out, ScopeGrant{Bucket: g.Bucket, Prefix: g.Prefix, Actions: slices.Clone(g.Actions)})
	}
	for i := range out {
		slices.Sort(out[i].Actions)
		out[i].Actions = slices.Compact(out[i].Actions)
	}
	return out
}

// cover runs one partial evaluation and its analysis. An error wrapping
// errScopeFallback is the policy's; any other is ctx's.
func (e *Engine) cover(ctx context.Context, q ScopeQuery, class s3req.Access, k scopeKind) (cover.Set, string, error) {
	c := e.scope
	if c.prepErr != nil {
		return cover.Set{}, "", fmt.Errorf("%w: preparing the partial evaluation: %v", errScopeFallback, c.prepErr)
	}
	known, err := scopeInput(q, class, k)
	if err != nil {
		return cover.Set{}, "", err
	}
	c.partials.Add(1)
	pqs, err := c.queries[k].Partial(ctx, rego.EvalParsedInput(known))
	if err != nil {
		if ctx.Err() != nil {
			return cover.Set{}, "", ctx.Err()
		}
		return cover.Set{}, "", fmt.Errorf("%w: partial evaluation: %v", errScopeFallback, err)
	}
	opts := cover.Options{Known: known, Defined: scopeDefined, Never: scopeNever}
	for _, u := range scopeUnknowns[k] {
		opts.Unknowns = append(opts.Unknowns, ast.MustParseRef(u))
	}
	switch k {
	case scopeObject:
		opts.Field = ast.MustParseRef("input.resource.key")
		opts.ARN = "arn:aws:s3:::" + q.Bucket + "/"
	case scopeListPrefix:
		opts.Field = ast.MustParseRef("input.resource.prefix")
	}
	return cover.Analyze(ctx, pqs, opts)
}

// scopeInput is the known part of the input of kind k: the principal, the
// access class, the bucket, the table; for objects a null list prefix,
// for lists the empty key (as s3req builds them).
func scopeInput(q ScopeQuery, class s3req.Access, k scopeKind) (ast.Object, error) {
	p := q.Principal
	res := map[string]any{"bucket": q.Bucket}
	switch k {
	case scopeObject:
		res["prefix"] = nil
	case scopeListPrefix:
		res["key"] = ""
	case scopeBucketLevel:
		res["key"], res["prefix"] = "", nil
	}
	doc := map[string]any{
		"version":     InputVersion,
		"principal":   &p,
		"access":      string(class),
		"resource":    res,
		"copy_source": nil,
		"table":       q.Table,
		"mint":        nil, // a sign request's: a scope is about S3 requests
	}
	raw, err := json.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrScopeQuery, err)
	}
	v, err := ast.ValueFromReader(strings.NewReader(string(raw)))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrScopeQuery, err)
	}
	obj, ok := v.(ast.Object)
	if !ok {
		return nil, fmt.Errorf("%w: input is a %T", ErrScopeQuery, v)
	}
	return obj, nil
}
