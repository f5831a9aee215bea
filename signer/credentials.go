package signer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/arn"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/credentials/stscreds"
	"github.com/aws/aws-sdk-go-v2/service/sts"

	"github.com/countersign/countersign/session"
)

// Credential sources accepted in CredentialsConfig.Source.
const (
	SourceStatic     = "static"      // access key (and optional session token) from config; development
	SourceDefault    = "default"     // AWS default chain: env, profile, web identity/IRSA, ECS, IMDS
	SourceAssumeRole = "assume-role" // STS AssumeRole, with the default chain as base credentials
)

// Defaults for assume-role sessions.
const (
	DefaultRoleSessionName = "countersign"
	DefaultRoleDuration    = time.Hour

	minRoleDuration = 15 * time.Minute // STS limits for DurationSeconds
	maxRoleDuration = 12 * time.Hour
)

// credentialsExpiryWindow makes the cache refresh expiring credentials this
// long before they expire. A signature made with a session token is only
// usable while that token is valid, and a client may send (or retry) a signed
// request some seconds after it got it; signing with credentials that are about
// to expire would hand out signatures that fail at S3.
const credentialsExpiryWindow = 5 * time.Minute

// credentialsFetchTimeout bounds each HTTP call of a credential source (STS,
// the container endpoint, web identity). A caller waiting for credentials
// is bounded by its own context, but the SDK's cache runs the fetch without
// it, and its default HTTP client has no timeout: one hung STS call would
// otherwise hold the cache, so every later request would wait out its own
// deadline, for as long as the process lives.
const credentialsFetchTimeout = 10 * time.Second

// redacted replaces secret values in String and LogValue output.
const redacted = "[REDACTED]"

// CredentialsConfig selects the AWS credentials countersign signs with. The
// field names map to the configuration keys under "credentials."
// (credentials.source, credentials.access_key_id, ...), which is how errors
// name them.
//
// A CredentialsConfig holds secrets: its String, GoString and LogValue methods
// redact SecretAccessKey, SessionToken and ExternalID, so it is safe to log.
type CredentialsConfig struct {
	// Source is "static", "default" or "assume-role". Empty means "default".
	Source string `yaml:"source"`

	// Static credentials (Source "static" only).
	AccessKeyID     string `yaml:"access_key_id"`
	SecretAccessKey string `yaml:"secret_access_key"`
	SessionToken    string `yaml:"session_token"`

	// STS AssumeRole (Source "assume-role" only). RoleSessionName defaults to
	// "countersign", Duration to one hour.
	RoleARN         string        `yaml:"role_arn"`
	ExternalID      string        `yaml:"external_id"`
	RoleSessionName string        `yaml:"role_session_name"`
	Duration        time.Duration `yaml:"duration"`

	// PerPrincipal (Source "assume-role" only) assumes the role once per
	// (principal, scope) with a session policy compiled from the OPA
	// policy, and signs each principal's requests with its own session
	// (docs/design.md, "Per-principal sessions"). Duration is then each
	// session's; RoleSessionName is not used (sessions are named after
	// their principal). NewCredentials returns the base credentials, used
	// for STS; NewSessionMinter the minter.
	PerPrincipal bool `yaml:"per_principal"`

	// Region for the default chain and STS (Source "default" or
	// "assume-role"); empty means the region from the AWS environment.
	Region string `yaml:"region"`
}

