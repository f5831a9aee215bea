package signer

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/countersign/countersign/internal/policyinput"
	"github.com/countersign/countersign/s3req"
	"github.com/countersign/countersign/session"
)

// Sessions gives the per-principal session a request is signed with
// (implemented by *session.Cache; docs/design.md, "Per-principal
// sessions"). Errors mean nothing may be signed.
type Sessions interface {
	Get(ctx context.Context, k session.Key, p *policyinput.Principal, t *policyinput.Table) (session.Credentials, error)
}

// Caller is whom a request is signed for: the authenticated principal and
// the SHA-256 of its bearer token (zero for mutual TLS). It is passed by
// value, so the hot path does not allocate it.
type Caller struct {
	TokenHash [32]byte
	Principal *policyinput.Principal
	// Table is the per-table route's table (nil on the legacy route) and
	// TablePath its raw path, which keys the session with it.
	Table     *policyinput.Table
	TablePath string
}

// credentials are the credentials to sign r for c with: the caller's
// session with Options.Sessions, else the provider's.
func (s *Signer) credentials(ctx context.Context, r *s3req.Request, c *Caller) (aws.Credentials, sessionNames, error) {
	if s.sessions == nil {
		creds, err := s.creds.Retrieve(ctx)
		return creds, sessionNames{}, err
	}
	if c.Principal == nil {
		return aws.Credentials{}, sessionNames{}, fmt.Errorf("per-principal sessions are on, and the request has no authenticated caller to sign for")
	}
	k := session.Key{Token: c.TokenHash}
	if c.Table != nil {
		k.TablePath, k.TableLocation = c.TablePath, c.Table.Location
	}
	if k.Token == ([32]byte{}) {
		k.Token = session.PrincipalKey(c.Principal)
	}
	for i := range r.Targets {
		t := &r.Targets[i]
		if !k.Add(session.Need{Action: t.Action, Access: string(t.Access), Bucket: t.Bucket}) {
			return aws.Credentials{}, sessionNames{}, fmt.Errorf("the request needs more than %d distinct (action, bucket) pairs, which no per-principal session covers", session.MaxNeeds)
		}
	}
	sc, err := s.sessions.Get(ctx, k, c.Principal, c.Table)
	if err != nil {
		return aws.Credentials{}, sessionNames{}, err
	}
	return aws.Credentials{
		AccessKeyID: sc.AccessKeyID, SecretAccessKey: sc.SecretAccessKey, SessionToken: sc.SessionToken,
		CanExpire: true, Expires: sc.Expires, Source: "countersign per-principal session",
	}, sessionNames{sc.SourceIdentity, sc.SessionName}, nil
}

// sessionNames name the session a request was signed with (zero: none).
type sessionNames struct{ sourceIdentity, sessionName string }
