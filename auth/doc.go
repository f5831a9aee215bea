// Package auth identifies the caller of a sign request: a bearer JWT
// verified against a JWKS (or, for development, an HS256 secret), and/or a
// client certificate verified by TLS. The result is the policy's principal
// plus what the audit record needs (Identity).
//
// # Library
//
// JWKS documents are parsed by github.com/lestrrat-go/jwx/v3 (already in
// the build through OPA), which knows every JWK key type and validates key
// material, and signatures are checked with its jws.VerifyCompactFast,
// which re-checks that the key type fits the algorithm and that the header
// alg is the one verified under. golang-jwt/jwt has no JWKS support at all
// (it needs a third module for that). The JWKS refresh is this package's
// own (keystore.go) rather than jwk.Cache: countersign needs a rate-limited
// refresh on unknown kids, keys_unavailable distinct from unknown_key, and
// a generation that voids cached verifications when a key disappears,
// none of which jwk.Cache offers.
//
// # Verification order
//
//  1. Authorization: "Bearer" (any case), at most MaxTokenBytes.
//  2. Cache: SHA-256 of the token; a hit is valid until exp+leeway and
//     while the key set generation is unchanged (cache.go). In front of
//     it, the entries last returned, found by the token's exact bytes
//     under the same rules (memo.go).
//  3. Shape and header (token.go): three strict base64url segments, a
//     header that is one strict JSON object (internal/strictjson: UTF-8,
//     no duplicate names at any depth); JWE, crit and b64 are refused.
//     The claims are held to the same JSON rules after the signature.
//  4. alg must be in auth.allowed_algorithms ("none" never is; HS256 only
//     with the development secret, never from a JWKS).
//  5. Key by kid (keyset.go); an unknown kid triggers a rate-limited
//     refresh (keystore.go). The key's type and its JWK alg, if set, must
//     fit the header alg: this is what defeats algorithm confusion.
//  6. Signature, then claims (claims.go): iss exact, aud contains one of
//     the audiences, exp (required by default), nbf, iat with leeway,
//     principal and groups from configurable, possibly dotted claims.
//
// # Failure modes
//
// New fails when the JWKS cannot be loaded at start (fail closed, error
// names auth.jwks_url or auth.jwks_file). Afterwards a failing JWKS source
// keeps the last good keys; tokens with unknown kids then fail with
// keys_unavailable (retryable, 503) instead of unknown_key (401).
package auth
