package fastpath

import (
	"bytes"
	"context"
	"fmt"
	"hash/maphash"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/countersign/countersign/internal/policyinput"
	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/storage"
)

// Package is the Rego package whose documents the fast path decides
// (policy.Package).
const Package = "countersign.authz"

// Options configures a Cache.
type Options struct {
	// CacheSize is how many scopes keep their residual program (least
	// recently used first out); DefaultCacheSize when not positive.
	// Whatever the size, the cached residuals hold at most 50,000 rules
	// (about 50 MB).
	CacheSize int
	// OnCache, if set, is called once per decision the cache was asked
	// for: true when a residual decided. OnRemembered, if set, is called
	// per decision of a residual: true when it was a remembered one.
	OnCache      func(hit bool)
	OnRemembered func(hit bool)
}

// DefaultCacheSize is the default number of cached scopes. A scope's
// residual takes about 0.1–0.2 MB for a principal with a few groups on the
// 10,000-grant example document.
const DefaultCacheSize = 256

const (
	l1Size   = 256  // lock-free front of the cache, direct-mapped
	memoSize = 4096 // remembered decisions (all scopes), direct-mapped
	seenSize = 4096 // scopes seen once, waiting for a second sighting
	// maxResidualRules: a scope whose residual is larger is decided by full
	// evaluations (a residual takes about 1 KB per rule).
	maxResidualRules = 5000
	// maxCachedRules bounds the cache's memory: scopes are evicted, least
	// recently used first, while the cached residuals hold more rules.
	maxCachedRules = 50000
	// partialTimeout bounds one partial evaluation.
	partialTimeout = 10 * time.Second

	helperPackage     = "countersign_fastpath"
	undefinedSentinel = "countersign_fastpath_undefined"
	queryPackage      = "countersign_fastpath_query"
	residualNamespace = "countersign_residual"
)

// Cache is an engine's cache of residual programs, one per scope: it
// builds a scope's program (in the background, at its second sighting)
// and decides objects with it. A new engine (a reload) starts with an
// empty one: nothing outlives the policy and data it was computed from.
type Cache struct {
	onCache      func(hit bool)
	onRemembered func(hit bool)
	admitAfter   int  // sightings of a scope before it is built (2; tests: 1)
	syncBuild    bool // tests: build on the deciding goroutine
	shallow      bool // benchmarks: shallow inlining instead of the analysis
	noMemo       bool // benchmarks: run the residual for every object
	// noHeaderMemo: evaluate every header rule (benchmarks, and tests
	// comparing both ways)
	noHeaderMemo bool
	// noCompiled: the interpreter evaluates compiled rule sets too
	// (compiled.go; the differential test of the compiled form).
	noCompiled bool

	mods      []*ast.Module
	store     storage.Store
	helper    *ast.Module
	query     string
	nTargets  int
	reasonIdx int // -1: the policy has no reason rule

	prepOnce sync.Once
	pq       rego.PreparedPartialQuery
	prepErr  error
	kept     []string // rules partial evaluation does not inline
	// strictNeg: references under negation must be defined (pecaveats.go)
	strictNeg bool
	// checks evaluate scopeChecked's rules per scope: their conflicts
	checks []rego.PreparedEvalQuery
	// traced are tracedFunctions' definitions: a functionConflictTracer
	// watches them in every scope's partial evaluation.
	traced map[*ast.Rule]string

	seed     maphash.Seed
	l1       [l1Size]atomic.Pointer[scope]
	l2       *lru.Cache[uint64, *scope]
	seen     [seenSize]atomic.Uint64
	building atomic.Bool
	scopeIDs atomic.Uint64
	// memo remembers the residuals' recent decisions that read no header
	// value, by scope and the object's other fields (appendObjectKey): an
	// engine reads one file several times (footer, then column chunks),
	// each read with another Range. One table for all scopes bounds its
	// memory (about 1 MB) however many scopes are cached.
	memo     [memoSize]atomic.Pointer[memoDecision]
	rules    atomic.Int64 // rules of the cached residuals
	maxRules int64        // maxCachedRules (tests: less)

	stats fastStats
}

