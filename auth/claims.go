package auth

import (
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// claimRules are the configured claim checks, resolved once by New.
type claimRules struct {
	issuer        string
	audience      []string
	leeway        time.Duration
	requireExp    bool
	principalName string
	principalPath []string
	groupsName    string
	groupsPath    []string
	// reserveX509 refuses a token that carries any x509_* claim when mTLS
	// is on, so that the policy can trust those claims to come from a
	// verified certificate (see reservedClaim).
	reserveX509 bool
}

// checked is what claim validation extracts from a verified token.
type checked struct {
	issuer    string
	principal string
	groups    []string
	jti       string
	exp       time.Time // zero when the token has none
}

// check validates the registered claims and extracts the principal. Time
// rules, with leeway L: valid while now < exp+L, from nbf-L on, and iat
// may not be later than now+L. The cache applies the same exp rule on
// every hit (notAfter), so a cached token expires exactly when a full
// verification would start refusing it.
func (r *claimRules) check(claims map[string]any, now time.Time) (checked, *Error) {
	var c checked
	switch iss := claims["iss"].(type) {
	case string:
		if iss != r.issuer {
			return c, fail(ReasonWrongIssuer, "bearer token issuer is not accepted")
		}
		c.issuer = iss
	case nil:
		return c, fail(ReasonWrongIssuer, "bearer token has no issuer")
	default:
		return c, malformed("iss claim is not a string")
	}
	if e := r.checkAudience(claims["aud"]); e != nil {
		return c, e
	}

	exp, hasExp, ok := numericDate(claims, "exp")
	switch {
	case !ok:
		return c, malformed("exp claim is not a number")
	case !hasExp && r.requireExp:
		return c, malformed("exp claim is missing")
	case hasExp && !now.Before(exp.Add(r.leeway)):
		return c, fail(ReasonExpired, "bearer token expired")
	}
	if hasExp {
		c.exp = exp
	}
	nbf, hasNbf, ok := numericDate(claims, "nbf")
	if !ok {
		return c, malformed("nbf claim is not a number")
	}
	if hasNbf && now.Add(r.leeway).Before(nbf) {
		return c, fail(ReasonNotYetValid, "bearer token is not yet valid")
	}
	iat, hasIat, ok := numericDate(claims, "iat")
	if !ok {
		return c, malformed("iat claim is not a number")
	}
	if hasIat && now.Add(r.leeway).Before(iat) {
		return c, fail(ReasonNotYetValid, "bearer token is issued in the future")
	}

	switch jti := claims["jti"].(type) {
	case string:
		c.jti = jti
	case nil:
	default:
		return c, malformed("jti claim is not a string")
	}

	p, _ := lookupClaim(claims, r.principalName, r.principalPath)
	if s, ok := p.(string); ok && validPrincipal(s) {
		c.principal = s
	} else {
		return c, fail(ReasonMissingPrincipal, "bearer token has no principal claim "+strconv.Quote(r.principalName)+" (absent, not a string, blank or with control characters)")
	}

	g, _ := lookupClaim(claims, r.groupsName, r.groupsPath)
	groups, ok := groupsOf(g)
	if !ok {
		return c, malformed("groups claim is neither a list of strings nor a string")
	}
	c.groups = groups

	if r.reserveX509 {
		if e := reservedClaim(claims); e != nil {
			return c, e
		}
	}
	return c, nil
}

// validPrincipal reports whether s can name a principal in the policy's
// input and the audit records: not blank, and no control characters (an
// auditor reading "alice\n" or "   " would have to guess who it was).
func validPrincipal(s string) bool {
	if strings.TrimFunc(s, unicode.IsSpace) == "" {
		return false
	}
	for _, r := range s {
		if unicode.IsControl(r) {
			return false
		}
	}
	return true
}

// reservedClaim refuses a token carrying a claim whose name starts with
// x509_ (in any case). With mTLS on, countersign puts the client
// certificate's fields in the principal's claims under those names
// (x509_subject, x509_issuer, x509_serial, x509_san_uri, x509_san_dns), and
// a policy may trust them as certificate-derived; a token claiming one
// would forge it (or, for a name countersign does not set today, a name
// it may set tomorrow). Refused rather than dropped: the token asked to be
// something it cannot be, and the IdP that minted it is misconfigured or
// compromised.
func reservedClaim(claims map[string]any) *Error {
	for name := range claims {
		if len(name) >= len(x509ClaimPrefix) && strings.EqualFold(name[:len(x509ClaimPrefix)], x509ClaimPrefix) {
			// The name comes from the token: quote it only when it is one
			// of ours, so a hostile name never reaches a log line.
			shown := "an x509_* claim"
			if isCertClaim(name) {
				shown = "the claim " + name
			}
			return &Error{Reason: ReasonMalformedToken, Msg: "bearer token carries " + shown + ": x509_* claims are reserved for the client certificate when mutual TLS is on"}
		}
	}
	return nil
}

// checkAudience: aud (a string or an array of strings, RFC 7519 §4.1.3)
// must contain at least one configured audience.
func (r *claimRules) checkAudience(aud any) *Error {
	switch a := aud.(type) {
	case string:
		if slices.Contains(r.audience, a) {
			return nil
		}
	case []any:
		ok := false
		for _, v := range a {
			s, isStr := v.(string)
			if !isStr {
				return malformed("aud claim is not a string or a list of strings")
			}
			ok = ok || slices.Contains(r.audience, s)
		}
		if ok {
			return nil
		}
	case nil:
		return fail(ReasonWrongAudience, "bearer token has no audience")
	default:
		return malformed("aud claim is not a string or a list of strings")
	}
	return fail(ReasonWrongAudience, "bearer token audience is not accepted")
}

// numericDate reads a NumericDate claim (seconds since the epoch, possibly
// fractional). present is false when the claim is absent; ok is false when
// it is present but not a number a 64-bit float holds (1e999 is no date:
// clamped, it would never expire). Finite values beyond year ~33000 are
// clamped so time arithmetic cannot overflow.
func numericDate(claims map[string]any, name string) (t time.Time, present, ok bool) {
	v, present := claims[name]
	if !present {
		return time.Time{}, false, true
	}
	n, isNum := v.(json.Number)
	if !isNum {
		return time.Time{}, true, false
	}
	f, err := strconv.ParseFloat(string(n), 64)
	if err != nil {
		return time.Time{}, true, false
	}
	const limit = 1e12
	f = max(-limit, min(limit, f))
	sec, frac := math.Modf(f)
	return time.Unix(int64(sec), int64(frac*1e9)), true, true
}

// lookupClaim finds a claim by its configured name: a top-level claim with
// exactly that name first (URLs as claim names contain dots), then the
// dotted path through nested objects.
func lookupClaim(claims map[string]any, name string, path []string) (any, bool) {
	if v, ok := claims[name]; ok {
		return v, true
	}
	if len(path) < 2 {
		return nil, false
	}
	var cur any = claims
	for _, seg := range path {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = m[seg]; !ok {
			return nil, false
		}
	}
	return cur, true
}

// groupsOf accepts an array of strings or one string of names separated by
// spaces or commas (as some providers emit "scope"-style claims). Empty
// names are dropped. Absent or null means no groups; the result is never
// nil, so the policy always sees a list.
func groupsOf(v any) ([]string, bool) {
	switch g := v.(type) {
	case nil:
		return []string{}, true
	case string:
		out := strings.FieldsFunc(g, func(r rune) bool { return r == ',' || unicode.IsSpace(r) })
		if out == nil {
			out = []string{}
		}
		return out, true
	case []any:
		out := make([]string, 0, len(g))
		for _, e := range g {
			s, ok := e.(string)
			if !ok {
				return nil, false
			}
			if s != "" {
				out = append(out, s)
			}
		}
		return out, true
	}
	return nil, false
}
