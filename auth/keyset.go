package auth

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/lestrrat-go/jwx/v3/jwk"
)

// minRSABits refuses weak RSA keys at load time rather than at verify time,
// so the log says which key was skipped and why.
const minRSABits = 2048

// verifyKey is one usable verification key.
type verifyKey struct {
	kid string
	// alg is the JWK's "alg"; when set, the token header's alg must equal
	// it (RFC 7517 §4.4). Empty means any allowed algorithm that fits the
	// key type.
	alg string
	// key is *rsa.PublicKey, *ecdsa.PublicKey, ed25519.PublicKey, or
	// []byte for the HS256 development secret.
	key any
	// id identifies the key material and its constraints, to detect keys
	// that were removed or replaced between two loads.
	id string
}

// keySet is an immutable snapshot of the verification keys. A new set is
// built on every change and swapped in atomically, so verification never
// takes a lock.
type keySet struct {
	byKID map[string][]*verifyKey
	all   []*verifyKey
	// ignoreKID is set for the HS256 development secret: there is one
	// key, so whatever kid a development token generator put in the
	// header does not matter.
	ignoreKID bool
	// gen changes whenever a key is removed or replaced (not when one is
	// only added). Cached verifications remember the generation they were
	// made under and are void once it changes: a removed key stops
	// vouching for cached tokens as soon as a refresh notices the removal.
	gen uint64
}

// lookup returns the keys a token's kid names. Without a kid the only key
// of a one-key set is used (common for a single development key); with
// several keys a token must say which one it was signed with.
func (s *keySet) lookup(kid string, hasKID bool) []*verifyKey {
	if s.ignoreKID || !hasKID {
		if len(s.all) == 1 {
			return s.all
		}
		return nil
	}
	return s.byKID[kid]
}

// kids lists the key ids for log lines.
func (s *keySet) kids() []string {
	out := make([]string, 0, len(s.all))
	for _, k := range s.all {
		out = append(out, k.kid)
	}
	return out
}

// changedFrom reports whether any key of old is missing from s or was
// replaced (same kid, other material or alg): the only changes that can
// make a previously valid verification invalid.
func (s *keySet) changedFrom(old *keySet) bool {
	have := make(map[string]bool, len(s.all))
	for _, k := range s.all {
		have[k.id] = true
	}
	for _, k := range old.all {
		if !have[k.id] {
			return true
		}
	}
	return false
}

// parseJWKS builds a keySet from a JWKS document (or a single JWK). Keys
// that cannot verify signatures here are skipped with a log line rather
// than failing the whole set, because identity providers publish
// encryption keys and new key types next to signing keys. Skipped:
// use other than "sig", key_ops without "verify", symmetric ("oct") keys
// (HMAC is never accepted from a JWKS), RSA keys under 2048 bits, curves
// other than P-256/384/521 and Ed25519, and an alg that is not an
// asymmetric signature algorithm. Private keys are reduced to their public
// part.
func parseJWKS(body []byte, log *slog.Logger) (*keySet, error) {
	set, err := jwk.Parse(body, jwk.WithStrictKeySetParsing(false))
	if err != nil {
		return nil, fmt.Errorf("not a JWKS: %w", err)
	}
	ks := &keySet{byKID: make(map[string][]*verifyKey, set.Len())}
	for i := range set.Len() {
		k, _ := set.Key(i)
		kid, _ := k.KeyID()
		vk, why := usableKey(k, kid)
		if why != "" {
			log.Warn("auth: skipping JWKS key", "index", i, "kid", kid, "reason", why)
			continue
		}
		ks.all = append(ks.all, vk)
		ks.byKID[kid] = append(ks.byKID[kid], vk)
	}
	return ks, nil
}

// usableKey converts one JWK, or says why it is skipped.
func usableKey(k jwk.Key, kid string) (*verifyKey, string) {
	if jwk.IsUnsupportedKey(k) {
		return nil, "unsupported or invalid key"
	}
	if use, ok := k.KeyUsage(); ok && use != "" && use != "sig" {
		return nil, "use is not sig"
	}
	if ops, ok := k.KeyOps(); ok && !slices.Contains(ops, jwk.KeyOpVerify) {
		return nil, "key_ops does not include verify"
	}
	if k.KeyType() == jwa.OctetSeq() {
		return nil, "symmetric keys are not accepted from a JWKS"
	}
	alg := ""
	if a, ok := k.Algorithm(); ok {
		alg = a.String()
		if !isAsymmetric(alg) {
			return nil, "alg is not a supported signature algorithm"
		}
	}
	pub, err := k.PublicKey()
	if err != nil {
		return nil, "no public key"
	}
	var raw any
	if err := jwk.Export(pub, &raw); err != nil {
		return nil, "cannot export key"
	}
	switch rk := raw.(type) {
	case *rsa.PublicKey:
		if rk.N.BitLen() < minRSABits {
			return nil, fmt.Sprintf("RSA key shorter than %d bits", minRSABits)
		}
	case *ecdsa.PublicKey:
		if ecdsaAlg(rk.Curve) == "" {
			return nil, "unsupported elliptic curve"
		}
	case ed25519.PublicKey:
	default:
		return nil, fmt.Sprintf("unsupported key type %T", raw)
	}
	tp, err := pub.Thumbprint(crypto.SHA256)
	if err != nil {
		return nil, "cannot compute thumbprint"
	}
	return &verifyKey{
		kid: kid,
		alg: alg,
		key: raw,
		id:  fmt.Sprintf("%q/%q/%x", kid, alg, tp),
	}, ""
}

// keyFits reports whether alg may be verified with k: the key type must
// be the algorithm's (RSA for RS*/PS*, the matching curve for ES*, Ed25519
// for EdDSA, the shared secret for HS256) and a JWK alg, if set, must be
// exactly the token's. This is what makes algorithm confusion impossible:
// an HS256 header can never select an RSA key, whatever the bytes.
func keyFits(alg string, k *verifyKey) bool {
	if k.alg != "" && k.alg != alg {
		return false
	}
	switch key := k.key.(type) {
	case *rsa.PublicKey:
		return strings.HasPrefix(alg, "RS") || strings.HasPrefix(alg, "PS")
	case *ecdsa.PublicKey:
		return alg == ecdsaAlg(key.Curve)
	case ed25519.PublicKey:
		return alg == "EdDSA"
	case []byte:
		return alg == "HS256"
	}
	return false
}

func ecdsaAlg(c elliptic.Curve) string {
	switch c {
	case elliptic.P256():
		return "ES256"
	case elliptic.P384():
		return "ES384"
	case elliptic.P521():
		return "ES512"
	}
	return ""
}
