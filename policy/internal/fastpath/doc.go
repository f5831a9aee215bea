// Package fastpath is policy's fast path: it decides an object from its
// scope's residual policy, exactly as the full evaluation of the policy
// would, or says it cannot.
//
// A scan asks the same question — principal P reads the objects of table T
// — thousands of times with a different key each time, and a full
// evaluation of the policy package with a 10,000-grant data document
// costs more than the rest of the request. The fast path makes a decision
// an order of magnitude cheaper (bench/README.md, "Policy decisions"), and
// every decision stays exactly the full evaluation's (Allow, Reason, and
// the error when OPA reports one). docs/design.md, "Fast path", gives the
// argument in short.
//
// Package policy uses it through a narrow API: New builds the Cache of a
// compiled policy, or says why the policy is always fully evaluated
// (policy's Engine.FastPath reports it); Cache.Decide decides an object
// from its scope's residual, or reports that the caller must fall back to
// the full evaluation; InputValue is the full evaluation's input,
// converted directly. Everything else (the scope cache, partial
// evaluation, the conflict analysis, the interpreter and its index) is
// internal to this package:
//
//   - fast.go: Cache, the scopes' cache, and building a scope's residual
//     (partial evaluation, then compiling its output);
//   - fastinput.go: the scope's key, the known input, the object's lazy
//     fields; astinput.go: InputValue;
//   - residual.go: the residual compiled into a program of rules and
//     terms; interp.go: the machine that runs it; index.go: the candidate
//     rules by their guards on the object's fields; compiled.go: rule sets
//     of tests on operands (paths, constants, counts), checked without
//     the interpreter, and the prefilters of interpreted definitions;
//   - conflicts.go and pecaveats.go: what partial evaluation would get
//     wrong, found before it runs;
//   - builtins.go: the allow-list of built-ins; natives.go: Go versions of
//     the common ones.
//
// The scope of a decision is the input without its per-object fields
// (resource.key, resource.arn, resource.prefix, resource.version_id,
// request.headers, and source, so that the executors of one scan share a
// scope): principal
// (claims included), operation, action, access, bucket, copy source,
// table, method, region, host. Its exact encoding keys the cache (a hash
// finds the entry; the whole key is compared).
//
//   - At the second decision of a scope, OPA partially evaluates the policy
//     in the background, the per-object fields unknown, for allow, reason
//     and every other rule of the package (the full evaluation evaluates
//     them all, and reports their errors). Decisions meanwhile are full
//     evaluations. For the grants example the residual is, per grant of
//     the principal's groups, a startswith(input.resource.key, "<prefix>").
//   - Per object, an interpreter evaluates the residual: no OPA
//     evaluation and no JSON; the object's fields are read where they are; an index picks the candidate rules by their startswith and
//     equality tests on those fields; built-ins run OPA's implementations
//     (or equivalent Go code for the common ones, tested against them).
//   - The residuals' recent decisions are remembered (4,096 for all scopes,
//     direct-mapped, about 1 MB) by scope and the object's key, ARN, version,
//     prefix, source and header names, when the decision read no header
//     value: an engine reads a file several times (its footer, then
//     column chunks), each read with another Range and
//     amz-sdk-invocation-id, and the policy's answer is the same. Whether a header value was read is tracked where values
//     are produced (they are lazy strings; a lookup, an iteration's value
//     used, or the headers object built all count), so a policy that reads
//     one is evaluated for every object. TestFastPathSemantics and
//     TestFastPathDifferential decide each input's sibling (same object,
//     other header values) and compare it with OPA too.
//   - Rule sets whose definitions are tests on operands (paths of the
//     input, of a function's arguments or of another rule's value,
//     constants, counts, object.get of a constant key) with a constant
//     value or an operand are compiled (compiled.go): the grants' and
//     table scope's rules, allow, the decision query. Go code checks the
//     index's candidates, without the interpreter; an interpreted
//     definition is not run when the tests it starts with fail.
//     TestCompiledDifferential compares both ways, and with OPA.
//   - Header rules are remembered by header names (headermemo.go): a
//     partial-set definition whose only input references are under
//     input.request.headers and that calls no residual rule (the
//     guardrails' screens of every header name) depends on the scope, the
//     header names and the values it reads; when it read none and produced
//     scalars, its elements are kept with the names' exact encoding, one
//     set of names per program, and the next object with those names skips
//     its body. About half of a footer's evaluation on the combined
//     example (BenchmarkHeaderRuleMemo).
//   - The cache is an LRU (golang-lru, Options.CacheSize scopes,
//     DefaultCacheSize, and at most 50,000 residual rules, about 50 MB)
//     behind a lock-free direct-mapped front: a hot scope is found with
//     atomic loads only. Every policy.Engine has its own: a reload starts empty,
//     and a residual never outlives the policy and data it was computed
//     from.
//
// Exactness. Partial evaluation inlines rules into their callers; OPA
// reports an error when a complete rule or function has two values (a
// conflict), and inlined branches would instead both succeed. A static
// analysis (conflicts.go) finds the rules that may conflict and depend on
// the per-object fields; those are kept as rules of the residual, where
// the interpreter detects conflicts as topdown does. Any conflict, Halt
// error, or construct the interpreter does not implement makes that object
// fall back to the full evaluation, which then returns OPA's answer or
// error. Always fully evaluated (New says why): policies with
// non-deterministic built-ins (http.send, time.now_ns, rand.intn,
// io.jwt.decode_verify, ...) or with, and data documents inside
// countersign.authz. Fully evaluated per scope: residuals with every,
// comprehensions or partial objects over the per-object fields, else chains
// that depend on them, references to base documents by them, or calls of
// a built-in that is not on the allow-list (builtins.go: reviewed pure
// functions only); and policies where partial evaluation itself is not
// exact (pecaveats.go: a kept function's conflict that a later failing
// expression would drop; a reference moved into a negation by copy
// propagation, checked per object). The index compares equality guards as
// Rego does: strings byte for byte, numbers and composites by OPA's own
// equality (1, 1.0, 1e0 and to_number("01") are equal). Strings
// that are not valid UTF-8 (which JSON would alter) and a canceled context
// go to the full evaluation too. TestFastPathDifferential compares every
// decision with rego's own evaluation on thousands of random inputs per
// example policy and on the 10,000-grant document; TestFastPathSemantics
// does the same on policies written to conflict, iterate and err;
// TestGeneratedPoliciesDifferential and FuzzGeneratedPolicies on random
// policies (policygen_test.go). Their inputs' seeds change every run and
// are logged (COUNTERSIGN_TEST_SEED repeats one); make unit runs them at
// full size without -race.
//
// # Upgrading OPA
//
// The fast path depends on how OPA compiles, partially evaluates and
// evaluates. After changing the OPA version in go.mod:
//
//  1. go test ./policy/...: TestBuiltinsReviewed names every new built-in;
//     review each (pure function of its operands? no clock, randomness,
//     network or evaluation state? not a relation?) and add it to
//     fastBuiltins or refusedBuiltins. Until then it is refused (safe).
//  2. Run the differential tests at full size and the generated policies
//     for 10 minutes, and commit what the fuzzer saved:
//     go test -count=1 -run Differential ./policy/internal/fastpath/ and
//     go test -run '^$' -fuzz '^FuzzGeneratedPolicies$' -fuzztime 10m ./policy/internal/fastpath/.
//  3. Reread the release notes for changes to partial evaluation (copy
//     propagation, inlining, saved expressions), ast.NumberCompare and
//     value equality, built-in error handling, and the compiler stages
//     residualSkipStages skips; a change there is a change of the
//     residuals' meaning, even when the tests pass.
//  4. Check pecaveats.go still describes OPA: if a caveat is fixed
//     upstream, TestPartialEvalCaveats shows it (remove the caveat only
//     with the fuzzer's agreement).
//  5. Rerun the benchmarks and update bench/README.md, "Policy decisions".
package fastpath
