package server

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/valyala/fasthttp"

	"github.com/countersign/countersign/audit"
	"github.com/countersign/countersign/auth"
	"github.com/countersign/countersign/internal/policyinput"
	"github.com/countersign/countersign/metrics"
	"github.com/countersign/countersign/remotesign"
	"github.com/countersign/countersign/s3req"
	"github.com/countersign/countersign/signer"
)

// Classifier understands which S3 operation on which objects a sign request
// describes (implemented by *s3req.Classifier).
type Classifier interface {
	// ClassifyInto overwrites r; after an error r means nothing.
	ClassifyInto(r *s3req.Request, in *remotesign.Request) error
}

// Authenticator establishes who is calling from the Authorization header
// (and, with mutual TLS, the client certificate). Errors are *auth.Error:
// retryable ones (key source failing) become 503, the rest 401.
type Authenticator interface {
	Authenticate(ctx context.Context, authorization []byte, peerCerts []*x509.Certificate) (*auth.Identity, error)
}

// Authorizer decides one object of a request. Signing happens only after it
// allowed every target. An error means no decision could be made; the
// request is then refused (fail closed), never signed.
type Authorizer interface {
	Authorize(ctx context.Context, in *policyinput.Input) (policyinput.Decision, error)
}

// Signer signs a classified request with countersign's credentials, or
// with the caller's per-principal session (implemented by *signer.Signer).
type Signer interface {
	// SignInto returns a Signed that lives in out.
	SignInto(ctx context.Context, r *s3req.Request, c signer.Caller, out *signer.Storage) (*signer.Signed, error)
}

// Options configures the sign handler.
type Options struct {
	// BasePaths are the path prefixes the sign routes are served under, in
	// addition to the root. "/catalog" serves /catalog/v1/aws/s3/sign.
	BasePaths []string
	// CacheableReads answers reads with "Cache-Control: private", which lets
	// Iceberg's Java client reuse the signature for 30 s, keyed by method,
	// region and URI only — not by principal — and skip countersign's
	// policy and audit for those re-reads. Only for single-principal engines.
	CacheableReads bool
	// Limits bounds the decoded sign request.
	Limits remotesign.Limits
	// Metrics records requests and decisions; nil records nothing.
	Metrics *metrics.Metrics
	// RateLimit bounds requests per principal (429 with Retry-After).
	RateLimit RateLimit
	// RefusalLimit bounds recorded refusals per source before
	// authentication (429 with Retry-After, counted in a summary).
	RefusalLimit RefusalLimit
	// Catalog, when set, serves every route countersign does not own by
	// forwarding it to the Iceberg REST catalog countersign fronts;
	// Tables then gives the per-table route the catalog's table
	// location (table.location in the policy input).
	Catalog CatalogFront
	Tables  TableLocator
	// RequestTimeout bounds the stages of one sign request (default
	// DefaultRequestTimeout): a key fetch, policy evaluation or credential
	// fetch still running then is abandoned and the request answered 503
	// with Retry-After. Recording the outcome has a bound of its own, as
	// long. Either may run up to 1/64 longer (contexts shared between
	// requests, see deadlines), never shorter.
	RequestTimeout time.Duration
	// Vending is what Iceberg clients are told beside vended credentials
	// (client.region, s3.endpoint).
	Vending VendConfig
}

// DefaultRequestTimeout is Options.RequestTimeout's default: well above a
// healthy request (milliseconds), below Iceberg clients' socket timeouts.
const DefaultRequestTimeout = 10 * time.Second

// Stages are the steps of the signing pipeline, in request order.
type Stages struct {
	Authenticator Authenticator
	Classifier    Classifier
	Authorizer    Authorizer
	Signer        Signer
	Audit         AuditLog
	// Vendor, optional, serves the credential-vending routes.
	Vendor Vendor
}

