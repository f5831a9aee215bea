package policy

import (
	"github.com/countersign/countersign/policy/internal/fastpath"
	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/storage"
)

// The fast path (package policy/internal/fastpath) decides from a scope's
// cached residual; this file is all policy knows of it: configure it, ask
// it first, and fall back to the full evaluation when it cannot decide.

// FastPathOptions configures the fast path: partial evaluation of the policy
// once per scope, cached, and the residual evaluated per object (see the
// package documentation).
type FastPathOptions struct {
	// Disabled turns it off: every decision is a full evaluation.
	Disabled bool `yaml:"disabled"`
	// CacheSize is how many scopes keep their residual policy (least
	// recently used first out). Default DefaultCacheSize. Whatever the
	// size, the cached residuals hold at most 50,000 rules (about 50 MB).
	CacheSize int `yaml:"cache_size"`
}

// DefaultCacheSize is the default number of cached scopes. A scope's
// residual takes about 0.1–0.2 MB for a principal with a few groups on the
// 10,000-grant example document.
const DefaultCacheSize = fastpath.DefaultCacheSize

// newFastPath returns nil, and a reason, when the policy must always be
// fully evaluated.
func newFastPath(mods []*ast.Module, docs map[string]any, store storage.Store, eo engineOptions) (*fastpath.Cache, string) {
	if eo.fast.Disabled {
		return nil, "disabled"
	}
	return fastpath.New(mods, docs, store, fastpath.Options{
		CacheSize: eo.fast.CacheSize, OnCache: eo.onCache, OnRemembered: eo.onRemembered,
	})
}
