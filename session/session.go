// Package session mints per-principal STS sessions and caches them.
//
// With per-principal sessions countersign signs a principal's requests not
// with its own credential but with a session of its role assumed for that
// principal, restricted by a session policy compiled from the OPA policy:
// the store enforces the principal's scope too (defense in depth), and the
// store's own logs name the person (RoleSessionName, SourceIdentity, session
// tags). docs/design.md, "Per-principal sessions", says how the pieces fit.
//
// Minter is the one call to STS (AssumeRole, see STS); Cache keeps the
// sessions per (principal, scope), renews them in the background and drops
// them when the policy changes.
package session

import (
	"context"
	"errors"
	"time"

	"github.com/countersign/countersign/internal/policyinput"
)

// ErrUnavailable means no session could be minted (STS failed or refused,
// or the request cannot be expressed to STS). Nothing may be signed or
// vended; callers answer 503 with Retry-After. Messages never carry secrets.
var ErrUnavailable = errors.New("session: session credentials unavailable")

// Request is one session to mint.
type Request struct {
	// Principal the session is for: it names the session
	// (RoleSessionName, SourceIdentity) and its tags.
	Principal policyinput.Principal
	// Policy is the inline session policy (IAM JSON). It is required: a
	// session without one could do everything the role can.
	Policy string
	// Duration of the session; zero means the minter's default.
	Duration time.Duration
	// Tags are extra session tags, beside the principal's (PrincipalTags).
	Tags map[string]string
}

// Credentials are a minted session. SecretAccessKey and SessionToken are
// secrets: never log them (String redacts them).
type Credentials struct {
	AccessKeyID, SecretAccessKey, SessionToken string
	Expires                                    time.Time
	// SourceIdentity and SessionName as sent to STS (see SourceIdentity
	// and SessionName): what the store's logs name the principal by.
	SourceIdentity, SessionName string
}

// String describes c without its secrets.
func (c Credentials) String() string {
	return "session{access_key_id=" + c.AccessKeyID + " source_identity=" + c.SourceIdentity +
		" session_name=" + c.SessionName + " expires=" + c.Expires.UTC().Format(time.RFC3339) + "}"
}

// GoString makes %#v redact secrets too.
func (c Credentials) GoString() string { return c.String() }

// Minter mints one session (implemented by *STS).
type Minter interface {
	Mint(ctx context.Context, r Request) (Credentials, error)
}