// Handler serves the sign routes: decode, authenticate, classify, authorize
// every object, sign, answer. Each stage is a narrow interface wired by
// cmd/countersign.
type Handler struct {
	stages   Stages
	opts     Options
	log      *slog.Logger
	limiter  *principalLimiter // nil when rate limiting is off
	refusals *refusalLimiter
	// deadlines bounds each request's stages and its audit wait by
	// RequestTimeout, with contexts shared between requests.
	deadlines *deadlines
	decoders  sync.Pool
	bodies    sync.Pool // *[]byte for encoding answers
	// signingKey is the access key id of the last signature, to put a
	// key_rotation record in the audit log when the credentials change.
	signingKey atomic.Pointer[string]
	// stageSeconds are the stage histograms, resolved once: a label
	// lookup per stage per request is measurable on the hot path.
	stageSeconds [numStages]prometheus.Observer
}

// The stages of the pipeline, as labelled in countersign_stage_seconds.
const (
	stageDecode = iota
	stageAuthenticate
	stageClassify
	stageAuthorize
	stageSign
	stageAudit
	numStages
)

var stageNames = [numStages]string{"decode", "authenticate", "classify", "authorize", "sign", "audit"}

// NewHandler wires the stages. None may be nil: there is no anonymous mode
// and no default authorizer, so nothing is signed without an identity and
// an explicit decision.
func NewHandler(st Stages, opts Options, log *slog.Logger) (*Handler, error) {
	if st.Authenticator == nil || st.Classifier == nil || st.Authorizer == nil || st.Signer == nil || st.Audit == nil {
		return nil, errors.New("server: authenticator, classifier, authorizer, signer and audit log are all required")
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	opts.BasePaths = normalizeBasePaths(opts.BasePaths)
	if opts.RequestTimeout <= 0 {
		opts.RequestTimeout = DefaultRequestTimeout
	}
	limiter, err := newPrincipalLimiter(opts.RateLimit)
	if err != nil {
		return nil, err
	}
	refusals, err := newRefusalLimiter(opts.RefusalLimit)
	if err != nil {
		return nil, err
	}
	h := &Handler{stages: st, opts: opts, log: log, limiter: limiter, refusals: refusals, deadlines: newDeadlines(opts.RequestTimeout)}
	h.decoders.New = func() any { return new(remotesign.Decoder) }
	h.bodies.New = func() any { b := make([]byte, 0, 2048); return &b }
	if m := opts.Metrics; m != nil {
		for i, name := range stageNames {
			h.stageSeconds[i] = m.StageSeconds.WithLabelValues(name)
		}
	}
	return h, nil
}

func normalizeBasePaths(in []string) []string {
	out := []string{""}
	for _, p := range in {
		for len(p) > 0 && p[len(p)-1] == '/' {
			p = p[:len(p)-1]
		}
		if p == "" {
			continue
		}
		if p[0] != '/' {
			p = "/" + p
		}
		out = append(out, p)
	}
	return out
}

// serveSign handles one POST to a sign route: it runs the stages, then
// answers. The stages only fill in a call; answering happens in one place
// (finish) so that every outcome is treated alike.
func (h *Handler) serveSign(ctx *fasthttp.RequestCtx, rt route) {
	c := call{route: rt}
	c.sourceIP, c.requestID = callerIDs(ctx)
	h.run(ctx, &c)
	h.finish(ctx, &c)
	if m := h.opts.Metrics; m != nil {
		m.Requests.WithLabelValues(rt.name, strconv.Itoa(ctx.Response.StatusCode())).Inc()
	}
}

// serveRefused answers a sign request refused before its body was decoded
// (too large, unparsable headers, wrong method, overload): nothing runs,
// but it is finished like every other call, so it leaves its record.
func (h *Handler) serveRefused(ctx *fasthttp.RequestCtx, rt route, status int, msg string, retryAfter int) {
	c := call{route: rt}
	c.sourceIP, c.requestID = callerIDs(ctx)
	c.refuse(status, msg, retryAfter)
	h.finish(ctx, &c)
	if m := h.opts.Metrics; m != nil {
		m.Requests.WithLabelValues(rt.name, strconv.Itoa(ctx.Response.StatusCode())).Inc()
	}
}

// call is one sign request on its way through the pipeline.
type call struct {
	route     route
	sourceIP  string
	requestID string

	in        *remotesign.Request // nil if the body did not decode
	identity  *auth.Identity      // nil if authentication failed
	req       *s3req.Request      // nil if classification failed, else &classified
	decisions []decision          // one per target, in target order
	signed    *signer.Signed      // non-nil only when everything allowed

	// The refusal, when there is one.
	status     int
	msg        string
	retryAfter int

	// Room for a one-object call's decision and records (nearly every
	// call), so that authorize and auditRecords allocate nothing for it.
	oneDecision [1]decision
	oneRecord   [1]*audit.Record
	record      audit.Record
	principal   audit.Principal
	signing     audit.Signing
	table       audit.Table
	// Room for the policy input's headers (lowerHeaders).
	headers [8]policyinput.Header
	// The first target's policy input.
	input policyinput.Input
	// The classified request and the signature (the call is their one
	// allocation).
	classified s3req.Request
	signature  signer.Storage
}

// decision is the policy's answer for one target of the request.
type decision struct {
	policyinput.Decision
	err     error
	elapsed time.Duration
}

func (c *call) refuse(status int, msg string, retryAfter int) {
	c.status, c.msg, c.retryAfter = status, msg, retryAfter
}

// run takes the call through decode, authenticate, classify, authorize and
// sign, stopping at the first refusal.
func (h *Handler) run(ctx *fasthttp.RequestCtx, c *call) {
	start := time.Now()
	// The stages' context is not ctx itself: a fasthttp RequestCtx is
	// "done" as soon as the server starts shutting down, and in-flight
	// requests must finish then. Only the request's own deadline cuts them.
	stageCtx := h.deadlines.context(start)

	authz, single := authorization(ctx)
	if !single {
		c.refuse(http.StatusBadRequest, errTwoAuthorizations, 0)
		return
	}
	dec := h.decoders.Get().(*remotesign.Decoder)
	in, err := dec.Decode(ctx.PostBody(), h.opts.Limits)
	h.decoders.Put(dec)
	start = h.observe(stageDecode, start)
	if err != nil {
		c.refuse(http.StatusBadRequest, err.Error(), 0)
		// The answer stays the decoder's 400, but when the caller's
		// credentials are good the record names the principal, and its
		// bad requests are not charged to its source's limit of refusals
		// before authentication (limitRefusal): an engine's malformed
		// requests would otherwise turn into 429s, which clients retry.
		certs := peerCertificates(ctx)
		if len(authz) > 0 || len(certs) > 0 {
			if id, err := h.stages.Authenticator.Authenticate(stageCtx, authz, certs); err == nil {
				c.identity = id
			}
		}
		return
	}
	c.in = in

	id, err := h.stages.Authenticator.Authenticate(stageCtx, authz, peerCertificates(ctx))
	start = h.observe(stageAuthenticate, start)
	if err != nil {
		h.refuseAuth(c, err)
		h.cutByDeadline(stageCtx, c, "authenticating (waiting for the identity provider's token signing keys)")
		return
	}
	c.identity = id
	if cc := connOf(ctx.Conn()); cc != nil {
		cc.markAuthenticated() // the connection now keeps the normal idle timeout
	}

	if h.limiter != nil {
		if wait, ok := h.limiter.allow(id.Principal.ID); !ok {
			c.refuse(http.StatusTooManyRequests, "rate limit exceeded for principal "+strconv.Quote(id.Principal.ID), wait)
			return
		}
	}

	req := &c.classified
	err = h.stages.Classifier.ClassifyInto(req, in)
	start = h.observe(stageClassify, start)
	if err != nil {
		var ce *s3req.Error
		if errors.As(err, &ce) {
			c.refuse(ce.Status, ce.Msg, 0)
			return
		}
		c.refuse(http.StatusBadRequest, err.Error(), 0)
		return
	}
	c.req = req

	h.locateTable(stageCtx, c, authz)
	if c.status != 0 {
		h.cutByDeadline(stageCtx, c, "asking the catalog for the table's location")
		return
	}

	if skipDecision(ctx) { // false outside the e2e test's build (testhook_off.go)
		c.decisions = skippedDecisions(c)
	} else {
		h.authorize(stageCtx, c)
	}
	start = h.observe(stageAuthorize, start)
	if c.status != 0 {
		h.cutByDeadline(stageCtx, c, "evaluating the policy")
		return
	}

	signed, err := h.stages.Signer.SignInto(stageCtx, req, signer.Caller{TokenHash: id.TokenHash, Principal: &id.Principal, Table: c.route.table, TablePath: c.route.tablePath}, &c.signature)
	h.observe(stageSign, start)
	if err != nil {
		switch {
		case errors.Is(err, signer.ErrCredentials):
			h.log.Error("signing credentials unavailable", "err", err, "request_id", c.requestID)
			c.refuse(http.StatusServiceUnavailable, "signing credentials are unavailable; nothing was signed", 1)
			h.cutByDeadline(stageCtx, c, "obtaining the signing credentials")
		case errors.Is(err, signer.ErrBadRequest):
			c.refuse(http.StatusBadRequest, err.Error(), 0)
		default:
			// The classifier passed something the signer cannot sign: a bug,
			// not the client's fault. Refuse, and say so in the log.
			h.log.Error("signing failed", "err", err, "operation", req.Operation, "request_id", c.requestID)
			c.refuse(http.StatusInternalServerError, "internal error while signing; nothing was signed", 0)
		}
		return
	}
	c.signed = signed
}

// cutByDeadline names the request deadline as the cause of a 503 refusal
// when it has passed: the stage's own error (a wrapped cancellation, a
// generic "unavailable") does not say so, and the operator's remedy
// differs (a slow dependency, or a limit set too low).
func (h *Handler) cutByDeadline(ctx context.Context, c *call, while string) {
	if c.status != http.StatusServiceUnavailable || !errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return
	}
	h.log.Error("request deadline passed", "while", while, "limit", h.opts.RequestTimeout, "request_id", c.requestID)
	c.refuse(http.StatusServiceUnavailable, "request deadline of "+h.opts.RequestTimeout.String()+
		" (limits.request_timeout) passed while "+while+"; nothing was signed", 1)
}

