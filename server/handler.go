package server

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"sync"

	"github.com/valyala/fasthttp"

	"github.com/countersign/countersign/auth"
	"github.com/countersign/countersign/metrics"
	"github.com/countersign/countersign/policy"
	"github.com/countersign/countersign/remotesign"
	"github.com/countersign/countersign/s3req"
	"github.com/countersign/countersign/signer"
)

// Classifier understands which S3 operation on which objects a sign request
// describes (implemented by *s3req.Classifier).
type Classifier interface {
	Classify(*remotesign.Request) (*s3req.Request, error)
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
	Authorize(ctx context.Context, in *policy.Input) (policy.Decision, error)
}

// Signer signs a classified request with countersign's credentials
// (implemented by *signer.Signer).
type Signer interface {
	Sign(ctx context.Context, r *s3req.Request) (*signer.Signed, error)
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
}

// Stages are the steps of the signing pipeline, in request order.
type Stages struct {
	Authenticator Authenticator
	Classifier    Classifier
	Authorizer    Authorizer
	Signer        Signer
}

// Handler serves the sign routes: decode, authenticate, classify, authorize
// every object, sign, answer. Each stage is a narrow interface wired by
// cmd/countersign.
type Handler struct {
	stages   Stages
	opts     Options
	log      *slog.Logger
	decoders sync.Pool
}