type fastStats struct {
	hits        atomic.Uint64 // decided by a residual (or its remembered decision)
	memoHits    atomic.Uint64 // of those, remembered
	headerHits  atomic.Uint64 // header rules' remembered results used (headermemo.go)
	misses      atomic.Uint64 // no residual for the scope (yet)
	unsupported atomic.Uint64 // the scope's residual is unsupported
	fallbacks   atomic.Uint64 // the residual could not decide this object
	panics      atomic.Uint64 // the interpreter or a build panicked (a bug: recovered, fully evaluated)
	builds      atomic.Uint64 // residuals built
	failed      atomic.Uint64 // builds that ended unsupported
}

// scope is one cached partial evaluation.
type scope struct {
	hash  uint64
	key   []byte
	known *knownInput
	prog  *program // nil: unsupported, decide by full evaluation
	err   error
	id    uint64 // unique in its Cache: names the scope in memo
}

// memoDecision is a remembered decision of scope id's residual for the
// object whose appendObjectKey is key.
type memoDecision struct {
	scope  uint64
	hash   uint64
	key    string
	allow  bool
	reason string
}

// memoKeyRoom is the object key encoding a remembered decision holds in
// its own allocation: a data file's key, ARN, source and header names fit.
const memoKeyRoom = 256

// memoBox is a memoDecision and the bytes of its key.
type memoBox struct {
	memoDecision
	key [memoKeyRoom]byte
}

// newMemoDecision is d remembered for the object whose encoding is key, in
// one allocation when key fits (the memo is written once per object that
// misses it: every footer of a scan). The box's bytes are never written
// again, so the string can alias them.
func newMemoDecision(d memoDecision, key []byte) *memoDecision {
	if len(key) == 0 || len(key) > memoKeyRoom {
		long := new(memoDecision) // not &d, which would move d to the heap on every path
		*long = d
		long.key = string(key)
		return long
	}
	b := &memoBox{memoDecision: d}
	n := copy(b.key[:], key)
	b.memoDecision.key = unsafe.String(&b.key[0], n)
	return &b.memoDecision
}

// New returns the cache of the policy mods (compiled over store, which
// holds docs), or nil and the reason when the policy must always be fully
// evaluated.
func New(mods []*ast.Module, docs map[string]any, store storage.Store, opts Options) (*Cache, string) {
	if why := fastIneligible(mods, docs); why != "" {
		return nil, why
	}
	targets := fastTargets(mods)
	if len(targets) == 0 || targets[0] != "data."+Package+".allow" {
		return nil, "no allow rule"
	}
	reasonIdx := -1
	if len(targets) > 1 && targets[1] == "data."+Package+".reason" {
		reasonIdx = 1
	}
	// The helper rules copy each target, or a sentinel when it is
	// undefined: never true, never a string, so it decides like undefined.
	var src, q strings.Builder
	fmt.Fprintf(&src, "package %s\n\n", helperPackage)
	for i, t := range targets {
		fmt.Fprintf(&src, "default t%d := {%q: true}\n\nt%d := v if {\n\tv := %s\n}\n\n", i, undefinedSentinel, i, t)
		if i > 0 {
			q.WriteString("; ")
		}
		fmt.Fprintf(&q, "x%d = data.%s.t%d", i, helperPackage, i)
	}
	helper, err := ast.ParseModuleWithOpts("countersign_fastpath.rego", src.String(), ast.ParserOptions{RegoVersion: ast.RegoV1})
	if err != nil {
		return nil, "helper: " + err.Error()
	}
	size := opts.CacheSize
	if size <= 0 {
		size = DefaultCacheSize
	}
	f := &Cache{
		onCache: opts.OnCache, onRemembered: opts.OnRemembered, admitAfter: 2,
		mods: mods, store: store, helper: helper, query: q.String(),
		nTargets: len(targets), reasonIdx: reasonIdx,
		seed: maphash.MakeSeed(), maxRules: maxCachedRules,
	}
	l2, err := lru.NewWithEvict[uint64, *scope](size, f.evicted)
	if err != nil {
		return nil, err.Error()
	}
	f.l2 = l2
	if h := testHookFastPath.Load(); h != nil {
		(*h)(f)
	}
	return f, ""
}

