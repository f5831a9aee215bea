package vend

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"time"

	"github.com/countersign/countersign/audit"
	"github.com/countersign/countersign/internal/policyinput"
	"github.com/countersign/countersign/session"
)

// Authorizer decides one input with the policy (*policy.Manager).
type Authorizer interface {
	Authorize(ctx context.Context, in *policyinput.Input) (policyinput.Decision, error)
}

// AuditLog durably records (*audit.Log): Append returns once the records
// are on disk.
type AuditLog interface {
	Append(ctx context.Context, recs ...*audit.Record) error
}

// Stages are what a mint is made of, in order. None may be nil.
type Stages struct {
	Tables          TableLocator
	Authorizer      Authorizer
	Scoper          Scoper
	SessionPolicies SessionPolicies
	Minter          Minter
	Audit           AuditLog
}

// Options configures a Service.
type Options struct {
	Config Config
	Logger *slog.Logger
	// Now is the clock (default time.Now).
	Now func() time.Time
	// RecordTimeout bounds recording one mint (default 10 s).
	RecordTimeout time.Duration
}

// Service mints credentials: decided, bounded, minted and recorded.
type Service struct {
	st   Stages
	cfg  Config
	log  *slog.Logger
	now  func() time.Time
	recT time.Duration
}

// New wires a Service.
func New(st Stages, opts Options) (*Service, error) {
	if st.Tables == nil || st.Authorizer == nil || st.Scoper == nil || st.SessionPolicies == nil || st.Minter == nil || st.Audit == nil {
		return nil, errors.New("vend: table locator, authorizer, scoper, session policies, minter and audit log are all required")
	}
	if err := opts.Config.Validate(); err != nil {
		return nil, err
	}
	s := &Service{st: st, cfg: opts.Config, log: opts.Logger, now: opts.Now, recT: opts.RecordTimeout}
	s.cfg.setDefaults()
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.recT <= 0 {
		s.recT = 10 * time.Second
	}
	return s, nil
}

// Config is the service's configuration, defaults applied.
func (s *Service) Config() Config { return s.cfg }

// Mint decides r, mints its credentials and records the mint, in that
// order; the credentials are returned only once the record is durable.
// A refusal is an *Error (and recorded too).
func (s *Service) Mint(ctx context.Context, r *Request) (*Credentials, error) {
	m := &mint{req: r, start: s.now()}
	creds, err := s.mint(ctx, m)
	if err != nil {
		var e *Error
		if !errors.As(err, &e) {
			s.log.Error("credential mint failed", "err", err, "request_id", r.RequestID)
			e = refusal(http.StatusInternalServerError, "internal error while vending; nothing was vended")
		}
		m.refuse(e)
		creds, err = nil, e
	}
	if aerr := s.record(m); aerr != nil {
		s.log.Error("audit log unavailable; refusing to vend", "err", aerr, "request_id", r.RequestID)
		return nil, refusal(http.StatusServiceUnavailable, "audit log unavailable; nothing was vended")
	}
	return creds, err
}

// Refused records a mint refused before it could be decided (the caller
// did not authenticate, was rate-limited, or sent a malformed request).
func (s *Service) Refused(_ context.Context, r *Request, status int, msg string) error {
	m := &mint{req: r, start: s.now()}
	m.refuse(&Error{Status: status, Msg: msg})
	return s.record(m)
}

func (s *Service) record(m *mint) error {
	ctx, cancel := context.WithTimeout(context.Background(), s.recT)
	defer cancel()
	return s.st.Audit.Append(ctx, m.record(s.cfg.Region))
}