// NewCredentials builds the credentials provider described by cfg. The
// result is always an *aws.CredentialsCache that refreshes expiring
// credentials credentialsExpiryWindow before they expire.
//
// NewCredentials validates the configuration but does not fetch credentials
// (that could block startup on a metadata service); call Retrieve on the
// result to check that credentials are actually available.
//
// Errors name the configuration key that is wrong and never contain secret
// values.
func NewCredentials(ctx context.Context, cfg CredentialsConfig) (aws.CredentialsProvider, error) {
	source := cfg.Source
	if source == "" {
		source = SourceDefault
	}
	if err := cfg.validate(source); err != nil {
		return nil, err
	}
	cacheOptions := func(o *aws.CredentialsCacheOptions) {
		o.ExpiryWindow = credentialsExpiryWindow
	}

	switch source {
	case SourceStatic:
		p := credentials.NewStaticCredentialsProvider(cfg.AccessKeyID, cfg.SecretAccessKey, cfg.SessionToken)
		return aws.NewCredentialsCache(p, cacheOptions), nil

	case SourceDefault:
		awsCfg, err := loadDefaultConfig(ctx, cfg.Region, cacheOptions)
		if err != nil {
			return nil, err
		}
		if awsCfg.Credentials == nil {
			return nil, errors.New("credentials: the AWS default chain found no credentials provider (credentials.source is \"default\")")
		}
		return ensureCache(awsCfg.Credentials, cacheOptions), nil

	case SourceAssumeRole:
		awsCfg, err := loadDefaultConfig(ctx, cfg.Region, cacheOptions)
		if err != nil {
			return nil, err
		}
		if awsCfg.Region == "" {
			return nil, errors.New(`credentials.region is required when credentials.source is "assume-role" and the AWS environment names no region (AWS_REGION or profile)`)
		}
		if awsCfg.Credentials == nil {
			return nil, errors.New(`credentials: the AWS default chain found no base credentials for AssumeRole (credentials.source is "assume-role")`)
		}
		if cfg.PerPrincipal {
			// The role is assumed per principal (NewSessionMinter): these
			// base credentials only call STS.
			return ensureCache(awsCfg.Credentials, cacheOptions), nil
		}
		sessionName := cfg.RoleSessionName
		if sessionName == "" {
			sessionName = DefaultRoleSessionName
		}
		duration := cfg.Duration
		if duration == 0 {
			duration = DefaultRoleDuration
		}
		client := sts.NewFromConfig(awsCfg)
		p := stscreds.NewAssumeRoleProvider(client, cfg.RoleARN, func(o *stscreds.AssumeRoleOptions) {
			// Set explicitly: the provider otherwise invents a session name
			// on first use, which neither names countersign in CloudTrail
			// nor is free of data races.
			o.RoleSessionName = sessionName
			o.Duration = duration
			if cfg.ExternalID != "" {
				o.ExternalID = aws.String(cfg.ExternalID)
			}
		})
		return aws.NewCredentialsCache(p, cacheOptions), nil
	}
	// validate rejected every other source.
	return nil, fmt.Errorf("credentials.source %q is not supported", cfg.Source)
}

// NewSessionMinter is the STS minter of credentials.per_principal: AssumeRole
// of credentials.role_arn with the AWS default chain's credentials, as for
// NewCredentials. cfg must have per_principal set.
func NewSessionMinter(ctx context.Context, cfg CredentialsConfig) (*session.STS, error) {
	if !cfg.PerPrincipal || cfg.Source != SourceAssumeRole {
		return nil, errors.New(`credentials: per-principal sessions need credentials.source "assume-role" and credentials.per_principal`)
	}
	if err := cfg.validate(SourceAssumeRole); err != nil {
		return nil, err
	}
	awsCfg, err := loadDefaultConfig(ctx, cfg.Region, func(o *aws.CredentialsCacheOptions) { o.ExpiryWindow = credentialsExpiryWindow })
	if err != nil {
		return nil, err
	}
	if awsCfg.Region == "" {
		return nil, errors.New(`credentials.region is required when credentials.source is "assume-role" and the AWS environment names no region (AWS_REGION or profile)`)
	}
	m, err := session.NewSTS(session.STSOptions{
		Client: sts.NewFromConfig(awsCfg), RoleARN: cfg.RoleARN, ExternalID: cfg.ExternalID, Duration: cfg.Duration,
	})
	if err != nil {
		return nil, fmt.Errorf("credentials: %w", err)
	}
	return m, nil
}

