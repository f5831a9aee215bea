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
	// Exact asks for what a vended credential may carry: only actions
	// whose scope is exact, each granted where every operation IAM
	// authorizes with it is allowed (see Scope.Inexact). Without it, the
	// grants over-approximate the policy: every action, where any of its
	// operations may be allowed (a per-principal signing session, whose
	// every request countersign still decides).
	Exact bool `json:"exact,omitempty"`
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
	// Exact is true when every action's grants are exactly what the
	// policy allows, in key and in action: for each IAM action, every
	// operation IAM authorizes with it is allowed on exactly the granted
	// keys, whatever the request's headers, method, host, source address
	// and version. It is false when some action's residual is not a set
	// of prefixes on the key (a regex, a prefix taken from a header, an
	// exclusion, a policy the compiler cannot partially evaluate), holds
	// any condition on the request, the source or the version (which no
	// session policy carries), or allows the action's operations on
	// different keys. Inexact lists those actions; without
	// ScopeQuery.Exact they are granted where any of their operations may
	// be allowed (bucket-wide under ScopeQuery.Prefix when nothing bounds
	// them), and every request is still decided per object by the policy.
	Exact bool `json:"exact"`
	// Inexact are the actions whose grants are not exact, and why.
	Inexact []ScopeInexact `json:"inexact,omitempty"`
	// Why joins Inexact's reasons.
	Why string `json:"why,omitempty"`
	// Revision is the policy revision the scope was compiled from.
	Revision string `json:"revision"`
}

// ScopeInexact is an action whose grants are not exactly the policy's.
type ScopeInexact struct {
	Action string `json:"action"`
	Why    string `json:"why"`
	// Wider is set when the reason is on the key (the analysis could not
	// read an expression on it): without ScopeQuery.Exact the action's
	// grants are then wider in key than the policy, bucket-wide at worst.
	// Otherwise they are the policy's keys, which it allows only under a
	// condition a session policy cannot carry, or for some of the
	// action's operations.
	Wider bool `json:"wider,omitempty"`
}

