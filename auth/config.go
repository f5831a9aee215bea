package auth

import (
	"fmt"
	"net"
	"net/url"
	"slices"
	"strings"
	"time"
)

// Defaults. A zero value in Config means "use the default", so a
// hand-built Config and one decoded from a partial YAML section behave the
// same.
const (
	DefaultJWKSRefresh    = 5 * time.Minute
	DefaultJWKSMinRefresh = 10 * time.Second
	DefaultLeeway         = 30 * time.Second
	MaxLeeway             = 5 * time.Minute
	DefaultCacheSize      = 10000
	DefaultPrincipalClaim = "sub"
	DefaultGroupsClaim    = "groups"

	// minHS256SecretLen is RFC 7518 §3.2: an HMAC key must be at least as
	// long as the hash output.
	minHS256SecretLen = 32
)

// MTLS principal sources (Config.MTLSPrincipal).
const (
	MTLSOff       = ""
	MTLSSubjectCN = "subject-cn" // the leaf certificate's subject common name
	MTLSSANURI    = "san-uri"    // the leaf's first URI SAN (e.g. a SPIFFE ID)
	MTLSSANDNS    = "san-dns"    // the leaf's first DNS SAN
)

// defaultAlgorithms are accepted from a JWKS when AllowedAlgorithms is
// empty. With HS256Secret the only (and default) algorithm is HS256.
func defaultAlgorithms() []string { return []string{"RS256", "ES256", "EdDSA", "PS256"} }

// isAsymmetric reports whether a JWKS key may verify alg. HMAC is never
// accepted from a JWKS: a JWKS is public, so an "oct" key in it, or an RSA
// key's bytes used as an HMAC secret, is the classic algorithm confusion.
func isAsymmetric(alg string) bool {
	switch alg {
	case "RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA":
		return true
	}
	return false
}

// Config is the `auth:` section of countersign's configuration. Exactly
// one key source (jwks_url, jwks_file or hs256_secret) enables bearer
// tokens; mtls_principal enables client certificates; both may be on.
type Config struct {
	// Issuer must equal the token's iss exactly. Required with a key source.
	Issuer string `yaml:"issuer"`
	// Audience: the token's aud must contain at least one of these.
	// Required with a key source.
	Audience []string `yaml:"audience"`

	// JWKSURL is fetched at start (failure stops New: fail closed), every
	// JWKSRefresh in the background, and when a token names an unknown kid
	// (at most once per JWKSMinRefresh). https only, except on loopback.
	JWKSURL string `yaml:"jwks_url"`
	// JWKSFile is a local JWKS, re-read on the same schedule as JWKSURL
	// (and parsed again only when its content changed).
	JWKSFile string `yaml:"jwks_file"`
	// JWKSRefresh is the background refresh interval (default 5m). It is
	// also the bound on how long a removed key keeps verifying (cached)
	// tokens.
	JWKSRefresh time.Duration `yaml:"jwks_refresh"`
	// JWKSMinRefresh rate-limits refreshes caused by unknown kids
	// (default 10s), so garbage tokens cannot hammer the identity provider.
	JWKSMinRefresh time.Duration `yaml:"jwks_min_refresh"`

	// HS256Secret is a shared secret for development only (at least 32
	// bytes). It may not be combined with a JWKS. The caller applies any
	// environment override before Validate.
	HS256Secret string `yaml:"hs256_secret"`

	// Leeway is the clock skew allowed for exp, nbf and iat (default 30s,
	// at most 5m).
	Leeway time.Duration `yaml:"leeway"`
	// PrincipalClaim holds the principal id (default "sub"). A dotted path
	// ("ext.user") walks nested objects; a top-level claim whose name is
	// exactly the dotted string takes precedence.
	PrincipalClaim string `yaml:"principal_claim"`
	// GroupsClaim holds the groups (default "groups", dotted paths as for
	// PrincipalClaim): an array of strings, or one string separated by
	// spaces or commas. Absent means no groups.
	GroupsClaim string `yaml:"groups_claim"`
	// AllowedAlgorithms (default RS256, ES256, EdDSA, PS256 with a JWKS;
	// HS256, and only HS256, with HS256Secret).
	AllowedAlgorithms []string `yaml:"allowed_algorithms"`
	// CacheSize is the number of verified tokens kept (default 10000).
	CacheSize int `yaml:"cache_size"`
	// RequireExp rejects tokens without exp (default true). A pointer so
	// that leaving it out, in YAML or in Go, keeps the safe default.
	RequireExp *bool `yaml:"require_exp"`

	// MTLSPrincipal takes the principal from the verified client
	// certificate when no Authorization header is sent: "" (off),
	// "subject-cn", "san-uri" or "san-dns". When a bearer token is sent as
	// well, the token is the principal and the certificate subject is
	// added to its claims as "x509_subject". When set, a token carrying
	// any claim named x509_* is refused: those names are the
	// certificate's.
	MTLSPrincipal string `yaml:"mtls_principal"`
}

// Enabled reports whether a credential source is configured: a key
// source for bearer tokens (jwks_url, jwks_file, hs256_secret) or
// mtls_principal. Validate and New fail without one, naming the keys, so
// authentication cannot silently stay off; serve -dev uses Enabled to
// decide whether to generate a development secret.
func (c *Config) Enabled() bool {
	return c.bearerEnabled() || c.MTLSPrincipal != MTLSOff
}