// NewHandler wires the stages. None may be nil: there is no anonymous mode
// and no default authorizer, so nothing is signed without an identity and
// an explicit decision.
func NewHandler(st Stages, opts Options, log *slog.Logger) (*Handler, error) {
	if st.Authenticator == nil || st.Classifier == nil || st.Authorizer == nil || st.Signer == nil {
		return nil, errors.New("server: authenticator, classifier, authorizer and signer are all required")
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	opts.BasePaths = normalizeBasePaths(opts.BasePaths)
	h := &Handler{stages: st, opts: opts, log: log}
	h.decoders.New = func() any { return new(remotesign.Decoder) }
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

// serveSign handles one POST to a sign route.
func (h *Handler) serveSign(ctx *fasthttp.RequestCtx, rt route) {
	h.sign(ctx, rt)
	if m := h.opts.Metrics; m != nil {
		m.Requests.WithLabelValues(rt.name, strconv.Itoa(ctx.Response.StatusCode())).Inc()
	}
}

func (h *Handler) sign(ctx *fasthttp.RequestCtx, rt route) {
	dec := h.decoders.Get().(*remotesign.Decoder)
	in, err := dec.Decode(ctx.PostBody(), h.opts.Limits)
	h.decoders.Put(dec)
	if err != nil {
		writeError(ctx, http.StatusBadRequest, err.Error(), 0)
		return
	}

	// Not ctx itself: a fasthttp RequestCtx is "done" as soon as the server
	// starts shutting down, and in-flight requests must finish then.
	stageCtx := context.Background()

	id, err := h.stages.Authenticator.Authenticate(stageCtx, ctx.Request.Header.Peek("Authorization"), peerCertificates(ctx))
	if err != nil {
		var ae *auth.Error
		errors.As(err, &ae)
		if m := h.opts.Metrics; m != nil && ae != nil {
			m.AuthFailures.WithLabelValues(ae.Reason.String()).Inc()
		}
		if ae != nil && ae.Retryable() {
			h.log.Error("authentication keys unavailable", "err", err)
			writeError(ctx, http.StatusServiceUnavailable, ae.Msg, 1)
			return
		}
		msg := err.Error()
		if ae != nil {
			msg = "authentication failed (" + ae.Reason.String() + "): " + ae.Msg
		}
		writeError(ctx, http.StatusUnauthorized, msg, 0)
		ctx.Response.Header.Set("WWW-Authenticate", `Bearer realm="countersign"`)
		return
	}

	req, err := h.stages.Classifier.Classify(in)
	if err != nil {
		var ce *s3req.Error
		if errors.As(err, &ce) {
			writeError(ctx, ce.Status, ce.Msg, 0)
			return
		}
		writeError(ctx, http.StatusBadRequest, err.Error(), 0)
		return
	}

	if status, msg := h.authorize(stageCtx, rt, id, req, ctx.RemoteIP().String()); status != http.StatusOK {
		retry := 0
		if status == http.StatusServiceUnavailable {
			retry = 1
		}
		writeError(ctx, status, msg, retry)
		return
	}

	signed, err := h.stages.Signer.Sign(stageCtx, req)
	if err != nil {
		switch {
		case errors.Is(err, signer.ErrCredentials):
			h.log.Error("signing credentials unavailable", "err", err)
			writeError(ctx, http.StatusServiceUnavailable, "signing credentials are unavailable; nothing was signed", 1)
		case errors.Is(err, signer.ErrBadRequest):
			writeError(ctx, http.StatusBadRequest, err.Error(), 0)
		default:
			// The classifier passed something the signer cannot sign: a bug,
			// not the client's fault. Refuse, and say so in the log.
			h.log.Error("signing failed", "err", err, "operation", req.Operation)
			writeError(ctx, http.StatusInternalServerError, "internal error while signing; nothing was signed", 0)
		}
		return
	}

	cache := "no-cache"
	if h.opts.CacheableReads && readOnly(req) {
		cache = "private"
	}
	ctx.SetStatusCode(http.StatusOK)
	ctx.SetContentType("application/json")
	ctx.Response.Header.Set("Cache-Control", cache)
	ctx.SetBody(remotesign.AppendResult(ctx.Response.Body()[:0], in.URI, signed.Headers))
}

// authorize asks the authorizer about every target. One denial denies the
// whole request, and the answer names the operation and object, never the
// policy's internals.
func (h *Handler) authorize(ctx context.Context, rt route, id *auth.Identity, req *s3req.Request, sourceIP string) (int, string) {
	var copySource *policy.Resource
	for i := range req.Targets {
		if t := &req.Targets[i]; t.Role == "copy-source" {
			copySource = &policy.Resource{Bucket: t.Bucket, Key: t.Key, ARN: t.ARN()}
		}
	}
	for i := range req.Targets {
		t := &req.Targets[i]
		in := buildInput(rt, req, t)
		in.Principal = &id.Principal
		in.CopySource = copySource
		in.Source.IP = sourceIP
		d, err := h.stages.Authorizer.Authorize(ctx, in)
		h.countDecision(t.Action, d.Allow, err)
		if err != nil {
			h.log.Error("policy evaluation failed", "err", err, "operation", t.Operation, "bucket", t.Bucket)
			return http.StatusServiceUnavailable, "policy evaluation is unavailable; nothing was signed"
		}
		if !d.Allow {
			return http.StatusForbidden, deniedMessage(t)
		}
	}
	return http.StatusOK, ""
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

func buildInput(rt route, req *s3req.Request, t *s3req.Target) *policy.Input {
	in := &policy.Input{
		Version:   policy.InputVersion,
		Operation: t.Operation,
		Action:    t.Action,
		Access:    string(t.Access),
		Resource:  policy.Resource{Bucket: t.Bucket, Key: t.Key, Prefix: t.Prefix, ARN: t.ARN()},
		Table:     rt.table,
		Request: policy.Request{
			Method:  req.Method,
			Region:  req.Region,
			Host:    req.Host,
			Headers: lowerHeaders(req.Headers),
		},
	}
	return in
}

// lowerHeaders flattens the client's headers for the policy: lower-case
// names, multiple values joined with ", " as HTTP does.
func lowerHeaders(h remotesign.Headers) map[string]string {
	m := make(map[string]string, len(h))
	for i := range h {
		v := ""
		for j, s := range h[i].Values {
			if j > 0 {
				v += ", "
			}
			v += s
		}
		m[asciiLower(h[i].Name)] = v
	}
	return m
}

func asciiLower(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= 'A' && c <= 'Z' {
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
