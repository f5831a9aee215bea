package auth

import (
	"bytes"
	"crypto/sha256"
)

// MaxTokenBytes bounds a bearer token before anything parses it. Real
// access tokens are 1-2 KiB; the bound keeps hashing, base64 and JSON work
// per request small and fixed.
const MaxTokenBytes = 8 << 10

// bearerToken extracts the token from an Authorization header value
// without allocating. The scheme is matched case-insensitively (RFC 7235
// §2.1: "Bearer", "bearer", "BEARER" are the same scheme), followed by one
// or more spaces; surrounding whitespace is ignored. The token's own
// syntax is checked later by parseCompact.
func bearerToken(h []byte) ([]byte, *Error) {
	h = bytes.Trim(h, " \t")
	if len(h) == 0 {
		return nil, fail(ReasonMissingToken, "no bearer token")
	}
	const scheme = "Bearer"
	if bytes.EqualFold(h, []byte(scheme)) {
		return nil, fail(ReasonMissingToken, "bearer token is empty")
	}
	if len(h) <= len(scheme) || !bytes.EqualFold(h[:len(scheme)], []byte(scheme)) || h[len(scheme)] != ' ' {
		return nil, fail(ReasonMissingToken, "authorization header is not a bearer token")
	}
	tok := bytes.TrimLeft(h[len(scheme):], " ")
	if len(tok) == 0 {
		return nil, fail(ReasonMissingToken, "bearer token is empty")
	}
	if len(tok) > MaxTokenBytes {
		return nil, malformed("larger than 8 KiB")
	}
	return tok, nil
}

// TokenHash is the SHA-256 of the bearer token in an Authorization header
// value, found as Authenticate finds it: the Identity.TokenHash of the
// caller once authenticated. ok is false when the header carries no bearer
// token. It verifies nothing; it lets a component that sees the header
// (the catalog front) key what it learns by the same caller the sign
// handler authenticates.
func TokenHash(authorization []byte) (sum [32]byte, ok bool) {
	tok, err := bearerToken(authorization)
	if err != nil {
		return sum, false
	}
	return sha256.Sum256(tok), true
}