func (h *Handler) refuseAuth(c *call, err error) {
	var ae *auth.Error
	errors.As(err, &ae)
	if m := h.opts.Metrics; m != nil && ae != nil {
		m.AuthFailures.WithLabelValues(ae.Reason.String()).Inc()
	}
	if ae != nil && ae.Retryable() {
		h.log.Error("authentication keys unavailable", "err", err, "request_id", c.requestID)
		c.refuse(http.StatusServiceUnavailable, ae.Msg, 1)
		return
	}
	msg := err.Error()
	if ae != nil {
		msg = "authentication failed (" + ae.Reason.String() + "): " + ae.Msg
	}
	c.refuse(http.StatusUnauthorized, msg, 0)
}

// challenge is the WWW-Authenticate value of a 401 refusal with message
// msg (refuseAuth's): RFC 6750 §3's error="invalid_token" when a token was
// presented and refused, no error code when the request carried none.
func challenge(msg string) string {
	if strings.HasPrefix(msg, "authentication failed ("+auth.ReasonMissingToken.String()+")") {
		return `Bearer realm="countersign"`
	}
	return `Bearer realm="countersign", error="invalid_token"`
}

// finish records the call in the audit log and then answers it: the signed
// result, or the refusal in Iceberg's error model. The answer waits until
// the records are durable; when they cannot be written, nothing is signed.
func (h *Handler) finish(ctx *fasthttp.RequestCtx, c *call) {
	start := time.Now()
	recs := c.auditRecords()
	if c.signed != nil && c.signed.SessionName == "" { // per-principal sessions are not rotations
		recs = h.noteKeyRotation(recs, c.signed.AccessKeyID)
	} else {
		recs = h.limitRefusal(c, recs, start)
	}
	if len(recs) == 0 {
		// A refusal past its source's limit: counted for the summary.
	} else if err := h.append(recs); err != nil {
		h.log.Error("audit log unavailable; refusing to sign", "err", err, "request_id", c.requestID)
		c.signed = nil
		c.refuse(http.StatusServiceUnavailable, "audit log unavailable; nothing was signed", 1)
	} else if m := h.opts.Metrics; m != nil {
		for _, r := range recs {
			if r.Kind == audit.KindAccess {
				m.CountAuditDecision(string(r.Decision))
			}
		}
	}
	h.observe(stageAudit, start)
	ctx.Response.Header.Set("X-Request-Id", c.requestID)
	if c.signed == nil {
		if c.status == 0 { // unreachable: every path without a signature refuses
			c.refuse(http.StatusInternalServerError, "internal error; nothing was signed", 0)
		}
		writeError(ctx, c.status, c.msg, c.retryAfter)
		ctx.Response.Header.Set("X-Request-Id", c.requestID)
		if c.status == http.StatusUnauthorized {
			ctx.Response.Header.Set("WWW-Authenticate", challenge(c.msg))
		}
		return
	}
	cache := "no-cache"
	if h.opts.CacheableReads && readOnly(c.req) {
		cache = "private"
	}
	ctx.SetStatusCode(http.StatusOK)
	ctx.SetContentType("application/json")
	ctx.Response.Header.Set("Cache-Control", cache)
	// Encoded in a pooled buffer, then copied into fasthttp's own pooled
	// body buffer: no allocation for the answer in the steady state.
	buf := h.bodies.Get().(*[]byte)
	*buf = remotesign.AppendResult((*buf)[:0], c.in.URI, c.signed.Headers)
	ctx.SetBody(*buf)
	if cap(*buf) <= 64<<10 {
		h.bodies.Put(buf)
	}
}