// testHookFastPath, if set, adjusts every new fast path (tests).
var testHookFastPath atomic.Pointer[func(*Cache)]

// fastIneligible says why a policy cannot use the fast path: anything whose
// result must not be reused across objects (non-deterministic built-ins such
// as http.send or time.now_ns), `with` (mocks change what partial evaluation
// assumes), base documents inside the decision package (the full evaluation
// merges them), or packages that collide with the fast path's own.
func fastIneligible(mods []*ast.Module, docs map[string]any) string {
	if cs, ok := docs["countersign"].(map[string]any); ok {
		if _, ok := cs["authz"]; ok {
			return "data documents under data." + Package
		}
	}
	for _, root := range []string{helperPackage, queryPackage, residualNamespace} {
		if _, ok := docs[root]; ok {
			return "data documents under data." + root
		}
	}
	var why string
	for _, m := range mods {
		p := m.Package.Path.String()
		for _, root := range []string{helperPackage, queryPackage, residualNamespace} {
			if p == "data."+root || strings.HasPrefix(p, "data."+root+".") {
				return "package " + p + " is reserved"
			}
		}
		ast.NewGenericVisitor(func(x any) bool {
			if why != "" {
				return true
			}
			switch x := x.(type) {
			case *ast.Expr:
				if len(x.With) > 0 {
					why = "uses with"
				} else if x.IsCall() {
					why = ndBuiltin(x.Operator())
				}
			case ast.Call:
				if r, ok := x[0].Value.(ast.Ref); ok {
					why = ndBuiltin(r)
				}
			}
			return why != ""
		}).Walk(m)
		if why != "" {
			return why + " (" + p + ")"
		}
	}
	return ""
}

func ndBuiltin(op ast.Ref) string {
	name := op.String()
	if bi, ok := ast.BuiltinMap[name]; ok && bi.Nondeterministic {
		return "calls non-deterministic " + name
	}
	return ""
}

// fastTargets are the documents the full evaluation computes: every rule of
// the decision package and its sub-packages (functions are not documents),
// allow first and reason second.
func fastTargets(mods []*ast.Module) []string {
	pkg := "data." + Package
	set := map[string]bool{}
	for _, m := range mods {
		p := m.Package.Path.String()
		if p != pkg && !strings.HasPrefix(p, pkg+".") {
			continue
		}
		for _, r := range m.Rules {
			if len(r.Head.Args) > 0 {
				continue
			}
			first := r.Head.Ref()[0]
			name, ok := first.Value.(ast.Var)
			if !ok {
				continue
			}
			set[p+"."+string(name)] = true
		}
	}
	var out []string
	for _, first := range []string{pkg + ".allow", pkg + ".reason"} {
		if set[first] {
			out = append(out, first)
			delete(set, first)
		}
	}
	rest := make([]string, 0, len(set))
	for t := range set {
		rest = append(rest, t)
	}
	slices.Sort(rest)
	return append(out, rest...)
}

func (f *Cache) hook(hit bool) {
	if f.onCache != nil {
		f.onCache(hit)
	}
}

