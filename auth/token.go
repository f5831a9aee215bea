package auth

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/countersign/countersign/internal/strictjson"
)

// compact is a JWS compact serialization split into its segments, with
// the header decoded and checked. The claims are decoded only after the
// signature verified, so unauthenticated bytes meet as little code as
// possible.
type compact struct {
	alg     string
	kid     string
	hasKID  bool
	payload []byte // base64url segment, decoded after verification
}

// parseCompact checks the token's shape and decodes its header. It
// enforces what the JOSE RFCs allow a verifier to refuse, and refuses it:
// anything but exactly three base64url segments (five segments is JWE,
// which countersign does not decrypt), padding or non-canonical base64,
// a header that is not one JSON object with unique member names, no alg,
// "enc" (JWE), "crit" (RFC 7515 §4.1.11: extensions not understood must
// be refused, and countersign understands none) and "b64" (RFC 7797
// unencoded payloads). Key-carrying headers (jku, x5u, jwk, x5c) are
// ignored: keys come only from the configuration.
func parseCompact(tok []byte) (compact, *Error) {
	var c compact
	dots := bytes.Count(tok, []byte{'.'})
	if dots == 4 {
		return c, malformed("encrypted tokens (JWE) are not accepted")
	}
	if dots != 2 {
		return c, malformed("not three dot-separated segments")
	}
	for _, b := range tok {
		if !isBase64URL(b) && b != '.' {
			return c, malformed("not base64url")
		}
	}
	i := bytes.IndexByte(tok, '.')
	j := i + 1 + bytes.IndexByte(tok[i+1:], '.')
	hdrSeg, paySeg, sigSeg := tok[:i], tok[i+1:j], tok[j+1:]
	if len(hdrSeg) == 0 || len(paySeg) == 0 {
		return c, malformed("empty header or payload")
	}
	hdr, err := decodeSegment(hdrSeg)
	if err != nil {
		return c, malformed("header is not base64url")
	}
	// The signature is decoded again by the verifier; checking it here
	// keeps "not base64url" one error class whatever segment it is in.
	if _, err := decodeSegment(sigSeg); err != nil {
		return c, malformed("signature is not base64url")
	}
	o, why := parseObject(hdr)
	if why != "" {
		return c, malformed("header " + why)
	}
	for _, name := range [...]string{"enc", "crit", "b64"} {
		if _, ok := o[name]; ok {
			switch name {
			case "enc":
				return c, malformed("encrypted tokens (JWE) are not accepted")
			case "crit":
				return c, malformed("header has critical extensions this verifier does not understand")
			default:
				return c, malformed("unencoded payloads (b64) are not accepted")
			}
		}
	}
	alg, ok := o["alg"].(string)
	if !ok {
		return c, malformed("header has no alg")
	}
	c.alg = alg
	if kid, ok := o["kid"]; ok {
		s, ok := kid.(string)
		if !ok {
			return c, malformed("header kid is not a string")
		}
		c.kid, c.hasKID = s, true
	}
	c.payload = paySeg
	return c, nil
}

// decodeClaims decodes the verified payload into JSON-natural Go values.
func decodeClaims(seg []byte) (map[string]any, *Error) {
	raw, err := decodeSegment(seg)
	if err != nil {
		return nil, malformed("payload is not base64url")
	}
	claims, why := parseObject(raw)
	if why != "" {
		return nil, malformed("claims " + why)
	}
	if !numbersInRange(claims) {
		return nil, malformed("claims hold a number beyond the range of a 64-bit float")
	}
	return claims, nil
}

// numbersInRange reports whether every number in v is one a 64-bit float
// holds: finite, and not a non-zero value that would round to zero. The
// claims are the policy's input, and OPA refuses to evaluate numbers far
// out of range: without this check such a token would authenticate and
// then fail every decision as "policy unavailable" (a 503 the engine
// retries) until it expired. No real provider issues such a number.
func numbersInRange(v any) bool {
	switch x := v.(type) {
	case json.Number:
		f, err := strconv.ParseFloat(string(x), 64)
		if err != nil {
			return false
		}
		if f == 0 {
			mant, _, _ := strings.Cut(strings.ToLower(string(x)), "e")
			return strings.Trim(mant, "-+0.") == ""
		}
		return true
	case map[string]any:
		for _, e := range x {
			if !numbersInRange(e) {
				return false
			}
		}
	case []any:
		for _, e := range x {
			if !numbersInRange(e) {
				return false
			}
		}
	}
	return true
}

func isBase64URL(b byte) bool {
	return 'A' <= b && b <= 'Z' || 'a' <= b && b <= 'z' || '0' <= b && b <= '9' || b == '-' || b == '_'
}

// decodeSegment is strict unpadded base64url: one encoding per value, so
// two different tokens cannot carry the same bytes.
func decodeSegment(seg []byte) ([]byte, error) {
	out := make([]byte, base64.RawURLEncoding.DecodedLen(len(seg)))
	n, err := base64.RawURLEncoding.Strict().Decode(out, seg)
	return out[:n], err
}

// parseObject checks and decodes one JSON object in one pass, into the
// types encoding/json produces with UseNumber: numbers stay json.Number so
// that large integer ids are exact (float64 would silently round them);
// OPA consumes json.Number natively.
//
// The JSON must be valid UTF-8, strict (no NaN, no lone surrogate escapes,
// nothing after the value) and without duplicate member names at any depth
// (RFC 7515 §4 and RFC 7519 §4 allow refusing them), so no two JSON parsers
// can read different claims from the same token. Depth 300 is fastjson's
// bound, which applied before, so no token changes verdict by depth.
func parseObject(b []byte) (map[string]any, string) {
	v, e := strictjson.Decode(b, strictjson.Options{ValidUTF8: true, UniqueNames: true, MaxDepth: 300})
	if e != nil {
		if e.Kind == strictjson.DuplicateName {
			return nil, "has duplicate member names"
		}
		return nil, "is not valid JSON"
	}
	o, ok := v.(map[string]any)
	if !ok {
		return nil, "is not a JSON object"
	}
	return o, ""
}
