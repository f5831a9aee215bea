package policy

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/loader"
	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/storage/inmem"
)

// Package is the Rego package countersign queries.
const Package = "countersign.authz"

// Options says where the policy comes from. Exactly one of Paths and FS
// is used.
type Options struct {
	// Paths are .rego files, data files (.json, .yaml) or directories of
	// them. Files ending in _test.rego are skipped (see countersign policy
	// test).
	Paths []string
	// FS, if set, is loaded instead of Paths (used for the embedded example
	// policy of serve -dev).
	FS fs.FS
}

// Engine evaluates the policy. It is immutable and safe for concurrent use;
// reloading builds a new Engine.
type Engine struct {
	query    rego.PreparedEvalQuery
	revision string
}

// Load compiles the policy and prepares the decision query. A policy that
// does not compile, or has no package countersign.authz, is an error that
// names the file and line.
func Load(ctx context.Context, opts Options) (*Engine, error) {
	l := loader.NewFileLoader().WithRegoVersion(ast.RegoV1)
	paths := opts.Paths
	if opts.FS != nil {
		l = l.WithFS(opts.FS)
		paths = []string{"."}
	}
	if len(paths) == 0 {
		return nil, fmt.Errorf("policy: no policy paths configured")
	}
	res, err := l.Filtered(paths, skipTests)
	if err != nil {
		return nil, fmt.Errorf("policy: loading %s: %w", strings.Join(paths, ", "), err)
	}
	if len(res.Modules) == 0 {
		return nil, fmt.Errorf("policy: no .rego files found in %s", strings.Join(paths, ", "))
	}
	hasPkg := false
	names := make([]string, 0, len(res.Modules))
	for name, m := range res.Modules {
		names = append(names, name)
		if m.Parsed.Package.Path.String() == "data."+Package {
			hasPkg = true
		}
	}
	if !hasPkg {
		return nil, fmt.Errorf("policy: no module declares package %s", Package)
	}
	slices.Sort(names)

	regoOpts := []func(*rego.Rego){
		rego.Query("data." + Package),
		rego.Store(inmem.NewFromObject(res.Documents)),
	}
	h := sha256.New()
	for _, name := range names {
		m := res.Modules[name]
		regoOpts = append(regoOpts, rego.ParsedModule(m.Parsed))
		fmt.Fprintf(h, "%s\x00%d\x00", filepath.ToSlash(name), len(m.Raw))
		h.Write(m.Raw)
	}
	fmt.Fprintf(h, "%v", res.Documents)
	pq, err := rego.New(regoOpts...).PrepareForEval(ctx)
	if err != nil {
		return nil, fmt.Errorf("policy: compiling: %w", err)
	}
	return &Engine{query: pq, revision: hex.EncodeToString(h.Sum(nil))[:16]}, nil
}

func skipTests(_ string, info fs.FileInfo, _ int) bool {
	return !info.IsDir() && strings.HasSuffix(info.Name(), "_test.rego")
}

// Revision identifies the loaded policy and data (a content hash).
func (e *Engine) Revision() string { return e.revision }

// Authorize evaluates the policy for one input. allow must be exactly true
// to allow; anything else — undefined, false, a non-boolean — denies.
func (e *Engine) Authorize(ctx context.Context, in *Input) (Decision, error) {
	d := Decision{Revision: e.revision}
	rs, err := e.query.Eval(ctx, rego.EvalInput(in))
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