// append records a call's outcome under a bound of its own, not the
// stages' deadline: a call cut by that deadline must still be recorded.
func (h *Handler) append(recs []*audit.Record) error {
	return h.stages.Audit.Append(h.deadlines.context(time.Now()), recs...)
}

// limitRefusal applies the per-source refusal limit to a call refused
// before it authenticated: past the limit the answer becomes 429 and its
// record is dropped from recs, counted in the source's next summary, which
// is added to recs when due.
func (h *Handler) limitRefusal(c *call, recs []*audit.Record, now time.Time) []*audit.Record {
	if c.identity != nil || c.status < 400 || c.status >= 500 || c.status == http.StatusTooManyRequests {
		return recs
	}
	wait, ok, due := h.refusals.allow(c.sourceIP, c.status, now)
	if !ok {
		if m := h.opts.Metrics; m != nil {
			m.RefusalsSuppressed.Inc()
		}
		c.refuse(http.StatusTooManyRequests, "too many refused requests from "+c.sourceIP+" (limits.refusal_limit); "+c.msg, wait)
		recs = recs[:0]
	}
	return append(recs, due...)
}

// recordSuppressed writes the summaries that are due (all of them at
// shutdown) for sources that stopped sending.
func (h *Handler) recordSuppressed(all bool) {
	recs := h.refusals.sweep(time.Now(), all)
	if len(recs) == 0 {
		return
	}
	if err := h.stages.Audit.Append(context.Background(), recs...); err != nil {
		h.log.Error("recording suppressed refusals", "err", err, "records", len(recs))
	}
}

