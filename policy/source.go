package policy

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/open-policy-agent/opa/v1/keys"
)

// Defaults for SourceConfig.
const (
	DefaultReloadInterval = 5 * time.Second
	DefaultSettleInterval = time.Second
	DefaultPollInterval   = 30 * time.Second
	DefaultBundleTimeout  = 30 * time.Second
	DefaultAlgorithm      = "RS256"
)

// SourceConfig says where the policy comes from and how it is kept fresh
// (countersign's `policy:` configuration key). Exactly one of Paths,
// Bundle.URL and Bundle.File is set.
type SourceConfig struct {
	// Paths are .rego files, data files (.json/.yaml) or directories of
	// them (see Options.Paths). They are re-read every ReloadInterval and
	// recompiled when their content changed.
	Paths []string `yaml:"paths"`
	// ReloadInterval is how often Paths and Bundle.File are checked for
	// changes (0: DefaultReloadInterval).
	ReloadInterval time.Duration `yaml:"reload_interval"`
	// SettleInterval is how long changed Paths or Bundle.File must stay
	// unchanged before they are loaded (0: DefaultSettleInterval): a
	// change is read, read again SettleInterval later, and loaded only
	// when both reads agree, so a file caught while it is being written is
	// not loaded half-way. It applies at startup too. It must exceed the
	// longest pause of whatever writes the files; renaming a complete file
	// into place, or a bundle, needs no settling at all.
	SettleInterval time.Duration `yaml:"settle_interval"`
	// Bundle is an OPA bundle (.tar.gz) from an HTTP bundle server or a
	// local file, optionally signature-verified.
	Bundle BundleConfig `yaml:"bundle"`
	// FastPath tunes the per-scope cache of partially evaluated policies
	// (see the package documentation); it is on by default.
	FastPath FastPathOptions `yaml:"fast_path"`
}

// BundleConfig is an OPA bundle source.
type BundleConfig struct {
	// URL of the bundle on an HTTP(S) bundle server (an nginx, an object
	// store URL, OPA's bundle service protocol). Polled every PollInterval
	// with If-None-Match when the server sent an ETag.
	URL string `yaml:"url"`
	// PollInterval is how often URL is polled (0: DefaultPollInterval).
	PollInterval time.Duration `yaml:"poll_interval"`
	// Timeout bounds one download of URL (0: DefaultBundleTimeout).
	Timeout time.Duration `yaml:"timeout"`
	// File is a local bundle .tar.gz, re-read every ReloadInterval.
	File string `yaml:"file"`
	// Verification, when set, requires the bundle to be signed (.signatures.json,
	// as written by `opa build --signing-key`) with this key. Without it,
	// an unsigned bundle is accepted and a signed one is refused.
	Verification *BundleVerification `yaml:"verification"`
}

// BundleVerification is the key a signed bundle must verify with.
type BundleVerification struct {
	// PublicKeyFile holds the PEM public key (or certificate); for HS256 and
	// friends, the shared secret.
	PublicKeyFile string `yaml:"public_key_file"`
	// KeyID names the key (default "default"). There is one key, so the
	// signature's "kid" header is not consulted: it must verify with it.
	KeyID string `yaml:"key_id"`
	// Algorithm is the signature algorithm (default RS256; RS/PS/ES 256-512,
	// HS256-512).
	Algorithm string `yaml:"algorithm"`
	// Scope, when set, must equal the signature's scope claim.
	Scope string `yaml:"scope"`
}

// Validate checks the configuration without touching files or the
// network. Errors name the offending key under `policy:`.
func (c *SourceConfig) Validate() error {
	set := 0
	if len(c.Paths) > 0 {
		set++
	}
	if c.Bundle.URL != "" {
		set++
	}
	if c.Bundle.File != "" {
		set++
	}
	if set != 1 {
		return errors.New("policy: set exactly one of paths, bundle.url, bundle.file")
	}
	for i, p := range c.Paths {
		if strings.TrimSpace(p) == "" {
			return fmt.Errorf("policy: paths[%d] is empty", i)
		}
	}
	if c.ReloadInterval < 0 {
		return fmt.Errorf("policy: reload_interval must not be negative (got %s)", c.ReloadInterval)
	}
	if c.SettleInterval < 0 {
		return fmt.Errorf("policy: settle_interval must not be negative (got %s)", c.SettleInterval)
	}
	b := &c.Bundle
	if b.URL != "" && c.SettleInterval != 0 {
		return errors.New("policy: settle_interval applies only to paths and bundle.file (a bundle.url download is complete or refused)")
	}
	if b.PollInterval < 0 {
		return fmt.Errorf("policy: bundle.poll_interval must not be negative (got %s)", b.PollInterval)
	}
	if b.Timeout < 0 {
		return fmt.Errorf("policy: bundle.timeout must not be negative (got %s)", b.Timeout)
	}
	if b.URL == "" && (b.PollInterval != 0 || b.Timeout != 0) {
		return errors.New("policy: bundle.poll_interval and bundle.timeout apply only to bundle.url")
	}
	if b.URL != "" {
		u, err := url.Parse(b.URL)
		switch {
		case err != nil:
			return fmt.Errorf("policy: bundle.url: %v", err)
		case u.Scheme != "http" && u.Scheme != "https":
			return fmt.Errorf("policy: bundle.url must be an http:// or https:// URL (got scheme %q)", u.Scheme)
		case u.Host == "":
			return errors.New("policy: bundle.url has no host")
		case u.User != nil:
			return errors.New("policy: bundle.url must not carry credentials (user:password@)")
		}
	}
	if v := b.Verification; v != nil {
		if b.URL == "" && b.File == "" {
			return errors.New("policy: bundle.verification applies only to bundle.url or bundle.file")
		}
		if v.PublicKeyFile == "" {
			return errors.New("policy: bundle.verification.public_key_file is required when bundle.verification is set")
		}
		if v.Algorithm != "" && !keys.IsSupportedAlgorithm(v.Algorithm) {
			return fmt.Errorf("policy: bundle.verification.algorithm %q is not supported (RS256, RS384, RS512, PS256, PS384, PS512, ES256, ES384, ES512, HS256, HS384, HS512)", v.Algorithm)
		}
	}
	return nil
}

// describe names the source for logs and Status.
func (c *SourceConfig) describe() string {
	switch {
	case c.Bundle.URL != "":
		return "bundle " + redactURL(c.Bundle.URL)
	case c.Bundle.File != "":
		return "bundle " + c.Bundle.File
	}
	return "paths " + strings.Join(c.Paths, ",")
}

// redactURL drops the query (a presigned object-store URL carries a
// credential there) and any user info from u, for logs and errors.
func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "(invalid URL)"
	}
	u.User = nil
	if u.RawQuery != "" {
		u.RawQuery = "REDACTED"
	}
	u.Fragment = ""
	return u.String()
}

// Configured reports whether any policy source is set.
func (c *SourceConfig) Configured() bool {
	return len(c.Paths) > 0 || c.Bundle.URL != "" || c.Bundle.File != ""
}