// Decide decides in from the scope's residual. ok is false when the caller
// must evaluate the full policy: the scope has no residual yet, its residual
// is unsupported, or it could not decide this object exactly.
func (f *Cache) Decide(ctx context.Context, in *policyinput.Input) (allow bool, reason string, ok bool) {
	if ctx.Err() != nil || !validObjectFields(in) {
		return false, "", false // the full evaluation reports ctx's error
	}
	var obuf [256]byte
	okey := appendObjectFields(obuf[:0], in)
	nameStart := len(okey)
	okey, valid := appendValidHeaderNames(okey, in) // = appendObjectKey
	if !valid {
		return false, "", false
	}
	var buf [512]byte
	key, encoded := appendScopeKey(buf[:0], in)
	if !encoded {
		return false, "", false
	}
	h := maphash.Bytes(f.seed, key)
	s := f.lookup(h, key)
	if s == nil {
		f.stats.misses.Add(1)
		f.hook(false)
		if !f.admit(h, key, in) || !f.syncBuild {
			return false, "", false
		}
		if s = f.lookup(h, key); s == nil {
			return false, "", false
		}
	}
	if s.prog == nil {
		f.stats.unsupported.Add(1)
		f.hook(false)
		return false, "", false
	}
	oh := maphash.Bytes(f.seed, okey)
	slot := &f.memo[(oh^s.id*0x9e3779b97f4a7c15)%memoSize]
	if d := slot.Load(); !f.noMemo && d != nil && d.scope == s.id && d.hash == oh && d.key == string(okey) {
		f.stats.hits.Add(1)
		f.stats.memoHits.Add(1)
		f.hook(true)
		if f.onRemembered != nil {
			f.onRemembered(true)
		}
		return d.allow, d.reason, true
	}
	if f.onRemembered != nil {
		f.onRemembered(false)
	}
	allow, reason, valuesRead, err := f.run(ctx, s, in, okey[nameStart:])
	if err != nil {
		f.stats.fallbacks.Add(1)
		f.hook(false)
		return false, "", false
	}
	if !valuesRead {
		slot.Store(newMemoDecision(memoDecision{scope: s.id, hash: oh, allow: allow, reason: reason}, okey))
	}
	f.stats.hits.Add(1)
	f.hook(true)
	return allow, reason, true
}

func (f *Cache) lookup(h uint64, key []byte) *scope {
	slot := &f.l1[h%l1Size]
	if s := slot.Load(); s != nil && s.hash == h && bytes.Equal(s.key, key) {
		return s
	}
	if s, ok := f.l2.Get(h); ok && bytes.Equal(s.key, key) {
		slot.Store(s)
		return s
	}
	return nil
}

// admit records a sighting of a scope without a residual and, at the
// admitAfter-th, builds one (in the background: a decision never waits for
// partial evaluation). One build runs at a time; a scope seen only once
// costs nothing but a slot.
func (f *Cache) admit(h uint64, key []byte, in *policyinput.Input) bool {
	if f.admitAfter > 1 {
		slot := &f.seen[h%seenSize]
		if slot.Load() != h {
			slot.Store(h)
			return false
		}
	}
	if !f.building.CompareAndSwap(false, true) {
		return false
	}
	known, err := newKnownInput(in)
	if err != nil {
		f.building.Store(false)
		f.put(&scope{hash: h, key: bytes.Clone(key), err: err})
		return false
	}
	own := bytes.Clone(key)
	if f.syncBuild {
		f.build(h, own, known)
		return true
	}
	go f.build(h, own, known)
	return true
}

func (f *Cache) put(s *scope) {
	if old, ok := f.l2.Peek(s.hash); ok {
		f.evicted(s.hash, old) // replaced: Add does not report it
	}
	if s.prog != nil {
		f.rules.Add(int64(s.prog.nRules))
	}
	f.l2.Add(s.hash, s)
	f.l1[s.hash%l1Size].Store(s)
	for f.rules.Load() > f.maxRules {
		if _, _, ok := f.l2.RemoveOldest(); !ok {
			break
		}
	}
}

// evicted forgets a scope the LRU let go, in the front too.
func (f *Cache) evicted(_ uint64, s *scope) {
	if s.prog != nil {
		f.rules.Add(-int64(s.prog.nRules))
	}
	f.l1[s.hash%l1Size].CompareAndSwap(s, nil)
}

