package fastpath

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"

	"github.com/countersign/countersign/internal/policyinput"
	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/storage/inmem"
)

// Engine is, for the tests, what policy.Engine is for a request: the
// policy prepared for rego's full evaluation and the Cache of its
// residuals, built the same way (modules sorted by name, the same
// entrypoint checks, one in-memory store for both). Authorize asks the
// cache and falls back to the full evaluation as policy's does;
// authorizeRego is rego's own evaluation, the reference every test
// compares with.
type Engine struct {
	query    rego.PreparedEvalQuery
	revision string
	fast     *Cache // nil: every decision is a full evaluation
	noFast   string // why fast is nil
}

// module is one parsed Rego file.
type module struct {
	name   string
	raw    []byte
	parsed *ast.Module
}

// newEngine compiles mods over docs as policy's newEngine does.
func newEngine(ctx context.Context, where string, mods []module, docs map[string]any, revision string, opts Options) (*Engine, error) {
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
	regoOpts := []func(*rego.Rego){rego.Query("data." + Package), rego.Store(store)}
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
		var errs ast.Errors
		if errors.As(err, &errs) {
			err = errs
		}
		return nil, fmt.Errorf("policy: compiling: %w", err)
	}
	if revision == "" {
		revision = hex.EncodeToString(h.Sum(nil))[:16]
	}
	e := &Engine{query: pq, revision: revision}
	e.fast, e.noFast = New(parsed, docs, store, opts)
	return e, nil
}

// checkEntrypoint refuses what policy refuses: no package
// countersign.authz, or no rule allow in it.
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

// skipFiles is policy's loader filter: tests and hidden entries below the
// loaded paths are not part of the policy.
func skipFiles(_ string, info fs.FileInfo, depth int) bool {
	if depth > 0 && strings.HasPrefix(info.Name(), ".") {
		return true
	}
	return !info.IsDir() && strings.HasSuffix(info.Name(), "_test.rego")
}

// Authorize is policy.Engine.Authorize: the cache when it decides, else
// the full evaluation.
func (e *Engine) Authorize(ctx context.Context, in *policyinput.Input) (policyinput.Decision, error) {
	if e.fast != nil {
		if allow, reason, ok := e.fast.Decide(ctx, in); ok {
			return policyinput.Decision{Allow: allow, Reason: reason, Revision: e.revision}, nil
		}
	}
	return e.authorizeFull(ctx, in)
}

// authorizeFull is policy's full evaluation: the input converted by
// InputValue when it can be.
func (e *Engine) authorizeFull(ctx context.Context, in *policyinput.Input) (policyinput.Decision, error) {
	if v, ok := InputValue(in); ok {
		return e.evalFull(ctx, rego.EvalParsedInput(v))
	}
	return e.evalFull(ctx, rego.EvalInput(in))
}

// authorizeRego is the full evaluation with rego's own conversion of the
// input: what countersign did before the fast path, the reference the tests
// compare everything with.
func (e *Engine) authorizeRego(ctx context.Context, in *policyinput.Input) (policyinput.Decision, error) {
	return e.evalFull(ctx, rego.EvalInput(in))
}

func (e *Engine) evalFull(ctx context.Context, input rego.EvalOption) (policyinput.Decision, error) {
	d := policyinput.Decision{Revision: e.revision}
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