// authorize asks the authorizer about every target — all of them, even
// after a denial, so that each object has its own decision on record. One
// denial denies the whole request, and the answer names the operation and
// object, never the policy's internals.
func (h *Handler) authorize(ctx context.Context, c *call) {
	req := c.req
	var copySource *policyinput.Resource
	for i := range req.Targets {
		if t := &req.Targets[i]; t.Role == "copy-source" {
			copySource = &policyinput.Resource{Bucket: t.Bucket, Key: t.Key, ARN: t.ARN(), VersionID: t.VersionID}
		}
	}
	headers := lowerHeaders(req.Headers, c.headers[:0])
	if len(req.Targets) == 1 {
		c.decisions = c.oneDecision[:]
	} else {
		c.decisions = make([]decision, len(req.Targets))
	}
	for i := range req.Targets {
		t := &req.Targets[i]
		in := &c.input
		if i > 0 {
			in = new(policyinput.Input)
		}
		fillInput(in, c.route, req, t, headers)
		in.Principal = &c.identity.Principal
		in.CopySource = copySource
		in.Source.IP = c.sourceIP
		start := time.Now()
		d, err := h.stages.Authorizer.Authorize(ctx, in)
		c.decisions[i] = decision{Decision: d, err: err, elapsed: time.Since(start)}
		h.countDecision(t.Action, d.Allow, err)
		switch {
		case err != nil:
			h.log.Error("policy evaluation failed", "err", err, "operation", t.Operation, "bucket", t.Bucket, "request_id", c.requestID)
			if c.status != http.StatusServiceUnavailable {
				c.refuse(http.StatusServiceUnavailable, "policy evaluation is unavailable; nothing was signed", 1)
			}
		case !d.Allow && c.status == 0:
			c.refuse(http.StatusForbidden, deniedMessage(t), 0)
		}
	}
}

