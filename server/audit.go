package server

import (
	"context"
	"net/http"

	"github.com/countersign/countersign/audit"
)

// AuditLog durably records what happened to every object. Append returns
// only after the records are on disk; an error means they are not, and the
// call must not be answered with a signature.
type AuditLog interface {
	Append(ctx context.Context, recs ...*audit.Record) error
}

// auditRecords turns a finished call into its records: one per object per
// decision, or one for a request refused before it named any object
// (malformed, unauthenticated, rate-limited, outside the configuration).
func (c *call) auditRecords() []*audit.Record {
	base := audit.Record{
		Kind:      audit.KindAccess,
		SourceIP:  c.sourceIP,
		RequestID: c.requestID,
		Status:    c.status,
		Reason:    c.msg,
	}
	if c.signed != nil {
		base.Status, base.Reason = http.StatusOK, ""
	}
	if c.in != nil {
		base.Region = c.in.Region
	}
	if t := c.route.table; t != nil {
		c.table = audit.Table{Prefix: t.Prefix, Namespace: t.Namespace, Name: t.Name}
		base.Table = &c.table
	}
	if id := c.identity; id != nil {
		c.principal = audit.Principal{
			Issuer: id.Principal.Issuer, ID: id.Principal.ID, Groups: id.Principal.Groups,
			JTI: id.TokenID, TokenSHA256: id.TokenHash,
		}
		base.Principal = &c.principal
	}

	// Refused before any object was known.
	if c.req == nil || len(c.decisions) == 0 {
		r := &c.record
		*r = base
		switch {
		case c.in == nil:
			r.Decision = audit.DecisionMalformed
		case c.identity == nil && c.status == http.StatusUnauthorized:
			r.Decision = audit.DecisionUnauthenticated
		case c.status == http.StatusBadRequest:
			r.Decision = audit.DecisionMalformed
		case c.status == http.StatusForbidden:
			r.Decision = audit.DecisionDeny
		default:
			r.Decision = audit.DecisionError
		}
		if c.req != nil {
			r.Operation, r.Bucket, r.Key = c.req.Operation, c.req.Bucket, c.req.Key
		}
		c.oneRecord[0] = r
		return c.oneRecord[:]
	}

	recs := c.oneRecord[:]
	if len(c.req.Targets) > 1 {
		recs = make([]*audit.Record, len(c.req.Targets))
	}
	var signing *audit.Signing
	if s := c.signed; s != nil {
		signing = &c.signing
		*signing = audit.Signing{
			AccessKeyID: s.AccessKeyID, Scope: s.CredentialScope, AmzDate: s.AmzDate,
			SignedHeaders: s.SignedHeaders, Payload: c.req.ContentSHA256,
			CanonicalRequestSHA256: s.CanonicalRequestSHA256, SignatureSHA256: s.SignatureSHA256,
			SourceIdentity: s.SourceIdentity, SessionName: s.SessionName,
		}
	}
	for i := range c.req.Targets {
		t := &c.req.Targets[i]
		d := &c.decisions[i]
		r := &c.record
		if i > 0 {
			r = new(audit.Record)
		}
		*r = base
		r.Operation, r.Action, r.Access = t.Operation, t.Action, string(t.Access)
		r.Bucket, r.Key, r.Prefix, r.VersionID = t.Bucket, t.Key, t.Prefix, t.VersionID
		r.Role = auditRole(t.Role)
		r.PolicyRevision = d.Revision
		r.EvalMicros = d.elapsed.Microseconds()
		switch {
		case d.err != nil:
			r.Decision = audit.DecisionError
		case d.Allow && c.signed == nil && c.status == http.StatusBadRequest:
			// Allowed, then refused as malformed by the signer (a header
			// it must add already there, a date it cannot sign): not an
			// allow an auditor would look for. policy_revision still
			// names the policy that allowed it.
			r.Decision = audit.DecisionMalformed
		case d.Allow:
			r.Decision = audit.DecisionAllow
			r.Signing = signing
		default:
			r.Decision = audit.DecisionDeny
			if d.Reason != "" {
				r.Reason = d.Reason
			}
		}
		recs[i] = r
	}
	return recs
}

func auditRole(role string) audit.Role {
	switch role {
	case "object":
		return audit.RoleObject
	case "copy-source":
		return audit.RoleCopySource
	case "delete-key":
		return audit.RoleDeleteKey
	case "bucket":
		return audit.RoleBucket
	}
	return audit.RoleNone
}
