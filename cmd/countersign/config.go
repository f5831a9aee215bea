package main

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/goccy/go-yaml"

	"github.com/countersign/countersign/audit"
	"github.com/countersign/countersign/audit/upload"
	"github.com/countersign/countersign/auth"
	"github.com/countersign/countersign/catalog"
	"github.com/countersign/countersign/policy"
	"github.com/countersign/countersign/s3req"
	"github.com/countersign/countersign/server"
	"github.com/countersign/countersign/signer"
)

// Config is countersign's whole configuration: one YAML file, every key
// documented in deploy/countersign.example.yaml. Secrets may come from the
// environment instead (env.go).
type Config struct {
	// Listen is the sign API's address, host:port.
	Listen string `yaml:"listen"`
	// AdminListen, when set, serves /metrics, /healthz, /readyz and
	// /debug/pprof/ on this separate address (and /metrics only there).
	AdminListen string `yaml:"admin_listen"`
	// BasePaths serve the sign routes under extra prefixes as well as "/".
	BasePaths []string `yaml:"base_paths"`
	// CacheableReads answers reads with Cache-Control: private (see README:
	// re-reads within 30 s then bypass policy and audit).
	CacheableReads bool `yaml:"cacheable_reads"`

	TLS         TLSConfig                `yaml:"tls"`
	Auth        auth.Config              `yaml:"auth"`
	Endpoints   []s3req.Endpoint         `yaml:"endpoints"`
	Credentials signer.CredentialsConfig `yaml:"credentials"`
	Policy      policy.SourceConfig      `yaml:"policy"`
	Audit       AuditConfig              `yaml:"audit"`
	Keys        KeysConfig               `yaml:"keys"`
	Limits      LimitsConfig             `yaml:"limits"`
	Runtime     RuntimeConfig            `yaml:"runtime"`
	// Catalog fronts an Iceberg REST catalog (catalog.upstream): see
	// README, "Catalog front".
	Catalog catalog.Config `yaml:"catalog"`
	Vending VendingConfig  `yaml:"vending"`
}

// AuditConfig is the audit log (audit.Config, inline) plus the upload of
// sealed segments to S3, which lives in its own package.
type AuditConfig struct {
	audit.Config `yaml:",inline"`
	Upload       upload.Config `yaml:"upload"`
	// HMACKey is the token HMAC key from COUNTERSIGN_AUDIT_HMAC_KEY
	// (applyEnv); it overrides audit.hmac_key_file. Never in the file.
	HMACKey string `yaml:"-"`
}

// hmacKey is the audit.Options.HMACKey of the configuration: nil unless
// the environment set one, so that audit.hmac_key_file is read.
func (c *AuditConfig) hmacKey() []byte {
	if c.HMACKey == "" {
		return nil
	}
	return []byte(c.HMACKey)
}

// KeysConfig holds the object-key rules.
type KeysConfig struct {
	// AllowUnsafe permits keys with empty, "." or ".." segments or a '\'.
	AllowUnsafe bool `yaml:"allow_unsafe"`
}

// LimitsConfig bounds what one request may cost.
type LimitsConfig struct {
	MaxBodyBytes   int `yaml:"max_body_bytes"`
	MaxDeleteKeys  int `yaml:"max_delete_keys"`
	MaxHeaders     int `yaml:"max_headers"`
	MaxConcurrency int `yaml:"max_concurrency"`
	// MaxConnections and MaxConnectionsPerSource cap open connections;
	// PreAuthIdleTimeout is the idle timeout of a connection that never
	// carried an authenticated request.
	MaxConnections          int           `yaml:"max_connections"`
	MaxConnectionsPerSource int           `yaml:"max_connections_per_source"`
	PreAuthIdleTimeout      time.Duration `yaml:"preauth_idle_timeout"`
	ReadTimeout             time.Duration `yaml:"read_timeout"`
	WriteTimeout            time.Duration `yaml:"write_timeout"`
	IdleTimeout             time.Duration `yaml:"idle_timeout"`
	ShutdownGracePeriod     time.Duration `yaml:"shutdown_grace_period"`
	// RequestTimeout bounds one sign request's stages (waiting for keys,
	// policy, credentials; default server.DefaultRequestTimeout): 503 +
	// Retry-After beyond it.
	RequestTimeout time.Duration `yaml:"request_timeout"`
	// LingerTimeout and LingerBytes bound the draining of a request that
	// was answered before it was read whole (413, 431).
	LingerTimeout time.Duration `yaml:"linger_timeout"`
	LingerBytes   int64         `yaml:"linger_bytes"`
	// RateLimit bounds sign requests per principal (429 + Retry-After).
	RateLimit server.RateLimit `yaml:"rate_limit"`
	// RefusalLimit bounds recorded refusals per source address before
	// authentication (429 + Retry-After, then one summary record).
	RefusalLimit server.RefusalLimit `yaml:"refusal_limit"`
}