// Wider reports an inexact action granted wider in key than the policy.
func (s Scope) Wider() bool {
	for _, x := range s.Inexact {
		if x.Wider {
			return true
		}
	}
	return false
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
		g, inexact, err := e.scopeClass(ctx, q, class)
		if err != nil {
			return Scope{}, err
		}
		for _, x := range inexact {
			out.Exact = false
			out.Inexact = append(out.Inexact, x)
			whys = append(whys, fmt.Sprintf("%s: %s", x.Action, x.Why))
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
	out.Inexact = slices.Clone(s.Inexact)
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

// scopeClass is one access class's grants, decided per IAM action: an
// action's session-policy statement lets its holder send every operation
// IAM authorizes with it (s3req.OperationsOf), so each of them is
// analysed with its operation, action and version known. inexact names
// the actions whose grants are not exactly what the policy allows: an
// expression the analysis cannot read (on the key, or any condition on
// the request, the source or the version, which no session policy
// carries), or operations of one action allowed on different keys. In
// q.Exact mode the grants are what every operation of an exact action
// allows (inexact actions are left out); otherwise they are what any of
// them may reach, an over-approximation.
func (e *Engine) scopeClass(ctx context.Context, q ScopeQuery, class s3req.Access) ([]ScopeGrant, []ScopeInexact, error) {
	within := cover.All()
	if q.Prefix != "" {
		within = cover.Prefixes(q.Prefix)
	}
	kinds := map[scopeKind]*rego.PartialQueries{}
	kindErr := map[scopeKind]error{}
	partial := func(k scopeKind) (*rego.PartialQueries, error) {
		if pq, ok := kinds[k]; ok || kindErr[k] != nil {
			return pq, kindErr[k]
		}
		pq, err := e.partial(ctx, q, class, k)
		kinds[k], kindErr[k] = pq, err
		return pq, err
	}
	var grants []ScopeGrant
	var inexact []ScopeInexact
	for _, action := range s3req.ActionsOf(class) {
		if action == "s3:GetBucketLocation" && q.Prefix != "" {
			continue // a bucket-level request: never under a prefix
		}
		var upper, lower cover.Set
		why, wider := "", false
		first := true
		for _, op := range s3req.OperationsOf(action) {
			k := opKind(op.Operation)
			if op.Operation == "HeadBucket" {
				// HeadBucket carries no list prefix: only an s3:ListBucket
				// statement without an s3:prefix condition (the whole
				// bucket) allows it, checked below.
				continue
			}
			pq, err := partial(k)
			var set cover.Set
			var opWhy cover.Why
			switch {
			case errors.Is(err, errScopeFallback):
				set, opWhy = cover.All(), cover.Why{Key: err.Error()}
			case err != nil:
				return nil, nil, err
			default:
				set, opWhy, err = e.analyze(ctx, q, class, k, pq, action, op)
				if err != nil {
					return nil, nil, err
				}
			}
			wider = wider || opWhy.Key != ""
			if first {
				upper, lower, first = set, set, false
			} else {
				upper, lower = upper.Union(set), lower.Intersect(set)
			}
			if why == "" && opWhy.String() != "" {
				why = op.Operation + ": " + opWhy.String()
			}
		}
		if first {
			continue
		}
		upper, lower = upper.Intersect(within), lower.Intersect(within)
		if action == "s3:ListBucket" && why == "" && lower.Contains("") {
			// Listing the whole bucket is a statement without an
			// s3:prefix condition, which HeadBucket passes too.
			why, err := e.headBucket(ctx, q, class, partial)
			if err != nil {
				return nil, nil, err
			}
			if why != "" {
				inexact = append(inexact, ScopeInexact{Action: action, Why: why})
				if !q.Exact {
					grants = append(grants, actionGrants(q.Bucket, upper, action)...)
				}
				continue
			}
		}
		if why == "" && !sameSet(upper, lower) {
			why = fmt.Sprintf("the policy allows the operations of %s (%s) on different keys", action, opNames(action))
		}
		if why != "" {
			inexact = append(inexact, ScopeInexact{Action: action, Why: why, Wider: wider})
		}
		switch {
		case !q.Exact:
			grants = append(grants, actionGrants(q.Bucket, upper, action)...)
		case why == "":
			grants = append(grants, actionGrants(q.Bucket, lower, action)...)
		}
	}
	return grants, inexact, nil
}

// headBucket says why HeadBucket is not exactly allowed ("" when it is).
func (e *Engine) headBucket(ctx context.Context, q ScopeQuery, class s3req.Access, partial func(scopeKind) (*rego.PartialQueries, error)) (string, error) {
	pq, err := partial(scopeBucketLevel)
	switch {
	case errors.Is(err, errScopeFallback):
		return err.Error(), nil
	case err != nil:
		return "", err
	}
	set, why, err := e.analyze(ctx, q, class, scopeBucketLevel, pq, "s3:ListBucket", s3req.ActionOperation{Operation: "HeadBucket"})
	switch {
	case err != nil:
		return "", err
	case why.String() != "":
		return "HeadBucket: " + why.String(), nil
	case set.Empty():
		return "listing the whole bucket also allows HeadBucket, which the policy does not", nil
	}
	return "", nil
}

// opKind is the partial evaluation an operation's inputs need.
func opKind(op string) scopeKind {
	switch op {
	case "ListObjects", "ListObjectsV2":
		return scopeListPrefix
	case "HeadBucket", "GetBucketLocation":
		return scopeBucketLevel
	}
	return scopeObject
}

func opNames(action string) string {
	var names []string
	for _, op := range s3req.OperationsOf(action) {
		names = append(names, op.Operation)
	}
	return strings.Join(slices.Compact(names), ", ")
}

func sameSet(a, b cover.Set) bool {
	return a.All == b.All && slices.Equal(a.Prefixes, b.Prefixes)
}

// actionGrants are one action's grants: a bucket-level action (no key)
// on the bucket when the set is not empty, others per prefix.
func actionGrants(bucket string, s cover.Set, action string) []ScopeGrant {
	if action == "s3:GetBucketLocation" {
		if s.Empty() {
			return nil
		}
		return []ScopeGrant{{Bucket: bucket, Actions: []string{action}}}
	}
	return prefixGrants(bucket, s, []string{action})
}

// errScopeFallback marks a partial evaluation that failed for a reason of
// the policy's (not ctx's): the class falls back to bucket-wide.
var errScopeFallback = errors.New("policy: scope not compiled")

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

// partial runs the partial evaluation of kind k for class. An error
// wrapping errScopeFallback is the policy's; any other is ctx's.
func (e *Engine) partial(ctx context.Context, q ScopeQuery, class s3req.Access, k scopeKind) (*rego.PartialQueries, error) {
	c := e.scope
	if c.prepErr != nil {
		return nil, fmt.Errorf("%w: preparing the partial evaluation: %v", errScopeFallback, c.prepErr)
	}
	known, err := scopeInput(q, class, k, "", "", false)
	if err != nil {
		return nil, err
	}
	c.partials.Add(1)
	pqs, err := c.queries[k].Partial(ctx, rego.EvalParsedInput(known))
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("%w: partial evaluation: %v", errScopeFallback, err)
	}
	return pqs, nil
}

// analyze reads the residual pqs of kind k for one operation of action:
// its operation, action and (when not versioned) its empty version known,
// every other unknown a condition that makes the result lossy (Exact).
func (e *Engine) analyze(ctx context.Context, q ScopeQuery, class s3req.Access, k scopeKind, pqs *rego.PartialQueries, action string, op s3req.ActionOperation) (cover.Set, cover.Why, error) {
	known, err := scopeInput(q, class, k, op.Operation, action, !op.Versioned)
	if err != nil {
		return cover.Set{}, cover.Why{}, err
	}
	opts := cover.Options{Known: known, Defined: scopeDefined, Never: scopeNever, Exact: true}
	for _, u := range scopeUnknowns[k] {
		switch {
		case u == "input.operation" || u == "input.action":
			continue
		case u == "input.resource.version_id" && !op.Versioned:
			continue
		}
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
func scopeInput(q ScopeQuery, class s3req.Access, k scopeKind, operation, action string, unversioned bool) (ast.Object, error) {
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
	if operation != "" {
		doc["operation"], doc["action"] = operation, action
	}
	if unversioned {
		res["version_id"] = ""
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
