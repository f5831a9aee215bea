package vend

import (
	"context"

	"github.com/countersign/countersign/internal/policyinput"
)

// Scoper compiles, from the policy, what a principal may reach with one
// access class (implemented by *policy.Manager, through an adapter in
// cmd/countersign).
type Scoper interface {
	Scope(ctx context.Context, q ScopeQuery) (Scope, error)
}

// ScopeQuery asks for a principal's scope for one S3 access class, within
// one bucket and under one prefix.
type ScopeQuery struct {
	Principal      policyinput.Principal
	Access         string // an S3 access class: read, write, delete, list
	Bucket, Prefix string
	Table          *policyinput.Table
}

// Scope is the set of prefixes (with their IAM actions) the policy could
// allow. Exact is false when the policy is not expressible as prefixes and
// the scope is the bucket-wide fallback: such a scope is never vended.
type Scope struct {
	Grants   []Grant
	Exact    bool
	Why      string
	Revision string
}

// Grant is one bucket prefix and the IAM actions allowed under it.
type Grant struct {
	Bucket, Prefix string
	Actions        []string
}

// SessionPolicies turns a scope into the IAM session-policy document the
// credentials are minted with (sessionpolicy.Compile). An error (the
// packed-size limit) refuses the mint.
type SessionPolicies interface {
	SessionPolicy(s Scope) (string, error)
}

// covers reports whether one grant of s in bucket covers every key under
// prefix.
func (s Scope) covers(bucket, prefix string) bool {
	if !s.Exact {
		return false
	}
	for _, g := range s.Grants {
		if g.Bucket == bucket && len(g.Prefix) <= len(prefix) && prefix[:len(g.Prefix)] == g.Prefix {
			return true
		}
	}
	return false
}

// within is s intersected with everything under prefix in bucket: a grant
// that covers the prefix becomes the prefix, one under it stays, others go.
func (s Scope) within(bucket, prefix string) []Grant {
	var out []Grant
	for _, g := range s.Grants {
		switch {
		case g.Bucket != bucket:
		case len(g.Prefix) <= len(prefix) && prefix[:len(g.Prefix)] == g.Prefix:
			out = append(out, Grant{Bucket: bucket, Prefix: prefix, Actions: g.Actions})
		case len(prefix) < len(g.Prefix) && g.Prefix[:len(prefix)] == prefix:
			out = append(out, g)
		}
	}
	return out
}