// serverConfig is the HTTP listener's part of the limits.
func (l LimitsConfig) serverConfig(tlsConfig *tls.Config) server.Config {
	return server.Config{
		MaxBodyBytes:   l.MaxBodyBytes,
		ReadTimeout:    l.ReadTimeout,
		WriteTimeout:   l.WriteTimeout,
		IdleTimeout:    l.IdleTimeout,
		MaxConcurrency: l.MaxConcurrency,
		MaxConnections: l.MaxConnections, MaxConnectionsPerSource: l.MaxConnectionsPerSource,
		PreAuthIdleTimeout: l.PreAuthIdleTimeout,
		LingerTimeout:      l.LingerTimeout,
		LingerBytes:        l.LingerBytes,
		TLS:                tlsConfig,
	}
}

// validate refuses negative limits (0 means the default).
func (l LimitsConfig) validate() error {
	for _, f := range []struct {
		name string
		v    int64
	}{
		{"max_body_bytes", int64(l.MaxBodyBytes)}, {"max_delete_keys", int64(l.MaxDeleteKeys)},
		{"max_headers", int64(l.MaxHeaders)}, {"max_concurrency", int64(l.MaxConcurrency)},
		{"read_timeout", int64(l.ReadTimeout)}, {"write_timeout", int64(l.WriteTimeout)},
		{"idle_timeout", int64(l.IdleTimeout)}, {"shutdown_grace_period", int64(l.ShutdownGracePeriod)},
		{"linger_timeout", int64(l.LingerTimeout)}, {"linger_bytes", l.LingerBytes},
		{"max_connections", int64(l.MaxConnections)}, {"max_connections_per_source", int64(l.MaxConnectionsPerSource)},
		{"preauth_idle_timeout", int64(l.PreAuthIdleTimeout)}, {"request_timeout", int64(l.RequestTimeout)},
		{"refusal_limit.burst", int64(l.RefusalLimit.Burst)}, {"refusal_limit.sources", int64(l.RefusalLimit.Sources)},
		{"refusal_limit.summary_interval", int64(l.RefusalLimit.SummaryInterval)},
		{"rate_limit.burst", int64(l.RateLimit.Burst)}, {"rate_limit.principals", int64(l.RateLimit.Principals)},
	} {
		if f.v < 0 {
			return fmt.Errorf("config: limits.%s must not be negative (0 means the default)", f.name)
		}
	}
	if l.RefusalLimit.PerSecond < 0 || l.RateLimit.PerSecond < 0 {
		return fmt.Errorf("config: limits.refusal_limit.per_second and limits.rate_limit.per_second must not be negative")
	}
	if l.MaxConnections > 0 && l.MaxConnectionsPerSource > l.MaxConnections {
		return fmt.Errorf("config: limits.max_connections_per_source (%d) is above limits.max_connections (%d)", l.MaxConnectionsPerSource, l.MaxConnections)
	}
	if l.PreAuthIdleTimeout > 0 && l.IdleTimeout > 0 && l.PreAuthIdleTimeout > l.IdleTimeout {
		return fmt.Errorf("config: limits.preauth_idle_timeout (%s) is above limits.idle_timeout (%s): it is meant to be the shorter", l.PreAuthIdleTimeout, l.IdleTimeout)
	}
	// Shutdown waits for in-flight requests up to its grace period: a
	// request allowed to run longer could be cut by the exit instead of
	// answered.
	if timeout, grace := cmp.Or(l.RequestTimeout, server.DefaultRequestTimeout), l.shutdownGrace(); timeout >= grace {
		return fmt.Errorf("config: limits.request_timeout (%s) must be below limits.shutdown_grace_period (%s), so that shutdown answers the requests in flight", timeout, grace)
	}
	return nil
}

