package auth

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"unicode/utf8"

	"github.com/valyala/fastjson"
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
func parseCompact(tok []byte, p *fastjson.Parser) (compact, *Error) {
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
	v, why := parseObject(hdr, p)
	if why != "" {
		return c, malformed("header " + why)
	}
	o, _ := v.Object()
	for _, name := range [...]string{"enc", "crit", "b64"} {
		if o.Get(name) != nil {
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
	alg := o.Get("alg")
	if alg == nil || alg.Type() != fastjson.TypeString {
		return c, malformed("header has no alg")
	}
	c.alg = string(alg.GetStringBytes())
	if kid := o.Get("kid"); kid != nil {
		if kid.Type() != fastjson.TypeString {
			return c, malformed("header kid is not a string")
		}
		c.kid, c.hasKID = string(kid.GetStringBytes()), true
	}
	c.payload = paySeg
	return c, nil
}

// decodeClaims decodes the verified payload into JSON-natural Go values.
func decodeClaims(seg []byte, p *fastjson.Parser) (map[string]any, *Error) {
	raw, err := decodeSegment(seg)
	if err != nil {
		return nil, malformed("payload is not base64url")
	}
	v, why := parseObject(raw, p)
	if why != "" {
		return nil, malformed("claims " + why)
	}
	return toGo(v).(map[string]any), nil
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

// parseObject parses one JSON object. encoding/json's validator goes
// first because fastjson alone accepts non-JSON such as NaN; duplicate
// member names are refused at any depth (RFC 7515 §4 and RFC 7519 §4
// allow refusing them), so no two JSON parsers can read different claims
// from the same token.
func parseObject(b []byte, p *fastjson.Parser) (*fastjson.Value, string) {
	if !utf8.Valid(b) || !json.Valid(b) {
		return nil, "is not valid JSON"
	}
	v, err := p.ParseBytes(b)
	if err != nil || v.Type() != fastjson.TypeObject {
		return nil, "is not a JSON object"
	}
	if hasDuplicateNames(v) {
		return nil, "has duplicate member names"
	}
	return v, ""
}

func hasDuplicateNames(v *fastjson.Value) bool {
	switch v.Type() {
	case fastjson.TypeObject:
		o, _ := v.Object()
		seen := make(map[string]struct{}, o.Len())
		dup := false
		o.Visit(func(k []byte, child *fastjson.Value) {
			if dup {
				return
			}
			if _, ok := seen[string(k)]; ok {
				dup = true
				return
			}
			seen[string(k)] = struct{}{}
			dup = hasDuplicateNames(child)
		})
		return dup
	case fastjson.TypeArray:
		a, _ := v.Array()
		for _, child := range a {
			if hasDuplicateNames(child) {
				return true
			}
		}
	}
	return false
}

// toGo converts a parsed value to the types encoding/json produces with
// UseNumber: map[string]any, []any, string, json.Number, bool, nil.
// Numbers stay json.Number so that large integer ids are exact (float64
// would silently round them); OPA consumes json.Number natively.
func toGo(v *fastjson.Value) any {
	switch v.Type() {
	case fastjson.TypeObject:
		o, _ := v.Object()
		m := make(map[string]any, o.Len())
		o.Visit(func(k []byte, child *fastjson.Value) { m[string(k)] = toGo(child) })
		return m
	case fastjson.TypeArray:
		a, _ := v.Array()
		out := make([]any, len(a))
		for i, child := range a {
			out[i] = toGo(child)
		}
		return out
	case fastjson.TypeString:
		return string(v.GetStringBytes())
	case fastjson.TypeNumber:
		return json.Number(v.MarshalTo(nil))
	case fastjson.TypeTrue:
		return true
	case fastjson.TypeFalse:
		return false
	}
	return nil
}
