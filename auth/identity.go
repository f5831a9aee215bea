package auth

import (
	"time"

	"github.com/countersign/countersign/internal/policyinput"
)

// Method says how a caller authenticated.
type Method string

// The authentication methods.
const (
	MethodBearer Method = "bearer" // a verified JWT (possibly over mTLS as well)
	MethodMTLS   Method = "mtls"   // a verified client certificate alone
)

// Identity is what Authenticate returns: the policy's principal plus what
// the audit record needs about the credential.
//
// Authenticate returns *Identity rather than *policyinput.Principal because the
// audit layer needs the token id and fingerprint, and because the verified
// cache can then hand out one immutable value per token without copying.
// Identities are shared between concurrent requests: treat every field,
// including Principal.Claims and Principal.Groups, as read-only.
type Identity struct {
	// Principal is the policy input's "principal": ID from the principal
	// claim, Issuer (iss), Groups (never nil), Claims (every claim of the
	// token as decoded from JSON: map[string]any, []any, string,
	// json.Number, bool, nil).
	Principal policyinput.Principal
	// Method is how the caller authenticated.
	Method Method
	// TokenID is the token's jti ("" when absent or for mTLS).
	TokenID string
	// TokenHash is the SHA-256 of the raw token (zero for mTLS). It is the
	// cache key; the audit layer HMACs it before recording. The token
	// itself is never stored or logged.
	TokenHash [32]byte
	// ExpiresAt is the token's exp (zero if it has none), or the client
	// certificate's NotAfter for mTLS.
	ExpiresAt time.Time
}
