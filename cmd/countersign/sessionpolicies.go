package main

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/countersign/countersign/internal/policyinput"
	"github.com/countersign/countersign/policy"
	"github.com/countersign/countersign/session"
	"github.com/countersign/countersign/sessionpolicy"
)

// policyScoper is the policy's scope compiler (*policy.Manager).
type policyScoper interface {
	Scope(ctx context.Context, q policy.ScopeQuery) (policy.Scope, error)
}

// scopedPolicies compiles per-principal session policies from the OPA
// policy's scope (docs/design.md, "Per-principal sessions"): for each need
// of a request, the principal's scope for its access class in its bucket
// (on the per-table route, for its table), narrowed to the need's action.
type scopedPolicies struct{ scopes policyScoper }

// denyAll is the session policy of needs the scope grants nothing for: a
// session that can do nothing, so the store refuses whatever it signs.
// countersign's own decision refuses such requests first; only a scope
// narrower than the policy (a bug) or the e2e suite's test hook reaches it.
const denyAll = `{"Version":"2012-10-17","Statement":[{"Effect":"Deny","Action":"s3:*","Resource":"*"}]}`

// SessionPolicy implements session.Policies.
func (sp scopedPolicies) SessionPolicy(ctx context.Context, p *policyinput.Principal, t *policyinput.Table, needs []session.Need) (string, error) {
	merged := policy.Scope{Exact: true}
	for _, n := range needs {
		s, err := sp.scopes.Scope(ctx, policy.ScopeQuery{Principal: *p, Access: n.Access, Bucket: n.Bucket, Table: t})
		if err != nil {
			return "", fmt.Errorf("the policy's scope for %s in bucket %q: %w", n.Access, n.Bucket, err)
		}
		merged.Exact = merged.Exact && s.Exact
		for _, g := range s.Grants {
			if slices.Contains(g.Actions, n.Action) {
				merged.Grants = append(merged.Grants, policy.ScopeGrant{Bucket: g.Bucket, Prefix: g.Prefix, Actions: []string{n.Action}})
			}
		}
	}
	if len(merged.Grants) == 0 {
		return denyAll, nil
	}
	doc, err := sessionpolicy.Compile(merged, sessionpolicy.Options{MaxBytes: session.MaxPolicyBytes})
	if errors.Is(err, sessionpolicy.ErrEmptyScope) {
		return denyAll, nil
	}
	if err != nil {
		return "", err
	}
	return doc.JSON(), nil
}
