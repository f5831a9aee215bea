package policy

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/countersign/countersign/policy/internal/fastpath"
	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/loader"
	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/storage/inmem"
)

// Package is the Rego package countersign queries.
const Package = fastpath.Package

// Options says where the policy comes from: Paths on disk, or Paths in FS.
type Options struct {
	// Paths are .rego files, data files (.json, .yaml) or directories of
	// them. Files ending in _test.rego are skipped (see countersign policy
	// test), and so are hidden files and directories inside a directory
	// (names starting with "."; Kubernetes mounts ConfigMaps with hidden
	// "..data" copies that would otherwise load twice).
	Paths []string
	// FS, if set, is read instead of the disk, Paths being paths in it
	// (default "."), for the embedded example policy of serve -dev.
	FS fs.FS
	// FastPath configures the per-scope cache of partially evaluated
	// policies (on by default).
	FastPath FastPathOptions
	// OnCache and OnRemembered, if set, are called per decision (see
	// ManagerOptions).
	OnCache      func(hit bool)
	OnRemembered func(hit bool)
}

// Engine evaluates the policy. It is immutable and safe for concurrent use;
// reloading builds a new Engine.
type Engine struct {
	query    rego.PreparedEvalQuery
	revision string
	content  string          // hash of modules and data, whatever the revision says
	fast     *fastpath.Cache // nil: every decision is a full evaluation
	noFast   string          // why fast is nil
	docs     map[string]any  // the policy's data, read-only (TableLocation)
	scope    *scopeCompiler  // the scope compiler's partial queries (scope.go)
}

// Load compiles the policy and prepares the decision query. A policy that
// does not compile, has no package countersign.authz or no rule allow in
// it, is an error that names the file and line.
func Load(ctx context.Context, opts Options) (*Engine, error) {
	eo := engineOptions{fast: opts.FastPath, onCache: opts.OnCache, onRemembered: opts.OnRemembered}
	if opts.FS != nil {
		paths := opts.Paths
		if len(paths) == 0 {
			paths = []string{"."}
		}
		l := loader.NewFileLoader().WithRegoVersion(ast.RegoV1).WithFS(opts.FS)
		res, err := l.Filtered(paths, skipFiles)
		if err != nil {
			return nil, fmt.Errorf("policy: loading the embedded policy: %w", err)
		}
		return engineFromResult(ctx, "the embedded policy", res, "", eo)
	}
	if len(opts.Paths) == 0 {
		return nil, fmt.Errorf("policy: no policy paths configured")
	}
	s, err := readSnapshot(opts.Paths, os.ReadFile)
	if err != nil {
		return nil, fmt.Errorf("policy: loading %s: %w", strings.Join(opts.Paths, ", "), err)
	}
	return s.compile(ctx, eo)
}

// compile builds the Engine from the snapshot's bytes (never re-reading
// the disk). _test.rego files are not part of the policy.
func (s *snapshot) compile(ctx context.Context, eo engineOptions) (*Engine, error) {
	where := strings.Join(s.paths, ", ")
	res, err := loader.NewFileLoader().WithRegoVersion(ast.RegoV1).WithFS(s.fsys()).Filtered(s.paths, skipFiles)
	if err != nil {
		return nil, fmt.Errorf("policy: loading %s: %w", where, err)
	}
	return engineFromResult(ctx, where, res, "", eo)
}

func engineFromResult(ctx context.Context, where string, res *loader.Result, revision string, eo engineOptions) (*Engine, error) {
	mods := make([]module, 0, len(res.Modules))
	for name, m := range res.Modules {
		mods = append(mods, module{name: name, raw: m.Raw, parsed: m.Parsed})
	}
	return admitEngine(ctx, where, mods, res.Documents, revision, eo)
}

// admitEngine is newEngine for a policy that is to decide requests: it
// also refuses the allow rules and the policies that allow what no rule is
// about (see checkAllowRules and checkCanary).
func admitEngine(ctx context.Context, where string, mods []module, docs map[string]any, revision string, eo engineOptions) (*Engine, error) {
	if err := checkAllowRules(mods); err != nil {
		return nil, err
	}
	e, err := newEngine(ctx, where, mods, docs, revision, eo)
	if err != nil {
		return nil, err
	}
	if err := checkCanary(ctx, e.query); err != nil {
		return nil, fmt.Errorf("%w (in %s)", err, where)
	}
	return e, nil
}

// engineOptions are the Options that are not about the source.
type engineOptions struct {
	fast                  FastPathOptions
	onCache, onRemembered func(hit bool)
}

// module is one parsed Rego file, from a directory or a bundle.
type module struct {
	name   string
	raw    []byte
	parsed *ast.Module
}

