package vend

import (
	"context"
	"slices"
	"strings"

	"github.com/countersign/countersign/internal/policyinput"
)

// Scoper compiles, from the policy, what a principal may reach with one
// access class (implemented by *policy.Manager, through an adapter in
// cmd/countersign), in exact mode (policy.ScopeQuery.Exact): only the
// IAM actions whose scope is exact, each where every operation IAM
// authorizes with it is allowed.
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

// Scope is the set of prefixes (with their IAM actions) the policy
// allows exactly: for every key under a grant's prefix, every operation
// of the grant's actions, whatever the request's headers, source and
// version. Inexact names, with why, the actions left out because the
// policy allows them only under a condition no session policy carries, on
// keys it does not decide by prefix, or for some of their operations:
// those are never vended.
type Scope struct {
	Grants   []Grant
	Exact    bool
	Inexact  map[string]string // IAM action: why
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

// covers reports whether one grant of s in bucket gives action on every
// key under prefix.
func (s Scope) covers(bucket, prefix, action string) bool {
	if _, inexact := s.Inexact[action]; inexact {
		return false
	}
	for _, g := range s.Grants {
		if g.Bucket == bucket && len(g.Prefix) <= len(prefix) && prefix[:len(g.Prefix)] == g.Prefix && slices.Contains(g.Actions, action) {
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
			if strings.ContainsAny(g.Prefix, metachars) {
				// No session policy names it exactly (splitLocation): an
				// optional grant is left out.
				continue
			}
			out = append(out, g)
		}
	}
	return out
}
