package catalog

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"
)

// Config is the catalog section of countersign's configuration
// (catalog.*). The front is on when Upstream is set.
type Config struct {
	// Upstream is the base URI of the Iceberg REST catalog countersign
	// fronts (the URI an engine would be given without countersign), e.g.
	// https://polaris.internal/api/catalog. A request to
	// <countersign>/<base path>/v1/... is forwarded to <Upstream>/v1/....
	Upstream string `yaml:"upstream"`
	// PublicURL is countersign's own base URI as engines reach it (the
	// catalog uri they are given), written into table answers as the
	// signer URI. Default: the scheme and local address of the listener
	// the request arrived on, plus the configured base path it came in on;
	// never the caller's Host header, which the caller writes. Set it
	// whenever engines reach countersign by another name.
	PublicURL string `yaml:"public_url"`
	// TLS configures the connection to an https upstream.
	TLS UpstreamTLS `yaml:"tls"`
	// ConnectTimeout bounds connecting to the upstream (default 5s): past
	// it, or when the connection is refused, the answer is 502.
	ConnectTimeout time.Duration `yaml:"connect_timeout"`
	// ResponseTimeout bounds the wait for the upstream's response headers
	// (default 30s): past it the answer is 504.
	ResponseTimeout time.Duration `yaml:"response_timeout"`
	// Timeout bounds one whole forwarded exchange, body included
	// (default 2m).
	Timeout time.Duration `yaml:"timeout"`
	// MaxRequestBytes caps a forwarded request body (default 16 MiB; 413
	// beyond it). Bodies stream to the catalog; the ones the front reads
	// are held under a budget of four this size (body.go).
	MaxRequestBytes int `yaml:"max_request_bytes"`
	// MaxResponseBytes caps an upstream answer the front reads to rewrite
	// or inspect (every answer but those whose schema cannot carry a
	// credential; default 64 MiB; 502 beyond it). Other answers are
	// streamed and not capped.
	MaxResponseBytes int64 `yaml:"max_response_bytes"`
	// AnswerBudgetBytes caps the bytes of all answers being read at once
	// (default 128 MiB, at least max_response_bytes + 64 KiB): an answer
	// that finds it spent is answered 503 with Retry-After.
	AnswerBudgetBytes int64 `yaml:"answer_budget_bytes"`
	// MaxConcurrency caps forwarded requests at once (default 256; 503
	// with Retry-After beyond it), apart from the sign requests' own cap.
	MaxConcurrency int `yaml:"max_concurrency"`
	// LocationTTL is how long a table location learned from the catalog
	// is used before it is fetched again (default 5m).
	LocationTTL time.Duration `yaml:"location_ttl"`
	// LocationStaleGrace is how long past LocationTTL a location is still
	// used while the catalog cannot be reached (default 15m; a catalog
	// that answers and refuses ends it at once). 0 keeps the default; a
	// negative value turns the grace off.
	LocationStaleGrace time.Duration `yaml:"location_stale_grace"`
	// NamespaceSeparator is the separator of namespace levels in the
	// catalog's paths, percent-encoded as in its /v1/config
	// ("namespace-separator", e.g. "%1F"). Set, it is used as given.
	// Unset, it is read once at start from the catalog's /v1/config, asked
	// by countersign itself ("%1F" when that fails). A client's own
	// /v1/config answer never changes it: it is the catalog's answer to
	// parameters the client chose, and the separator decides how every
	// caller's paths split into namespace levels. An answer naming another
	// separator is refused (502), naming this key.
	NamespaceSeparator string `yaml:"namespace_separator"`
	// LocationCacheSize bounds the remembered (caller, table) locations
	// (default 10000).
	LocationCacheSize int `yaml:"location_cache_size"`
}

// DefaultMaxRequestBytes is MaxRequestBytes's default.
const DefaultMaxRequestBytes = 16 << 20

// UpstreamTLS is the client side of TLS to the upstream catalog.
type UpstreamTLS struct {
	// CAFile is a PEM bundle of the CAs that verify the upstream (default:
	// the system roots).
	CAFile string `yaml:"ca_file"`
	// CertFile and KeyFile are a client certificate for upstreams that
	// require mutual TLS.
	CertFile string `yaml:"cert_file"`
	KeyFile  string `yaml:"key_file"`
	// ServerName overrides the name verified in the upstream's certificate.
	ServerName string `yaml:"server_name"`
}