func (f *Cache) build(h uint64, key []byte, known *knownInput) {
	defer f.building.Store(false)
	s := &scope{hash: h, key: key, known: known, id: f.scopeIDs.Add(1)}
	func() {
		defer func() {
			if r := recover(); r != nil {
				f.stats.panics.Add(1)
				s.prog, s.err = nil, fmt.Errorf("policy: building the residual panicked: %v", r)
			}
		}()
		s.prog, s.err = f.compileScope(known)
	}()
	f.stats.builds.Add(1)
	if s.err != nil {
		f.stats.failed.Add(1)
	}
	f.seen[h%seenSize].Store(0)
	f.put(s)
}

// prepare compiles the policy with the helper module, finds the rules that
// must not be inlined, and prepares the partial evaluation.
func (f *Cache) prepare() {
	mods := make(map[string]*ast.Module, len(f.mods)+1)
	for i, m := range f.mods {
		mods[fmt.Sprintf("%04d", i)] = m
	}
	mods["countersign_fastpath.rego"] = f.helper
	c := ast.NewCompiler().WithCapabilities(residualCapabilities()).WithEnablePrintStatements(false)
	if c.Compile(mods); c.Failed() {
		f.prepErr = c.Errors
		return
	}
	opts := []func(*rego.Rego){
		rego.Compiler(c),
		rego.Query(f.query),
		rego.Store(f.store),
		rego.PartialNamespace(residualNamespace),
		rego.Unknowns(unknownFields),
	}
	if f.shallow {
		opts = append(opts, rego.ShallowInlining(true))
	} else {
		f.kept = keptRules(c)
		var why string
		why, f.strictNeg = peCaveat(c, f.kept)
		if why != "" {
			f.prepErr = fmt.Errorf("%w: %s", errUnsupported, why)
			return
		}
		for _, r := range scopeChecked(c) {
			q, err := rego.New(rego.Compiler(c), rego.Store(f.store), rego.Query("x = "+r)).PrepareForEval(context.Background())
			if err != nil {
				f.prepErr = err
				return
			}
			f.checks = append(f.checks, q)
		}
		f.traced = tracedFunctions(c)
		opts = append(opts, rego.DisableInlining(f.kept))
	}
	f.pq, f.prepErr = rego.New(opts...).PrepareForPartial(context.Background())
}

// compileScope partially evaluates the policy for one scope and compiles
// the residual.
func (f *Cache) compileScope(known *knownInput) (*program, error) {
	pqs, err := f.partial(known)
	if err != nil {
		return nil, err
	}
	return compileResidual(pqs, f.nTargets, known, f.strictNeg)
}

// partial is the policy partially evaluated for a scope: the per-object
// fields unknown.
func (f *Cache) partial(known *knownInput) (*rego.PartialQueries, error) {
	f.prepOnce.Do(f.prepare)
	if f.prepErr != nil {
		return nil, f.prepErr
	}
	ctx, cancel := context.WithTimeout(context.Background(), partialTimeout)
	defer cancel()
	for _, q := range f.checks {
		if _, err := q.Eval(ctx, rego.EvalParsedInput(known.root)); err != nil {
			return nil, fmt.Errorf("%w: %v", errUnsupported, err)
		}
	}
	evalOpts := []rego.EvalOption{rego.EvalParsedInput(known.root)}
	var tracer *functionConflictTracer
	if len(f.traced) > 0 {
		tracer = newFunctionConflictTracer(f.traced)
		evalOpts = append(evalOpts, rego.EvalQueryTracer(tracer))
	}
	pqs, err := f.pq.Partial(ctx, evalOpts...)
	if err != nil {
		return nil, fmt.Errorf("partial evaluation: %w", err)
	}
	if tracer != nil && tracer.conflict != "" {
		return nil, fmt.Errorf("%w: %s", errUnsupported, tracer.conflict)
	}
	if len(pqs.Queries) == 0 {
		return nil, fmt.Errorf("%w: the decision query is undefined", errUnsupported)
	}
	return pqs, nil
}