func loadDefaultConfig(ctx context.Context, region string, cacheOptions func(*aws.CredentialsCacheOptions)) (aws.Config, error) {
	opts := []func(*config.LoadOptions) error{
		config.WithCredentialsCacheOptions(cacheOptions),
		config.WithHTTPClient(awshttp.NewBuildableClient().WithTimeout(credentialsFetchTimeout)),
	}
	if region != "" {
		opts = append(opts, config.WithRegion(region))
	}
	awsCfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return aws.Config{}, fmt.Errorf("credentials: loading the AWS default configuration (env, shared config and credentials files): %w", err)
	}
	return awsCfg, nil
}

// ensureCache wraps p in a CredentialsCache unless it already is one (the
// default chain's provider is cached by aws-sdk-go-v2/config already).
func ensureCache(p aws.CredentialsProvider, opts func(*aws.CredentialsCacheOptions)) aws.CredentialsProvider {
	if c, ok := p.(*aws.CredentialsCache); ok {
		return c
	}
	return aws.NewCredentialsCache(p, opts)
}

// validate checks cfg for the given (defaulted) source. A key that has no
// effect for the chosen source is an error too: it is almost always a
// half-edited configuration, and silently ignoring, say, a role ARN would sign
// with broader credentials than the operator meant.
func (cfg *CredentialsConfig) validate(source string) error {
	type key struct {
		name string
		set  bool
	}
	static := []key{
		{"credentials.access_key_id", cfg.AccessKeyID != ""},
		{"credentials.secret_access_key", cfg.SecretAccessKey != ""},
		{"credentials.session_token", cfg.SessionToken != ""},
	}
	role := []key{
		{"credentials.role_arn", cfg.RoleARN != ""},
		{"credentials.external_id", cfg.ExternalID != ""},
		{"credentials.role_session_name", cfg.RoleSessionName != ""},
		{"credentials.duration", cfg.Duration != 0},
		{"credentials.per_principal", cfg.PerPrincipal},
	}
	region := key{"credentials.region", cfg.Region != ""}
	onlyFor := func(keys []key, forSource string) error {
		for _, k := range keys {
			if k.set {
				return fmt.Errorf("%s is only used when credentials.source is %q (it is %q)", k.name, forSource, source)
			}
		}
		return nil
	}

	switch source {
	case SourceStatic:
		if cfg.AccessKeyID == "" {
			return errors.New(`credentials.access_key_id is required when credentials.source is "static"`)
		}
		if cfg.SecretAccessKey == "" {
			return errors.New(`credentials.secret_access_key is required when credentials.source is "static"`)
		}
		if strings.TrimSpace(cfg.AccessKeyID) != cfg.AccessKeyID {
			return errors.New("credentials.access_key_id has leading or trailing white space")
		}
		if strings.TrimSpace(cfg.SecretAccessKey) != cfg.SecretAccessKey {
			return errors.New("credentials.secret_access_key has leading or trailing white space")
		}
		if err := onlyFor(role, SourceAssumeRole); err != nil {
			return err
		}
		if region.set {
			return fmt.Errorf(`%s is only used when credentials.source is "default" or "assume-role" (it is %q)`, region.name, source)
		}
		return nil

	case SourceDefault:
		if err := onlyFor(static, SourceStatic); err != nil {
			return err
		}
		return onlyFor(role, SourceAssumeRole)

	case SourceAssumeRole:
		if err := onlyFor(static, SourceStatic); err != nil {
			return err
		}
		if cfg.RoleARN == "" {
			return errors.New(`credentials.role_arn is required when credentials.source is "assume-role"`)
		}
		a, err := arn.Parse(cfg.RoleARN)
		if err != nil || a.Service != "iam" || !strings.HasPrefix(a.Resource, "role/") {
			return fmt.Errorf("credentials.role_arn %q is not an IAM role ARN (arn:aws:iam::ACCOUNT:role/NAME)", cfg.RoleARN)
		}
		if cfg.PerPrincipal && cfg.RoleSessionName != "" {
			return errors.New("credentials.role_session_name is not used with credentials.per_principal (each session is named after its principal); remove it")
		}
		if cfg.RoleSessionName != "" && !validSTSString(cfg.RoleSessionName, 2, 64, false) {
			return fmt.Errorf("credentials.role_session_name %q must be 2 to 64 characters from [A-Za-z0-9+=,.@_-]", cfg.RoleSessionName)
		}
		if cfg.ExternalID != "" && !validSTSString(cfg.ExternalID, 2, 1224, true) {
			// The value is not echoed: external IDs are treated as secrets.
			return errors.New("credentials.external_id must be 2 to 1224 characters from [A-Za-z0-9+=,.@:/_-]")
		}
		if cfg.Duration != 0 && (cfg.Duration < minRoleDuration || cfg.Duration > maxRoleDuration) {
			return fmt.Errorf("credentials.duration %s must be between %s and %s", cfg.Duration, minRoleDuration, maxRoleDuration)
		}
		return nil
	}
	return fmt.Errorf("credentials.source %q is not supported (use %q, %q or %q)", cfg.Source, SourceStatic, SourceDefault, SourceAssumeRole)
}