// newEngine compiles modules over the data document docs. An empty
// revision is replaced by a content hash of modules and data. where names
// the source in errors that cannot name a file.
func newEngine(ctx context.Context, where string, mods []module, docs map[string]any, revision string, eo engineOptions) (*Engine, error) {
	if len(mods) == 0 {
		return nil, fmt.Errorf("policy: no .rego files found in %s", where)
	}
	slices.SortFunc(mods, func(a, b module) int { return strings.Compare(a.name, b.name) })
	if err := checkEntrypoint(mods); err != nil {
		return nil, fmt.Errorf("%w (in %s)", err, where)
	}
	if docs == nil {
		docs = map[string]any{}
	}
	store := inmem.NewFromObject(docs)
	regoOpts := []func(*rego.Rego){
		rego.Query("data." + Package),
		rego.Store(store),
	}
	h := sha256.New()
	parsed := make([]*ast.Module, 0, len(mods))
	for _, m := range mods {
		parsed = append(parsed, m.parsed)
		regoOpts = append(regoOpts, rego.ParsedModule(m.parsed))
		fmt.Fprintf(h, "%s\x00%d\x00", filepath.ToSlash(m.name), len(m.raw))
		h.Write(m.raw)
	}
	fmt.Fprintf(h, "%v", docs)
	pq, err := rego.New(regoOpts...).PrepareForEval(ctx)
	if err != nil {
		// OPA wraps compile errors ("bundle activation failed: ..."); the
		// errors themselves name file and line.
		var errs ast.Errors
		if errors.As(err, &errs) {
			err = errs
		}
		return nil, fmt.Errorf("policy: compiling: %w", err)
	}
	content := hex.EncodeToString(h.Sum(nil))[:16]
	if revision == "" {
		revision = content
	}
	e := &Engine{query: pq, revision: revision, content: content, docs: docs, scope: &scopeCompiler{mods: parsed, store: store}}
	e.fast, e.noFast = newFastPath(parsed, docs, store, eo)
	return e, nil
}

// checkEntrypoint requires package countersign.authz with a rule allow:
// without it every request would be denied, which is never what a policy
// author meant.
func checkEntrypoint(mods []module) error {
	hasPkg, hasAllow := false, false
	for _, m := range mods {
		if m.parsed.Package.Path.String() != "data."+Package {
			continue
		}
		hasPkg = true
		for _, r := range m.parsed.Rules {
			if r.Head.Ref().String() == "allow" {
				hasAllow = true
			}
		}
	}
	switch {
	case !hasPkg:
		return fmt.Errorf("policy: no module declares package %s", Package)
	case !hasAllow:
		return fmt.Errorf("policy: package %s has no rule allow", Package)
	}
	return nil
}

// skipFiles is the loader filter: tests and hidden entries below the
// configured paths are not part of the policy.
func skipFiles(_ string, info fs.FileInfo, depth int) bool {
	if depth > 0 && strings.HasPrefix(info.Name(), ".") {
		return true
	}
	return !info.IsDir() && isTestFile(info.Name())
}

func isTestFile(name string) bool { return strings.HasSuffix(name, "_test.rego") }

// FastPath reports whether the engine decides through the fast path, and
// if not, why (a policy with http.send, time.now_ns or with, for
// example, is always fully evaluated).
func (e *Engine) FastPath() (on bool, why string) {
	return e.fast != nil, e.noFast
}

// Revision identifies the loaded policy and data (a content hash, or a
// bundle's manifest revision).
func (e *Engine) Revision() string { return e.revision }

// Authorize evaluates the policy for one input. allow must be exactly true
// to allow; anything else — undefined, false, a non-boolean — denies.
//
// The decision is always the full evaluation's; the fast path (see the
// package documentation) reaches it from the scope's cached residual policy
// when it can, and falls back to the full evaluation when it cannot.
func (e *Engine) Authorize(ctx context.Context, in *Input) (Decision, error) {
	if e.fast != nil && in.Mint == nil { // a mint is always fully evaluated
		if allow, reason, ok := e.fast.Decide(ctx, in); ok {
			return Decision{Allow: allow, Reason: reason, Revision: e.revision}, nil
		}
	}
	return e.authorizeFull(ctx, in)
}

// authorizeFull evaluates the whole policy package for in, with the input
// converted directly to its AST (fastpath.InputValue) when it can be.
func (e *Engine) authorizeFull(ctx context.Context, in *Input) (Decision, error) {
	if v, ok := fastpath.InputValue(in); ok {
		return e.evalFull(ctx, rego.EvalParsedInput(v))
	}
	return e.evalFull(ctx, rego.EvalInput(in))
}

// authorizeRego is the full evaluation with rego's own conversion of the
// input: what countersign did before the fast path, the reference the tests
// compare everything with.
func (e *Engine) authorizeRego(ctx context.Context, in *Input) (Decision, error) {
	return e.evalFull(ctx, rego.EvalInput(in))
}

func (e *Engine) evalFull(ctx context.Context, input rego.EvalOption) (Decision, error) {
	d := Decision{Revision: e.revision}
	rs, err := e.query.Eval(ctx, input)
	if err != nil {
		return d, fmt.Errorf("policy: evaluating: %w", err)
	}
	if len(rs) == 0 || len(rs[0].Expressions) == 0 {
		return d, nil
	}
	doc, ok := rs[0].Expressions[0].Value.(map[string]any)
	if !ok {
		return d, nil
	}
	d.Allow = doc["allow"] == true
	d.Reason, _ = doc["reason"].(string)
	return d, nil
}
