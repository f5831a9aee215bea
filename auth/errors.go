package auth

import "errors"

// Reason classifies why authentication failed. Its String form is stable:
// it is used as a metric label and in the audit record, and the server maps
// it to an HTTP status (keys_unavailable → 503, everything else → 401).
type Reason uint8

// The reasons. Zero is deliberately not a valid reason, so a forgotten
// assignment is visible.
const (
	ReasonMissingToken        Reason = iota + 1 // no Authorization header, or not a Bearer one
	ReasonMalformedToken                        // not a well-formed signed JWT (size, segments, base64, JSON, JWE, crit, claim types)
	ReasonBadSignature                          // the signature does not verify with the selected key
	ReasonExpired                               // exp (or the client certificate's NotAfter) has passed
	ReasonNotYetValid                           // nbf or iat is in the future (beyond the leeway)
	ReasonWrongIssuer                           // iss is not auth.issuer
	ReasonWrongAudience                         // aud names none of auth.audience
	ReasonUnknownKey                            // kid is not in a freshly fetched key set
	ReasonAlgorithmNotAllowed                   // alg is none, not in auth.allowed_algorithms, or does not fit the key
	ReasonMissingPrincipal                      // the principal claim (or certificate field) is absent or not a non-empty string
	ReasonKeysUnavailable                       // the key source is failing, so the token cannot be judged: retryable
)

// String returns the stable snake_case name of r ("expired", ...).
func (r Reason) String() string {
	switch r {
	case ReasonMissingToken:
		return "missing_token"
	case ReasonMalformedToken:
		return "malformed_token"
	case ReasonBadSignature:
		return "bad_signature"
	case ReasonExpired:
		return "expired"
	case ReasonNotYetValid:
		return "not_yet_valid"
	case ReasonWrongIssuer:
		return "wrong_issuer"
	case ReasonWrongAudience:
		return "wrong_audience"
	case ReasonUnknownKey:
		return "unknown_key"
	case ReasonAlgorithmNotAllowed:
		return "algorithm_not_allowed"
	case ReasonMissingPrincipal:
		return "missing_principal"
	case ReasonKeysUnavailable:
		return "keys_unavailable"
	}
	return "unknown"
}

// MarshalText makes a Reason encode as its stable name in JSON and logs.
func (r Reason) MarshalText() ([]byte, error) { return []byte(r.String()), nil }

// Error is the only error Authenticate returns. Msg is safe to show to the
// client and to log: it names the reason class and never contains the
// token, its signature or any value taken from it (token content is
// attacker-controlled and could forge log lines).
type Error struct {
	Reason Reason
	Msg    string
}

func (e *Error) Error() string { return e.Msg }

// Retryable reports whether the client should retry later (the server
// answers 503 with Retry-After): the token could not be judged because the
// key source is failing. Every other reason is a definite 401.
func (e *Error) Retryable() bool { return e.Reason == ReasonKeysUnavailable }

// ReasonOf returns the Reason of an *Error in err's chain.
func ReasonOf(err error) (Reason, bool) {
	var e *Error
	if errors.As(err, &e) {
		return e.Reason, true
	}
	return 0, false
}

func fail(r Reason, msg string) *Error { return &Error{Reason: r, Msg: msg} }

// malformed is the common case of a token that is not a well-formed JWT;
// what names the rule broken (never the offending bytes).
func malformed(what string) *Error {
	return &Error{Reason: ReasonMalformedToken, Msg: "bearer token is malformed: " + what}
}