// validSTSString checks the character set STS allows for role session names
// ([\w+=,.@-]) and, with extID, external IDs (which also allow ':' and '/').
func validSTSString(s string, minLen, maxLen int, extID bool) bool {
	if len(s) < minLen || len(s) > maxLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case strings.IndexByte("_+=,.@-", c) >= 0:
		case extID && (c == ':' || c == '/'):
		default:
			return false
		}
	}
	return true
}

// redact returns "" for an unset secret and a fixed marker otherwise, so logs
// show whether a secret is configured without revealing anything about it.
func redact(s string) string {
	if s == "" {
		return ""
	}
	return redacted
}

// String describes the configuration with secrets redacted.
func (cfg CredentialsConfig) String() string {
	var b strings.Builder
	b.WriteString("CredentialsConfig{")
	sep := ""
	field := func(name, value string) {
		if value == "" {
			return
		}
		b.WriteString(sep)
		b.WriteString(name)
		b.WriteByte('=')
		b.WriteString(value)
		sep = " "
	}
	field("source", cfg.Source)
	field("access_key_id", cfg.AccessKeyID)
	field("secret_access_key", redact(cfg.SecretAccessKey))
	field("session_token", redact(cfg.SessionToken))
	field("role_arn", cfg.RoleARN)
	field("external_id", redact(cfg.ExternalID))
	field("role_session_name", cfg.RoleSessionName)
	if cfg.Duration != 0 {
		field("duration", cfg.Duration.String())
	}
	field("region", cfg.Region)
	if cfg.PerPrincipal {
		field("per_principal", "true")
	}
	b.WriteByte('}')
	return b.String()
}

// GoString makes %#v redact secrets too.
func (cfg CredentialsConfig) GoString() string { return cfg.String() }

// LogValue implements slog.LogValuer with secrets redacted. The access key id
// is logged: it identifies the key (audit records carry it) but grants nothing.
func (cfg CredentialsConfig) LogValue() slog.Value {
	attrs := make([]slog.Attr, 0, 9)
	add := func(k, v string) {
		if v != "" {
			attrs = append(attrs, slog.String(k, v))
		}
	}
	add("source", cfg.Source)
	add("access_key_id", cfg.AccessKeyID)
	add("secret_access_key", redact(cfg.SecretAccessKey))
	add("session_token", redact(cfg.SessionToken))
	add("role_arn", cfg.RoleARN)
	add("external_id", redact(cfg.ExternalID))
	add("role_session_name", cfg.RoleSessionName)
	if cfg.Duration != 0 {
		attrs = append(attrs, slog.Duration("duration", cfg.Duration))
	}
	add("region", cfg.Region)
	if cfg.PerPrincipal {
		attrs = append(attrs, slog.Bool("per_principal", true))
	}
	return slog.GroupValue(attrs...)
}