// noteKeyRotation adds a key_rotation lifecycle record, in the same durable
// batch, when a signature is the first with a new access key id (session
// credentials renewed, or a new static key).
func (h *Handler) noteKeyRotation(recs []*audit.Record, keyID string) []*audit.Record {
	prev := h.signingKey.Load()
	if prev != nil && *prev == keyID {
		return recs
	}
	// A copy, so that keyID itself does not escape (and allocate) on the
	// common path above.
	key := new(string)
	*key = keyID
	if !h.signingKey.CompareAndSwap(prev, key) {
		return recs // another request recorded this rotation
	}
	detail := map[string]string{"access_key_id": keyID}
	if prev != nil {
		detail["previous_access_key_id"] = *prev
	}
	return append(recs, &audit.Record{Kind: audit.KindLifecycle, Event: audit.EventKeyRotation, Detail: detail})
}

// observe records the time since start for stage and returns now, so
// stages can be timed back to back.
func (h *Handler) observe(stage int, start time.Time) time.Time {
	now := time.Now()
	if o := h.stageSeconds[stage]; o != nil {
		o.Observe(now.Sub(start).Seconds())
	}
	return now
}

func isToken(b []byte) bool {
	for _, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

func (h *Handler) countDecision(action string, allow bool, err error) {
	m := h.opts.Metrics
	if m == nil {
		return
	}
	result := "deny"
	switch {
	case err != nil:
		result = "error"
	case allow:
		result = "allow"
	}
	m.Decisions.WithLabelValues(action, result).Inc()
}

func deniedMessage(t *s3req.Target) string {
	obj := t.ARN()
	if t.VersionID != "" {
		obj = fmt.Sprintf("%s (version %q)", obj, t.VersionID)
	}
	if t.Prefix != nil {
		obj = fmt.Sprintf("%s (prefix %q)", obj, *t.Prefix)
	}
	if t.Role == "copy-source" {
		return fmt.Sprintf("access denied: %s (read of copy source %s)", t.Operation, obj)
	}
	return fmt.Sprintf("access denied: %s on %s", t.Operation, obj)
}

// peerCertificates returns the verified client certificate chain of a
// mutual-TLS connection, or nil.
func peerCertificates(ctx *fasthttp.RequestCtx) []*x509.Certificate {
	if !ctx.IsTLS() {
		return nil
	}
	st := ctx.TLSConnectionState()
	if st == nil || len(st.VerifiedChains) == 0 {
		return nil
	}
	return st.PeerCertificates
}

// readOnly reports whether every target of the request is a read.
func readOnly(r *s3req.Request) bool {
	for i := range r.Targets {
		if r.Targets[i].Access != s3req.AccessRead {
			return false
		}
	}
	return len(r.Targets) > 0
}

// fillInput sets in to the policy input of target t, except the fields
// every target shares, which authorize sets.
func fillInput(in *policyinput.Input, rt route, req *s3req.Request, t *s3req.Target, headers policyinput.Headers) {
	*in = policyinput.Input{
		Version:   policyinput.InputVersion,
		Operation: t.Operation,
		Action:    t.Action,
		Access:    string(t.Access),
		Resource:  policyinput.Resource{Bucket: t.Bucket, Key: t.Key, Prefix: t.Prefix, ARN: t.ARN(), VersionID: t.VersionID},
		Table:     rt.table,
		Request: policyinput.Request{
			Method:  req.Method,
			Region:  req.Region,
			Host:    req.Host,
			Headers: headers,
		},
	}
}

// lowerHeaders flattens the client's headers for the policy, appended to
// buf (non-nil: a request without headers has empty ones, JSON {}):
// lower-case names, multiple values joined with ", " as HTTP does, in
// order of name (policyinput.Headers). The client sends them nearly
// sorted, so the insertion sort is a pass. Of two headers whose names
// differ only in case, the later one stands, as a map would keep it.
func lowerHeaders(h remotesign.Headers, buf policyinput.Headers) policyinput.Headers {
	hs := buf
	for i := range h {
		v := ""
		for j, s := range h[i].Values {
			if j > 0 {
				v += ", "
			}
			v += s
		}
		name := asciiLower(h[i].Name)
		k := len(hs)
		for k > 0 && hs[k-1].Name > name {
			k--
		}
		if k > 0 && hs[k-1].Name == name {
			hs[k-1].Value = v
			continue
		}
		hs = slices.Insert(hs, k, policyinput.Header{Name: name, Value: v})
	}
	return hs
}

func asciiLower(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= 'A' && c <= 'Z' {
			if k := knownHeaderName(s); k != "" {
				return k
			}
			b := []byte(s)
			for j := i; j < len(b); j++ {
				if b[j] >= 'A' && b[j] <= 'Z' {
					b[j] += 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return s
}

// knownHeaderNames are the lower-case names of the headers S3 clients
// send, which the Java SDK spells capitalized ("User-Agent", "Range"):
// lowering them from this table costs no allocation per request.
var knownHeaderNames = [...]string{
	"range", "user-agent", "content-length", "content-type", "content-md5",
	"content-encoding", "content-language", "content-disposition", "cache-control",
	"expect", "host", "if-match", "if-none-match", "if-modified-since", "if-unmodified-since",
	"x-amz-content-sha256", "x-amz-date", "x-amz-security-token", "x-amz-decoded-content-length",
	"x-amz-copy-source", "x-amz-copy-source-range", "x-amz-acl", "x-amz-storage-class",
	"x-amz-server-side-encryption", "x-amz-checksum-crc32", "x-amz-checksum-crc32c",
	"x-amz-sdk-checksum-algorithm", "x-amz-trailer", "x-amz-expected-bucket-owner",
}

// knownHeaderName returns the entry of knownHeaderNames that s equals
// ignoring ASCII case, or "".
func knownHeaderName(s string) string {
	for _, k := range knownHeaderNames {
		if len(k) == len(s) && equalLowerASCII(k, s) {
			return k
		}
	}
	return ""
}

// equalLowerASCII reports whether s, with A-Z lowered, equals lower.
// Only ASCII folds: "K" (U+212A, Kelvin) is not "k".
func equalLowerASCII(lower, s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}