// Enabled reports whether the front is configured.
func (c *Config) Enabled() bool { return c.Upstream != "" }

func (c *Config) setDefaults() {
	if c.ConnectTimeout <= 0 {
		c.ConnectTimeout = 5 * time.Second
	}
	if c.ResponseTimeout <= 0 {
		c.ResponseTimeout = 30 * time.Second
	}
	if c.Timeout <= 0 {
		c.Timeout = 2 * time.Minute
	}
	if c.MaxRequestBytes <= 0 {
		c.MaxRequestBytes = DefaultMaxRequestBytes
	}
	if c.MaxResponseBytes <= 0 {
		c.MaxResponseBytes = 64 << 20
	}
	if c.AnswerBudgetBytes <= 0 {
		c.AnswerBudgetBytes = max(128<<20, c.MaxResponseBytes+answerChunk)
	}
	if c.MaxConcurrency <= 0 {
		c.MaxConcurrency = 256
	}
	if c.LocationTTL <= 0 {
		c.LocationTTL = 5 * time.Minute
	}
	switch {
	case c.LocationStaleGrace == 0:
		c.LocationStaleGrace = 15 * time.Minute
	case c.LocationStaleGrace < 0:
		c.LocationStaleGrace = 0
	}
	if c.LocationCacheSize <= 0 {
		c.LocationCacheSize = 10000
	}
}

// Validate checks the configuration, naming the key to fix.
func (c *Config) Validate() error {
	if !c.Enabled() {
		return nil
	}
	if _, err := parseBase("catalog.upstream", c.Upstream); err != nil {
		return err
	}
	if c.PublicURL != "" {
		if _, err := parseBase("catalog.public_url", c.PublicURL); err != nil {
			return err
		}
	}
	if c.NamespaceSeparator != "" {
		if d, err := url.PathUnescape(c.NamespaceSeparator); err != nil || d == "" {
			return fmt.Errorf("catalog.namespace_separator: %q is not a percent-encoded separator such as %%1F", c.NamespaceSeparator)
		}
	}
	if (c.TLS.CertFile == "") != (c.TLS.KeyFile == "") {
		return errors.New("catalog.tls: cert_file and key_file go together")
	}
	maxAnswer := c.MaxResponseBytes
	if maxAnswer <= 0 {
		maxAnswer = 64 << 20
	}
	if c.AnswerBudgetBytes > 0 && c.AnswerBudgetBytes < maxAnswer+answerChunk {
		return fmt.Errorf("catalog.answer_budget_bytes (%d) is smaller than catalog.max_response_bytes plus 64 KiB: the largest answer would never fit", c.AnswerBudgetBytes)
	}
	if c.Timeout > 0 && c.ResponseTimeout > c.Timeout {
		return fmt.Errorf("catalog.response_timeout (%s) is longer than catalog.timeout (%s)", c.ResponseTimeout, c.Timeout)
	}
	return nil
}

// parseBase parses an absolute http(s) base URI without query or
// fragment, and drops a trailing slash.
func parseBase(key, s string) (*url.URL, error) {
	u, err := url.Parse(s)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", key, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return nil, fmt.Errorf("%s: %q is not an absolute http:// or https:// URI", key, s)
	}
	if u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return nil, fmt.Errorf("%s: %q may not have a query, fragment or user info", key, s)
	}
	u.Path = strings.TrimRight(u.Path, "/")
	u.RawPath = strings.TrimRight(u.RawPath, "/")
	return u, nil
}

// tlsConfig builds the client TLS configuration for the upstream.
func (t UpstreamTLS) tlsConfig() (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: t.ServerName}
	if t.CAFile != "" {
		pem, err := os.ReadFile(t.CAFile)
		if err != nil {
			return nil, fmt.Errorf("catalog.tls.ca_file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("catalog.tls.ca_file %s: no PEM certificate in it", t.CAFile)
		}
		cfg.RootCAs = pool
	}
	if t.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("catalog.tls: client certificate: %w", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}