// defaultShutdownGrace is limits.shutdown_grace_period's default.
const defaultShutdownGrace = 30 * time.Second

// shutdownGrace is how long shutdown waits for requests in flight.
func (l LimitsConfig) shutdownGrace() time.Duration {
	return cmp.Or(l.ShutdownGracePeriod, defaultShutdownGrace)
}

// loadConfig reads a YAML file strictly (unknown keys are errors) on top of
// base, then applies the environment overrides (applyEnv). With path ""
// there is no file: base and the environment only (serve -dev).
func loadConfig(path string, base Config) (Config, error) {
	cfg := base
	if path == "" {
		applyEnv(&cfg)
		return cfg, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return cfg, fmt.Errorf("config: %w", err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data), yaml.DisallowUnknownField())
	if err := dec.Decode(&cfg); err != nil {
		if errors.Is(err, io.EOF) {
			return cfg, fmt.Errorf("config %s is empty: it holds no settings", path)
		}
		// go-yaml reports a malformed duration string ("10 seconds") as
		// time.ParseDuration's bare error, without key or line, and a
		// number without unit by Go struct: find the key and line.
		if msg := err.Error(); strings.Contains(msg, "time: ") || strings.Contains(msg, "time.Duration") {
			if derr := locateDurationError(data); derr != nil {
				return cfg, fmt.Errorf("config %s: %w", path, derr)
			}
		}
		return cfg, fmt.Errorf("config %s: %s", path, yaml.FormatError(err, false, true))
	}
	// A second document would be ignored: say so rather than run without it.
	var more yaml.MapSlice
	if err := dec.Decode(&more); !errors.Is(err, io.EOF) && (err != nil || len(more) > 0) {
		return cfg, fmt.Errorf("config %s holds more than one YAML document (a \"---\" line); countersign reads one", path)
	}
	applyEnv(&cfg)
	return cfg, nil
}

// validate checks what the packages do not check themselves, naming keys.
func (c *Config) validate(dev bool) error {
	if err := c.Runtime.validate(); err != nil {
		return err
	}
	if err := c.Limits.validate(); err != nil {
		return err
	}
	if err := c.Vending.validate(); err != nil {
		return err
	}
	if c.Listen == "" {
		return fmt.Errorf("config: listen is required (e.g. 127.0.0.1:8181)")
	}
	if len(c.Endpoints) == 0 {
		return fmt.Errorf("config: endpoints must list at least one S3 endpoint")
	}
	if err := c.Catalog.Validate(); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	// There is no anonymous mode: an empty auth section is an error that
	// names what to set.
	if err := c.Auth.Validate(); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	if !dev {
		if err := c.Audit.Validate(); err != nil {
			return fmt.Errorf("config: %w", err)
		}
		if err := c.Audit.Upload.Validate(); err != nil {
			return fmt.Errorf("config: %w", err)
		}
	}
	if !(dev && !c.Policy.Configured()) {
		if !c.Policy.Configured() {
			return fmt.Errorf("config: policy.paths or policy.bundle is required: countersign never signs without a policy")
		}
		if err := c.Policy.Validate(); err != nil {
			return fmt.Errorf("config: %w", err)
		}
	}
	return nil
}

// digest identifies the effective configuration for the audit log's
// "config" record without recording it: secrets are cleared first.
func (c Config) digest() string {
	c.Credentials.SecretAccessKey, c.Credentials.SessionToken = "", ""
	c.Auth.HS256Secret = ""
	c.Audit.Upload.SecretAccessKey, c.Audit.HMACKey = "", ""
	data, err := yaml.Marshal(c)
	if err != nil {
		return "unavailable: " + err.Error()
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}
