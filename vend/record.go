package vend

import (
	"net/http"
	"time"

	"github.com/countersign/countersign/audit"
	"github.com/countersign/countersign/internal/policyinput"
	"github.com/countersign/countersign/session"
)

// mint is one mint on its way: what was decided, for its record.
type mint struct {
	req   *Request
	start time.Time

	located        bool
	bucket, prefix string
	access         Access
	duration       time.Duration
	revision       string
	eval           time.Duration
	actions        []string
	minted         *session.Credentials

	status int
	reason string
}

func (m *mint) refuse(e *Error) {
	m.status, m.reason, m.minted, m.actions = e.Status, e.Msg, nil, nil
}

func (m *mint) location() string { return "s3://" + m.bucket + "/" + m.prefix }

// input is the policy input deciding one S3 access class of the mint: the
// operation "MintCredentials" on everything under the prefix.
func (m *mint) input(class string) *policyinput.Input {
	prefix := m.prefix
	return &policyinput.Input{
		Version:   policyinput.InputVersion,
		Principal: &m.req.Identity.Principal,
		Operation: policyinput.OperationMint,
		Action:    policyinput.ActionMint,
		Access:    class,
		Resource:  policyinput.Resource{Bucket: m.bucket, Prefix: &prefix, ARN: "arn:aws:s3:::" + m.bucket + "/" + prefix + "*"},
		Table:     m.req.Table,
		Request:   policyinput.Request{Method: "GET", Headers: policyinput.Headers{}},
		Source:    policyinput.Source{IP: m.req.SourceIP},
		Mint:      &policyinput.Mint{Prefix: prefix, Access: string(m.access), DurationSeconds: int64(m.duration / time.Second)},
	}
}

// record is the mint's audit record.
func (m *mint) record(region string) *audit.Record {
	r := m.req
	rec := &audit.Record{
		Kind:           audit.KindAccess,
		SourceIP:       r.SourceIP,
		RequestID:      r.RequestID,
		Operation:      audit.OperationMint,
		Action:         policyinput.ActionMint,
		Access:         string(m.access),
		Region:         region,
		Role:           audit.RolePrefix,
		Status:         http.StatusOK,
		PolicyRevision: m.revision,
		EvalMicros:     m.eval.Microseconds(),
		Mint:           &audit.Mint{Actions: []string{}, DurationSeconds: int64(m.duration / time.Second)},
	}
	if rec.Access == "" {
		rec.Access = string(r.Access)
	}
	if m.located {
		prefix := m.prefix
		rec.Bucket, rec.Prefix = m.bucket, &prefix
	}
	if t := r.Table; t != nil {
		rec.Table = &audit.Table{Prefix: t.Prefix, Namespace: t.Namespace, Name: t.Name}
	}
	if id := r.Identity; id != nil {
		rec.Principal = &audit.Principal{
			Issuer: id.Principal.Issuer, ID: id.Principal.ID, Groups: id.Principal.Groups,
			JTI: id.TokenID, TokenSHA256: id.TokenHash,
		}
	}
	switch {
	case m.minted != nil && m.status == 0:
		rec.Decision = audit.DecisionAllow
		rec.Mint.Actions = m.actions
		rec.Mint.Expires = m.minted.Expires.UTC().Format(time.RFC3339)
		rec.Mint.AccessKeyID = m.minted.AccessKeyID
		rec.Mint.SourceIdentity = m.minted.SourceIdentity
		rec.Mint.SessionName = m.minted.SessionName
		return rec
	case m.status == http.StatusUnauthorized && r.Identity == nil:
		rec.Decision = audit.DecisionUnauthenticated
	case m.status == http.StatusBadRequest:
		rec.Decision = audit.DecisionMalformed
	case m.status == http.StatusForbidden || m.status == http.StatusNotFound || m.status == http.StatusUnauthorized || m.status == http.StatusTooManyRequests:
		rec.Decision = audit.DecisionDeny
	default:
		rec.Decision = audit.DecisionError
	}
	rec.Status, rec.Reason = m.status, m.reason
	return rec
}