// bearerEnabled reports whether bearer tokens are accepted at all.
func (c *Config) bearerEnabled() bool {
	return c.JWKSURL != "" || c.JWKSFile != "" || c.HS256Secret != ""
}

// requireExp is RequireExp with its default applied.
func (c *Config) requireExp() bool { return c.RequireExp == nil || *c.RequireExp }

// Validate fills defaults for zero values and checks the section, like the
// other configuration types of countersign. Errors name the offending key
// as it is spelled in the YAML file ("auth.issuer is required").
func (c *Config) Validate() error {
	if c.JWKSURL != "" && c.JWKSFile != "" {
		return fmt.Errorf("auth.jwks_url and auth.jwks_file are mutually exclusive")
	}
	if c.HS256Secret != "" && (c.JWKSURL != "" || c.JWKSFile != "") {
		return fmt.Errorf("auth.hs256_secret (development only) may not be combined with auth.jwks_url or auth.jwks_file")
	}
	switch c.MTLSPrincipal {
	case MTLSOff, MTLSSubjectCN, MTLSSANURI, MTLSSANDNS:
	default:
		return fmt.Errorf("auth.mtls_principal must be one of subject-cn, san-uri, san-dns (or empty), not %q", c.MTLSPrincipal)
	}
	if !c.Enabled() {
		return fmt.Errorf("auth: one of auth.jwks_url, auth.jwks_file, auth.hs256_secret or auth.mtls_principal is required")
	}

	for _, d := range []struct {
		key string
		v   *time.Duration
		def time.Duration
	}{
		{"auth.jwks_refresh", &c.JWKSRefresh, DefaultJWKSRefresh},
		{"auth.jwks_min_refresh", &c.JWKSMinRefresh, DefaultJWKSMinRefresh},
		{"auth.leeway", &c.Leeway, DefaultLeeway},
	} {
		if *d.v < 0 {
			return fmt.Errorf("%s must not be negative", d.key)
		}
		if *d.v == 0 {
			*d.v = d.def
		}
	}
	if c.Leeway > MaxLeeway {
		return fmt.Errorf("auth.leeway must be at most %s", MaxLeeway)
	}
	if c.CacheSize < 0 {
		return fmt.Errorf("auth.cache_size must not be negative")
	}
	if c.CacheSize == 0 {
		c.CacheSize = DefaultCacheSize
	}
	if c.PrincipalClaim == "" {
		c.PrincipalClaim = DefaultPrincipalClaim
	}
	if c.GroupsClaim == "" {
		c.GroupsClaim = DefaultGroupsClaim
	}
	if err := checkClaimPath("auth.principal_claim", c.PrincipalClaim); err != nil {
		return err
	}
	if err := checkClaimPath("auth.groups_claim", c.GroupsClaim); err != nil {
		return err
	}

	if !c.bearerEnabled() {
		return nil
	}
	if c.Issuer == "" {
		return fmt.Errorf("auth.issuer is required")
	}
	if len(c.Audience) == 0 {
		return fmt.Errorf("auth.audience is required (the token's aud must name one of them)")
	}
	for i, a := range c.Audience {
		if a == "" {
			return fmt.Errorf("auth.audience[%d] is empty", i)
		}
	}
	if c.JWKSURL != "" {
		if err := checkJWKSURL(c.JWKSURL); err != nil {
			return err
		}
	}
	if c.HS256Secret != "" && len(c.HS256Secret) < minHS256SecretLen {
		return fmt.Errorf("auth.hs256_secret must be at least %d bytes", minHS256SecretLen)
	}
	return c.checkAlgorithms()
}

func (c *Config) checkAlgorithms() error {
	if c.HS256Secret != "" {
		if len(c.AllowedAlgorithms) == 0 {
			c.AllowedAlgorithms = []string{"HS256"}
		}
		for i, a := range c.AllowedAlgorithms {
			if a != "HS256" {
				return fmt.Errorf("auth.allowed_algorithms[%d]: %q is not possible with auth.hs256_secret (only HS256)", i, a)
			}
		}
		return nil
	}
	if len(c.AllowedAlgorithms) == 0 {
		c.AllowedAlgorithms = defaultAlgorithms()
	}
	for i, a := range c.AllowedAlgorithms {
		if strings.HasPrefix(a, "HS") {
			return fmt.Errorf("auth.allowed_algorithms[%d]: %q requires auth.hs256_secret; HMAC is never accepted from a JWKS", i, a)
		}
		if !isAsymmetric(a) {
			return fmt.Errorf("auth.allowed_algorithms[%d]: %q is not supported (supported: RS256/384/512, PS256/384/512, ES256/384/512, EdDSA)", i, a)
		}
	}
	return nil
}

// checkJWKSURL refuses plain http except on loopback: the JWKS decides
// which tokens are genuine, so whoever can alter it in transit can mint
// any principal. Credentials in the URL would end up in logs.
func checkJWKSURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return fmt.Errorf("auth.jwks_url is not an absolute URL")
	}
	if u.User != nil {
		return fmt.Errorf("auth.jwks_url must not contain credentials")
	}
	switch u.Scheme {
	case "https":
		return nil
	case "http":
		if isLoopback(u.Hostname()) {
			return nil
		}
		return fmt.Errorf("auth.jwks_url must use https (plain http only on loopback)")
	default:
		return fmt.Errorf("auth.jwks_url must use https")
	}
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func checkClaimPath(key, path string) error {
	if slices.Contains(strings.Split(path, "."), "") {
		return fmt.Errorf("%s: %q has an empty path segment", key, path)
	}
	return nil
}