func (s *Service) mint(ctx context.Context, m *mint) (*Credentials, error) {
	r := m.req
	if r.Identity == nil {
		return nil, refusal(http.StatusUnauthorized, "not authenticated")
	}
	loc := r.Location // Unity Catalog's url, or the catalog's own table location
	if loc == "" && r.Table != nil {
		l, ok, err := s.st.Tables.TableLocation(ctx, r.Table)
		switch {
		case err != nil:
			s.log.Error("table locations unavailable", "err", err, "request_id", r.RequestID)
			return nil, refusal(http.StatusServiceUnavailable, "table locations are unavailable; nothing was vended")
		case !ok:
			return nil, refusal(http.StatusNotFound, fmt.Sprintf("table %s has no known location, so no credentials can be vended for it", tableName(r.Table)))
		}
		loc = l
	}
	if r.Table != nil && r.Table.Location == "" {
		t := *r.Table // the policy sees the location vended (table.location)
		t.Location = loc
		r.Table = &t
	}
	bucket, prefix, err := splitLocation(loc)
	if err != nil {
		return nil, refusal(http.StatusBadRequest, err.Error())
	}
	m.bucket, m.prefix, m.located = bucket, prefix, true

	d, ok := s.cfg.lifetime(r.Duration, r.Identity.ExpiresAt, m.start)
	m.duration = d
	if !ok {
		return nil, refusal(http.StatusUnauthorized, fmt.Sprintf("the token expires in %v, sooner than the shortest credentials the STS mints (vending.min_duration %v): refresh the token and ask again", max(d, 0), s.cfg.MinDuration))
	}

	try := []Access{r.Access}
	if r.Access == "" {
		try = []Access{ReadWrite, Read}
	}
	var grants []Grant
	var refused *Error
	for _, a := range try {
		m.access = a
		if grants, refused = s.decide(ctx, m, a); refused == nil || refused.Status != http.StatusForbidden {
			break
		}
	}
	if refused != nil {
		return nil, refused
	}

	doc, err := s.st.SessionPolicies.SessionPolicy(Scope{Grants: grants, Exact: true, Revision: m.revision})
	if err != nil {
		return nil, refusal(http.StatusForbidden, fmt.Sprintf("%s cannot be vended: its session policy: %v", loc, err))
	}
	m.actions = actionsOf(grants)
	minted, err := s.st.Minter.Mint(ctx, session.Request{Principal: r.Identity.Principal, Policy: doc, Duration: d})
	if err != nil {
		s.log.Error("STS mint failed", "err", err, "request_id", r.RequestID)
		return nil, refusal(http.StatusServiceUnavailable, "the STS is unavailable; nothing was vended")
	}
	m.minted = &minted
	return &Credentials{
		Location: "s3://" + bucket + "/" + prefix, Bucket: bucket, Prefix: prefix, Access: m.access, Actions: m.actions,
		AccessKeyID: minted.AccessKeyID, SecretAccessKey: minted.SecretAccessKey, SessionToken: minted.SessionToken, Expires: minted.Expires,
	}, nil
}

// decide asks the policy and the scope compiler about every S3 access
// class of a: the required ones must be allowed and cover the prefix, the
// optional ones are kept where they are. The grants returned are the
// scopes intersected with the prefix.
func (s *Service) decide(ctx context.Context, m *mint, a Access) ([]Grant, *Error) {
	required, optional := a.classes()
	var grants []Grant
	for i, class := range append(required, optional...) {
		need := i < len(required)
		start := time.Now()
		d, err := s.st.Authorizer.Authorize(ctx, m.input(class))
		m.eval += time.Since(start)
		if m.revision == "" {
			m.revision = d.Revision
		}
		if err != nil {
			s.log.Error("policy evaluation failed", "err", err, "access", class, "request_id", m.req.RequestID)
			return nil, refusal(http.StatusServiceUnavailable, "policy evaluation is unavailable; nothing was vended")
		}
		if !d.Allow {
			if !need {
				continue
			}
			msg := fmt.Sprintf("access denied: %s credentials for %s (%s)", a, m.location(), class)
			if d.Reason != "" {
				msg += ": " + d.Reason
			}
			return nil, refusal(http.StatusForbidden, msg)
		}
		sc, err := s.st.Scoper.Scope(ctx, ScopeQuery{Principal: m.req.Identity.Principal, Access: class, Bucket: m.bucket, Prefix: m.prefix, Table: m.req.Table})
		if err != nil {
			s.log.Error("scope compilation failed", "err", err, "access", class, "request_id", m.req.RequestID)
			return nil, refusal(http.StatusServiceUnavailable, "the policy's scope is unavailable; nothing was vended")
		}
		if act := requiredAction[class]; need && !sc.covers(m.bucket, m.prefix, act) {
			why := fmt.Sprintf("the policy does not allow %s on every key under it", act)
			if w, inexact := sc.Inexact[act]; inexact {
				why = fmt.Sprintf("the policy's scope for %s is not exact (%s), so it is decided object by object and never vended", act, w)
			}
			return nil, refusal(http.StatusForbidden, fmt.Sprintf("access denied: %s credentials for %s: %s", a, m.location(), why))
		}
		grants = append(grants, sc.within(m.bucket, m.prefix)...)
	}
	return grants, nil
}

func actionsOf(grants []Grant) []string {
	var out []string
	for _, g := range grants {
		out = append(out, g.Actions...)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func tableName(t *policyinput.Table) string {
	name := ""
	for _, ns := range t.Namespace {
		name += ns + "."
	}
	return name + t.Name
}