// compileResidual compiles partial evaluation's output: the support
// modules, and the queries as the rule `out` of the query package.
func compileResidual(pqs *rego.PartialQueries, nTargets int, known *knownInput, strictNeg bool) (*program, error) {
	mods := make(map[string]*ast.Module, len(pqs.Support)+1)
	n := 0
	for i, m := range pqs.Support {
		mods[fmt.Sprintf("support%d", i)] = m
		n += len(m.Rules)
	}
	if n > maxResidualRules {
		return nil, fmt.Errorf("%w: residual of %d rules", errUnsupported, n)
	}
	var src strings.Builder
	fmt.Fprintf(&src, "package %s\n\n", queryPackage)
	vars := make([]string, nTargets)
	for i := range vars {
		vars[i] = fmt.Sprintf("x%d", i)
	}
	for range pqs.Queries {
		fmt.Fprintf(&src, "out contains [%s] if { true }\n", strings.Join(vars, ", "))
	}
	qm, err := ast.ParseModuleWithOpts("query.rego", src.String(), ast.ParserOptions{RegoVersion: ast.RegoV1})
	if err != nil {
		return nil, err
	}
	for i, q := range pqs.Queries {
		qm.Rules[i].Body = q.Copy()
	}
	mods["query"] = qm
	c := ast.NewCompiler().WithCapabilities(residualCapabilities()).WithSkipStages(residualSkipStages...)
	if c.Compile(mods); c.Failed() {
		return nil, fmt.Errorf("%w: compiling the residual: %v", errUnsupported, c.Errors)
	}
	return compileProgram(c, "data."+queryPackage+".out", known, strictNeg)
}

// residualSkipStages are compiler stages that only check a residual
// (partial evaluation's output of a policy that compiled): none of them
// rewrites it.
var residualSkipStages = []ast.StageID{
	ast.StageCheckUnusedImports, ast.StageCheckKeywordOverrides, ast.StageCheckDuplicateImports,
	ast.StageParseMetadataBlocks, ast.StageSetAnnotationSet, ast.StageRewriteRegoMetadataCalls,
	ast.StageCheckRuleConflicts, ast.StageCheckUndefinedFuncs, ast.StageRewriteTestRulesForTracing,
	ast.StageCheckRecursion, ast.StageCheckTypes, ast.StageCheckUnsafeBuiltins,
	ast.StageCheckDeprecatedBuiltins, ast.StageBuildComprehensionIndices, ast.StageBuildRequiredCapabilities,
}

var residualCapabilities = sync.OnceValue(func() *ast.Capabilities { return ast.CapabilitiesForThisVersion() })

// run evaluates the scope's residual for one object. valuesRead: the
// decision used a header's value.
func (f *Cache) run(ctx context.Context, s *scope, in *policyinput.Input, names []byte) (allow bool, reason string, valuesRead bool, err error) {
	m := getMachine(ctx, s.prog, nil)
	m.in = &m.inBuf
	m.inBuf.reset(s.known, in)
	m.interpOnly = f.noCompiled
	if !f.noHeaderMemo {
		m.startHeaderMemo(names)
	}
	defer func() {
		if r := recover(); r != nil {
			// A bug in the interpreter must not take a request down: the
			// full evaluation decides, and the machine is not reused.
			f.stats.panics.Add(1)
			allow, reason, err = false, "", errFallback
			return
		}
		m.inBuf.clear()
		putMachine(m)
	}()
	tuple, err := m.run()
	if err != nil {
		return false, "", false, err
	}
	if len(tuple) != f.nTargets {
		return false, "", false, errFallback
	}
	m.publishHeaderMemo()
	f.stats.headerHits.Add(uint64(m.hhits))
	valuesRead = m.inBuf.valuesRead
	// The other targets were evaluated only for their errors.
	var r ast.String
	if f.reasonIdx >= 0 {
		r, _ = tuple[f.reasonIdx].(ast.String)
	}
	a, _ := tuple[0].(ast.Boolean)
	return bool(a), string(r), valuesRead, nil
}
