package session

import (
	"crypto/sha256"
	"encoding/hex"
	"sort"
	"strings"

	"github.com/countersign/countersign/internal/policyinput"
)

// STS's character rules (AWS STS API reference, AssumeRole):
//
//   - RoleSessionName and SourceIdentity: 2 to 64 characters of
//     [\w+=,.@-], where \w is [A-Za-z0-9_].
//   - Session tag keys: 1 to 128, values 0 to 256 characters of
//     [\p{L}\p{Z}\p{N}_.:/=+\-@]; at most 50 tags.
//
// A principal id may hold any character, so it is encoded, deterministically
// and injectively, into the characters every one of these allows:
//
//   - [A-Za-z0-9_.@-] stand for themselves;
//   - every other byte (of the UTF-8 text) is "=" and two upper-case hex
//     digits: "alice smith/eu" is "alice=20smith=2Feu", "=" is "=3D";
//   - a result shorter than the minimum is padded with "+";
//   - a result longer than the maximum is cut at an escape boundary to
//     leave room for "+" and the first 24 hex digits of the SHA-256 of the
//     unencoded text.
//
// "+" never appears in an unpadded, uncut encoding, so the three forms
// cannot be confused with each other, and within the first two no two texts
// encode alike; the cut form is unique as far as 96 bits of SHA-256 are.
const (
	nameMin   = 2
	nameMax   = 64
	tagValMax = 256
	hashHex   = 24
)

// Session tag keys countersign sets on every session.
const (
	TagPrincipal = "countersign:principal"
	TagIssuer    = "countersign:issuer"
	TagGroups    = "countersign:groups"
)

// SessionName is the RoleSessionName for p: its id, encoded. It appears in
// the assumed-role ARN, so in every storage log line of the session.
func SessionName(p *policyinput.Principal) string { return Encode(p.ID, nameMin, nameMax) }

// SourceIdentity is the SourceIdentity for p: its id, encoded as for
// SessionName. STS keeps it across role chaining and CloudTrail records it
// on every call of the session.
func SourceIdentity(p *policyinput.Principal) string { return Encode(p.ID, nameMin, nameMax) }

// PrincipalTags are the session tags naming p: its id, issuer and groups
// (each group encoded, sorted, joined by ":", which encoding never
// produces), each value encoded within the tag value limit.
func PrincipalTags(p *policyinput.Principal) map[string]string {
	groups := make([]string, len(p.Groups))
	for i, g := range p.Groups {
		groups[i] = Encode(g, 0, 1<<30)
	}
	sort.Strings(groups)
	joined := strings.Join(groups, ":")
	if len(joined) > tagValMax {
		joined = cut(joined, strings.Join(p.Groups, "\x00"), tagValMax)
	}
	return map[string]string{
		TagPrincipal: Encode(p.ID, 0, tagValMax),
		TagIssuer:    Encode(p.Issuer, 0, tagValMax),
		TagGroups:    joined,
	}
}

// Encode encodes s as described above, to between min and max characters
// (max at least hashHex+2).
func Encode(s string, min, max int) string {
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		if plain(c) {
			b.WriteByte(c)
			continue
		}
		const digits = "0123456789ABCDEF"
		b.WriteByte('=')
		b.WriteByte(digits[c>>4])
		b.WriteByte(digits[c&15])
	}
	out := b.String()
	if len(out) > max {
		return cut(out, s, max)
	}
	for len(out) < min {
		out += "+"
	}
	return out
}

// cut shortens enc (the encoding of raw) to max characters: a prefix that
// ends on an escape boundary, "+", and hashHex hex digits of raw's SHA-256.
func cut(enc, raw string, max int) string {
	n := max - 1 - hashHex
	if n > len(enc) {
		n = len(enc)
	}
	// Do not split an "=XX" escape.
	for i := n - 1; i >= 0 && i >= n-2; i-- {
		if enc[i] == '=' {
			n = i
			break
		}
	}
	sum := sha256.Sum256([]byte(raw))
	return enc[:n] + "+" + hex.EncodeToString(sum[:])[:hashHex]
}

func plain(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		c == '_' || c == '.' || c == '@' || c == '-'
}
