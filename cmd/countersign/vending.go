package main

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/sts"

	"github.com/countersign/countersign/audit"
	"github.com/countersign/countersign/policy"
	"github.com/countersign/countersign/server"
	"github.com/countersign/countersign/session"
	"github.com/countersign/countersign/sessionpolicy"
	"github.com/countersign/countersign/vend"
)

// VendingConfig is credential vending (README, "Credential vending"): the
// Iceberg REST credentials route and Unity Catalog's temporary path
// credentials, minted with STS AssumeRole of RoleARN under a session
// policy compiled from the OPA policy.
type VendingConfig struct {
	// Enabled serves the credential routes; off, they do not exist.
	Enabled bool `yaml:"enabled"`
	// MaxDuration, MinDuration, Region and Endpoint: see vend.Config.
	vend.Config `yaml:",inline"`
	// RoleARN is the role vended sessions assume, with countersign's
	// credentials (the credentials section) as the caller. Its own
	// permissions bound every vended credential; the session policy
	// narrows them to the prefix.
	RoleARN    string `yaml:"role_arn"`
	ExternalID string `yaml:"external_id"`
	// STSEndpoint is the STS URL (default: AWS's regional endpoint).
	STSEndpoint string `yaml:"sts_endpoint"`
	// NoSourceIdentity and NoTags leave SourceIdentity and session tags out
	// of AssumeRole, for an STS or role trust policy that refuses them.
	NoSourceIdentity bool `yaml:"no_source_identity"`
	NoTags           bool `yaml:"no_tags"`
}

// validate names the vending key that is wrong.
func (v *VendingConfig) validate() error {
	if !v.Enabled {
		return nil
	}
	if v.RoleARN == "" {
		return fmt.Errorf("config: vending.role_arn is required with vending.enabled (the role vended sessions assume)")
	}
	if err := v.Config.Validate(); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	return nil
}

// stsCallTimeout bounds one AssumeRole call.
const stsCallTimeout = 10 * time.Second

// buildVending wires the mint: the policy manager decides and compiles
// scopes and knows table locations, sessionpolicy writes the session
// policy, STS AssumeRole (with countersign's credentials) mints, the audit
// log records.
func buildVending(cfg Config, creds aws.CredentialsProvider, pm *policy.Manager, log *audit.Log, logger *slog.Logger) (*vend.Service, error) {
	v := cfg.Vending
	region := v.Region
	if region == "" {
		region = cfg.Credentials.Region
	}
	if region == "" {
		region = "us-east-1"
	}
	o := sts.Options{
		Region:      region,
		Credentials: creds,
		HTTPClient:  awshttp.NewBuildableClient().WithTimeout(stsCallTimeout),
	}
	if v.STSEndpoint != "" {
		o.BaseEndpoint = aws.String(v.STSEndpoint)
	}
	minter, err := session.NewSTS(session.STSOptions{
		Client: sts.New(o), RoleARN: v.RoleARN, ExternalID: v.ExternalID,
		NoSourceIdentity: v.NoSourceIdentity, NoTags: v.NoTags,
	})
	if err != nil {
		return nil, fmt.Errorf("config vending: %w", err)
	}
	svc, err := vend.New(vend.Stages{
		Tables: pm, Authorizer: pm, Scoper: scoper{pm}, SessionPolicies: sessionPolicies{},
		Minter: minter, Audit: log,
	}, vend.Options{Config: v.Config, Logger: logger})
	if err != nil {
		return nil, fmt.Errorf("config vending: %w", err)
	}
	return svc, nil
}

// vendServerConfig is what the server tells Iceberg clients beside the
// credentials.
func (v *VendingConfig) serverConfig() server.VendConfig {
	return server.VendConfig{Region: v.Region, Endpoint: v.Endpoint}
}

// scoper adapts policy.Manager.Scope to vend.Scoper, in exact mode (only
// actions the policy allows exactly are vended).
type scoper struct{ m *policy.Manager }

func (s scoper) Scope(ctx context.Context, q vend.ScopeQuery) (vend.Scope, error) {
	ps, err := s.m.Scope(ctx, policy.ScopeQuery{Principal: q.Principal, Access: q.Access, Bucket: q.Bucket, Prefix: q.Prefix, Table: q.Table, Exact: true})
	if err != nil {
		return vend.Scope{}, err
	}
	out := vend.Scope{Exact: ps.Exact, Why: ps.Why, Revision: ps.Revision}
	for _, x := range ps.Inexact {
		if out.Inexact == nil {
			out.Inexact = map[string]string{}
		}
		out.Inexact[x.Action] = x.Why
	}
	for _, g := range ps.Grants {
		out.Grants = append(out.Grants, vend.Grant{Bucket: g.Bucket, Prefix: g.Prefix, Actions: g.Actions})
	}
	return out, nil
}

// sessionPolicies adapts sessionpolicy.Compile to vend.SessionPolicies,
// within STS's plain-text limit.
type sessionPolicies struct{}

func (sessionPolicies) SessionPolicy(s vend.Scope) (string, error) {
	ps := policy.Scope{Exact: s.Exact, Why: s.Why, Revision: s.Revision}
	for _, g := range s.Grants {
		ps.Grants = append(ps.Grants, policy.ScopeGrant{Bucket: g.Bucket, Prefix: g.Prefix, Actions: g.Actions})
	}
	doc, err := sessionpolicy.Compile(ps, sessionpolicy.Options{MaxBytes: session.MaxPolicyBytes, Exact: true})
	if err != nil {
		return "", err
	}
	return doc.JSON(), nil
}
