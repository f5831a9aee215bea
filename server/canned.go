package server

import (
	"context"
	"crypto/x509"
	"errors"

	"github.com/countersign/countersign/audit"
	"github.com/countersign/countersign/auth"
	"github.com/countersign/countersign/internal/policyinput"
	"github.com/countersign/countersign/remotesign"
	"github.com/countersign/countersign/s3req"
	"github.com/countersign/countersign/signer"
)

// BENCHMARK ONLY. The canned-response stages measure countersign's floor:
// the same fasthttp server, routing, JSON decoding, classification, handler
// and JSON encoding as the real pipeline, with authentication, policy,
// audit and signing replaced by constant answers. A server built with them
// authenticates nobody, decides nothing, records nothing and returns a fake
// signature that no S3 service accepts. cmd/countersign builds it only
// behind serve's -bench-canned-responses-i-know-this-signs-nothing flag,
// and its readiness check keeps it out of any load balancer.

// CannedAuthorization is the Authorization header canned responses carry:
// the shape and length of a real SigV4 header, and visibly fake.
const CannedAuthorization = "AWS4-HMAC-SHA256 Credential=COUNTERSIGN-CANNED/20260101/us-east-1/s3/aws4_request, " +
	"SignedHeaders=host;x-amz-content-sha256;x-amz-date, " +
	"Signature=0000000000000000000000000000000000000000000000000000000000000000"

// cannedAmzDate is the X-Amz-Date of canned responses.
const cannedAmzDate = "20260101T000000Z"

// ErrCannedMode is the readiness error of a canned-response server.
var ErrCannedMode = errors.New("benchmark canned-response mode: nothing is authenticated, authorized, audited or signed; never route traffic here")

// CannedStages returns the benchmark-only canned pipeline around a real
// classifier. See the comment above: it signs nothing.
func CannedStages(classifier Classifier) Stages {
	return Stages{
		Authenticator: cannedAuthenticator{},
		Classifier:    classifier,
		Authorizer:    cannedAuthorizer{},
		Signer:        cannedSigner{},
		Audit:         cannedAudit{},
	}
}

// CannedReadiness is the readiness check of a canned-response server: it
// always fails, naming the mode, so /readyz reports it and nothing routes
// real traffic to such a node.
func CannedReadiness() ReadinessCheck {
	return func() error { return ErrCannedMode }
}

var cannedIdentity = &auth.Identity{
	Principal: policyinput.Principal{ID: "bench-canned", Issuer: "countersign-bench-canned", Groups: []string{}, Claims: map[string]any{}},
	Method:    auth.MethodBearer,
}

type cannedAuthenticator struct{}

func (cannedAuthenticator) Authenticate(context.Context, []byte, []*x509.Certificate) (*auth.Identity, error) {
	return cannedIdentity, nil
}

type cannedAuthorizer struct{}

func (cannedAuthorizer) Authorize(context.Context, *policyinput.Input) (policyinput.Decision, error) {
	return policyinput.Decision{Allow: true, Revision: "bench-canned"}, nil
}

type cannedAudit struct{}

func (cannedAudit) Append(context.Context, ...*audit.Record) error { return nil }

type cannedSigner struct{}

// SignInto echoes the client's headers and adds what the real signer adds, with
// constant values.
func (cannedSigner) SignInto(_ context.Context, r *s3req.Request, _ signer.Caller, _ *signer.Storage) (*signer.Signed, error) {
	h := make(remotesign.Headers, len(r.Headers), len(r.Headers)+3)
	copy(h, r.Headers)
	h = append(h, remotesign.Header{Name: "Authorization", Values: []string{CannedAuthorization}})
	if !r.Headers.Has("x-amz-date") {
		h = append(h, remotesign.Header{Name: "X-Amz-Date", Values: []string{cannedAmzDate}})
	}
	if r.AddContentSHA256 {
		h = append(h, remotesign.Header{Name: "x-amz-content-sha256", Values: []string{r.ContentSHA256}})
	}
	return &signer.Signed{Headers: h, AccessKeyID: "COUNTERSIGN-CANNED", AmzDate: cannedAmzDate}, nil
}
