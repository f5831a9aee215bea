package auth

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/goccy/go-yaml"
)

func TestValidateDefaults(t *testing.T) {
	cfg := Config{Issuer: testIssuer, Audience: []string{testAudience}, JWKSURL: "https://idp.example/jwks"}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	if cfg.JWKSRefresh != 5*time.Minute || cfg.JWKSMinRefresh != 10*time.Second || cfg.Leeway != 30*time.Second ||
		cfg.CacheSize != 10000 || cfg.PrincipalClaim != "sub" || cfg.GroupsClaim != "groups" || !cfg.requireExp() {
		t.Fatalf("defaults: %+v", cfg)
	}
	if !slices.Equal(cfg.AllowedAlgorithms, []string{"RS256", "ES256", "EdDSA", "PS256"}) {
		t.Fatal(cfg.AllowedAlgorithms)
	}
	hs := Config{Issuer: testIssuer, Audience: []string{testAudience}, HS256Secret: testSecret}
	if err := hs.Validate(); err != nil || !slices.Equal(hs.AllowedAlgorithms, []string{"HS256"}) {
		t.Fatal(err, hs.AllowedAlgorithms)
	}
	mtls := Config{MTLSPrincipal: MTLSSANURI}
	if err := mtls.Validate(); err != nil {
		t.Fatalf("mTLS only: %v", err)
	}
	for _, u := range []string{"http://127.0.0.1:8080/jwks", "http://localhost/jwks", "http://[::1]/jwks"} {
		c := Config{Issuer: "i", Audience: []string{"a"}, JWKSURL: u}
		if err := c.Validate(); err != nil {
			t.Errorf("%s: %v", u, err)
		}
	}
}

func TestValidateErrors(t *testing.T) {
	ok := func() Config {
		return Config{Issuer: testIssuer, Audience: []string{testAudience}, JWKSURL: "https://idp.example/jwks"}
	}
	for _, tc := range []struct {
		name string
		edit func(*Config)
		want string
	}{
		{"nothing", func(c *Config) { *c = Config{} }, "auth: one of auth.jwks_url, auth.jwks_file, auth.hs256_secret or auth.mtls_principal is required"},
		{"issuer", func(c *Config) { c.Issuer = "" }, "auth.issuer is required"},
		{"audience", func(c *Config) { c.Audience = nil }, "auth.audience is required"},
		{"empty audience", func(c *Config) { c.Audience = []string{"a", ""} }, "auth.audience[1] is empty"},
		{"url and file", func(c *Config) { c.JWKSFile = "/x" }, "auth.jwks_url and auth.jwks_file are mutually exclusive"},
		{"hs256 with jwks", func(c *Config) { c.HS256Secret = testSecret }, "auth.hs256_secret (development only) may not be combined"},
		{"short secret", func(c *Config) { c.JWKSURL = ""; c.HS256Secret = "short" }, "auth.hs256_secret must be at least 32 bytes"},
		{"plain http", func(c *Config) { c.JWKSURL = "http://idp.example/jwks" }, "auth.jwks_url must use https"},
		{"relative url", func(c *Config) { c.JWKSURL = "/jwks" }, "auth.jwks_url is not an absolute URL"},
		{"credentials in url", func(c *Config) { c.JWKSURL = "https://u:p@idp.example/jwks" }, "auth.jwks_url must not contain credentials"},
		{"ftp", func(c *Config) { c.JWKSURL = "ftp://idp.example/jwks" }, "auth.jwks_url must use https"},
		{"leeway", func(c *Config) { c.Leeway = 6 * time.Minute }, "auth.leeway must be at most 5m0s"},
		{"negative leeway", func(c *Config) { c.Leeway = -time.Second }, "auth.leeway must not be negative"},
		{"negative refresh", func(c *Config) { c.JWKSRefresh = -time.Second }, "auth.jwks_refresh must not be negative"},
		{"negative min refresh", func(c *Config) { c.JWKSMinRefresh = -time.Second }, "auth.jwks_min_refresh must not be negative"},
		{"cache size", func(c *Config) { c.CacheSize = -1 }, "auth.cache_size must not be negative"},
		{"principal path", func(c *Config) { c.PrincipalClaim = "ext..user" }, "auth.principal_claim"},
		{"groups path", func(c *Config) { c.GroupsClaim = ".roles" }, "auth.groups_claim"},
		{"alg none", func(c *Config) { c.AllowedAlgorithms = []string{"RS256", "none"} }, "auth.allowed_algorithms[1]"},
		{"HS256 from JWKS", func(c *Config) { c.AllowedAlgorithms = []string{"HS256"} }, "auth.allowed_algorithms[0]: \"HS256\" requires auth.hs256_secret"},
		{"RS256 with secret", func(c *Config) { c.JWKSURL = ""; c.HS256Secret = testSecret; c.AllowedAlgorithms = []string{"RS256"} }, "auth.allowed_algorithms[0]"},
		{"mtls mode", func(c *Config) { c.MTLSPrincipal = "subject" }, "auth.mtls_principal must be one of"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := ok()
			tc.edit(&c)
			err := c.Validate()
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Fatalf("error %v, want prefix %q", err, tc.want)
			}
		})
	}
}

func TestEnabled(t *testing.T) {
	if (&Config{}).Enabled() {
		t.Fatal("empty section enabled")
	}
	// Issuer and audience alone are no credential source (serve -dev
	// relies on this to add its generated secret), and Validate says so.
	c := Config{Issuer: testIssuer, Audience: []string{testAudience}}
	if c.Enabled() {
		t.Fatal("a section without a key source is enabled")
	}
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "auth.jwks_url") {
		t.Fatalf("Validate: %v", err)
	}
	for i, c := range []Config{{JWKSURL: "x"}, {JWKSFile: "x"}, {HS256Secret: "x"}, {MTLSPrincipal: "x"}} {
		if !c.Enabled() {
			t.Errorf("config %d: Enabled misses a credential source", i)
		}
	}
}

// The section decodes from YAML as countersign's loader does (strictly).
func TestConfigYAML(t *testing.T) {
	src := `
issuer: https://idp.example
audience: [countersign, spark]
jwks_url: https://idp.example/jwks
jwks_refresh: 1m
jwks_min_refresh: 5s
leeway: 10s
principal_claim: ext.user
groups_claim: realm_access.roles
allowed_algorithms: [RS256]
cache_size: 100
require_exp: false
mtls_principal: san-uri
`
	var c Config
	if err := yaml.UnmarshalWithOptions([]byte(src), &c, yaml.DisallowUnknownField()); err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if c.JWKSRefresh != time.Minute || c.JWKSMinRefresh != 5*time.Second || c.Leeway != 10*time.Second ||
		c.requireExp() || c.CacheSize != 100 || c.MTLSPrincipal != MTLSSANURI || len(c.Audience) != 2 {
		t.Fatalf("%+v", c)
	}
	var d Config
	if err := yaml.Unmarshal([]byte("issuer: x\n"), &d); err != nil || !d.requireExp() {
		t.Fatal("require_exp left out must default to true")
	}
}
