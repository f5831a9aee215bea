package server

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/countersign/countersign/internal/policyinput"
	"github.com/countersign/countersign/internal/strictjson"
	"github.com/countersign/countersign/remotesign"
	"github.com/countersign/countersign/vend"
)

// Vendor mints vended credentials, decided, bounded and recorded
// (implemented by *vend.Service). Stages.Vendor nil serves no credential
// routes.
type Vendor interface {
	Mint(ctx context.Context, r *vend.Request) (*vend.Credentials, error)
	// Refused records a mint refused before it was decided.
	Refused(ctx context.Context, r *vend.Request, status int, msg string) error
}

// The credential-vending APIs, each with its own request, answer and
// error model.
const (
	apiIceberg = "credentials" // Iceberg REST loadCredentials
	apiUnity   = "unity"       // Unity Catalog temporary path credentials
)

// vendRoute is what the URL path of a credentials request says.
type vendRoute struct {
	api       string
	table     *policyinput.Table // the Iceberg route's table
	tablePath string             // its raw path, for the catalog front
}

const unityPathCredentials = "/api/2.1/unity-catalog/temporary-path-credentials"

// matchVendRoute recognizes, under any of the base paths:
//
//	GET  /v1/[{prefix}/]namespaces/{namespace}/tables/{table}/credentials   (Iceberg REST)
//	POST /api/2.1/unity-catalog/temporary-path-credentials                (Unity Catalog)
func matchVendRoute(rawPath string, basePaths []string, sep string) (vendRoute, bool) {
	for _, base := range basePaths {
		rest, ok := strings.CutPrefix(rawPath, base)
		if !ok {
			continue
		}
		if rest == unityPathCredentials {
			return vendRoute{api: apiUnity}, true
		}
		if r, ok := matchTablePath(rest, "credentials", apiIceberg, sep); ok {
			return vendRoute{api: apiIceberg, table: r.table, tablePath: r.tablePath}, true
		}
	}
	return vendRoute{}, false
}

// serveVend answers a credentials request: admit it as every mint is
// admitted (admitVend), then mint (vend decides and records), then answer
// in the route's own model.
func (s *Server) serveVend(ctx *fasthttp.RequestCtx, vr vendRoute) {
	h := s.handler
	req := &vend.Request{Table: vr.table}
	req.SourceIP, req.RequestID = callerIDs(ctx)
	ctx.Response.Header.Set("X-Request-Id", req.RequestID)
	defer func() {
		if m := h.opts.Metrics; m != nil {
			m.Requests.WithLabelValues(vr.api, strconv.Itoa(ctx.Response.StatusCode())).Inc()
		}
	}()
	method := "GET"
	if vr.api == apiUnity {
		method = "POST"
	}
	if string(ctx.Method()) != method {
		h.refuseVend(ctx, vr, req, http.StatusMethodNotAllowed, "this route accepts "+method+" only", 0)
		ctx.Response.Header.Set("Allow", method)
		return
	}
	if !s.boundBody(ctx) {
		h.refuseVend(ctx, vr, req, http.StatusRequestEntityTooLarge, "request body is larger than the configured limit of "+strconv.Itoa(s.cfg.MaxBodyBytes)+" bytes", 0)
		return
	}
	stageCtx, cancel := context.WithTimeout(context.Background(), h.opts.RequestTimeout)
	defer cancel()
	release, no := s.admitVend(stageCtx, ctx, req)
	if no != nil {
		h.refuseVend(ctx, vr, req, no.status, no.msg, no.retryAfter)
		return
	}
	defer release()
	if vr.table != nil && h.opts.Tables != nil {
		// With a catalog front, the table's location is the catalog's, as
		// it answers this caller; a caller it refuses gets nothing.
		authz, _ := authorization(ctx)
		loc, err := h.opts.Tables.Locate(stageCtx, req.Identity.TokenHash, authz, vr.tablePath)
		if err != nil {
			var r interface{ Retryable() bool }
			if errors.As(err, &r) && r.Retryable() {
				h.log.Error("table location unavailable", "err", err, "request_id", req.RequestID)
				h.refuseVend(ctx, vr, req, http.StatusServiceUnavailable, err.Error()+"; nothing was vended", 1)
				return
			}
			h.refuseVend(ctx, vr, req, http.StatusForbidden, err.Error()+"; nothing was vended", 0)
			return
		}
		t := *vr.table
		t.Location = loc
		req.Table, req.Location = &t, loc
	}
	if vr.api == apiUnity {
		if err := decodeUnityRequest(ctx.PostBody(), req); err != nil {
			h.refuseVend(ctx, vr, req, http.StatusBadRequest, err.Error(), 0)
			return
		}
	}
	creds, err := h.stages.Vendor.Mint(stageCtx, req)
	if err != nil {
		var e *vend.Error
		if !errors.As(err, &e) {
			e = &vend.Error{Status: http.StatusInternalServerError, Msg: "internal error; nothing was vended"}
		}
		writeVendError(ctx, vr.api, e.Status, e.Msg, e.RetryAfter)
		return
	}
	ctx.SetStatusCode(http.StatusOK)
	ctx.SetContentType("application/json")
	ctx.Response.Header.Set("Cache-Control", "no-store")
	if vr.api == apiUnity {
		ctx.SetBody(unityAnswer(creds))
		return
	}
	ctx.SetBody(icebergAnswer(creds, h.opts.Vending))
}

// vendRefusal is why a mint was not admitted: its answer, not yet
// recorded.
type vendRefusal struct {
	status     int
	msg        string
	retryAfter int
}

// admitVend admits a credential mint, whichever route asks for it (the
// credentials routes, or a loadTable answer through the catalog front):
// a request slot (limits.max_concurrency, shared with the sign routes),
// authentication as the sign routes do it, and the principal's rate
// limit. Admitted, req.Identity is set and release frees the slot; refused,
// nothing is held and the refusal is for the caller to record
// (recordVendRefusal) and answer.
func (s *Server) admitVend(stageCtx context.Context, ctx *fasthttp.RequestCtx, req *vend.Request) (release func(), no *vendRefusal) {
	h := s.handler
	select {
	case s.inflight <- struct{}{}:
	default:
		return nil, &vendRefusal{http.StatusServiceUnavailable,
			"countersign is serving its limit of " + strconv.Itoa(cap(s.inflight)) + " requests at once (limits.max_concurrency)", 1}
	}
	release = func() { <-s.inflight }
	authz, single := authorization(ctx)
	if !single {
		release()
		return nil, &vendRefusal{http.StatusBadRequest, errTwoAuthorizations, 0}
	}
	id, err := h.stages.Authenticator.Authenticate(stageCtx, authz, peerCertificates(ctx))
	if err != nil {
		release()
		var c call
		h.refuseAuth(&c, err)
		return nil, &vendRefusal{c.status, c.msg, c.retryAfter}
	}
	req.Identity = id
	if cc := connOf(ctx.Conn()); cc != nil {
		cc.markAuthenticated()
	}
	if h.limiter != nil {
		if wait, ok := h.limiter.allow(id.Principal.ID); !ok {
			release()
			return nil, &vendRefusal{http.StatusTooManyRequests, "rate limit exceeded for principal " + strconv.Quote(id.Principal.ID), wait}
		}
	}
	return release, nil
}

// refuseVend records a credentials request refused before it was decided
// and answers it.
func (h *Handler) refuseVend(ctx *fasthttp.RequestCtx, vr vendRoute, req *vend.Request, status int, msg string, retryAfter int) {
	status, msg, retryAfter = h.recordVendRefusal(req, status, msg, retryAfter)
	writeVendError(ctx, vr.api, status, msg, retryAfter)
}

// recordVendRefusal records a mint refused before it was decided, and
// returns the answer to give: the refusal, 429 past the source's limit
// of refusals before authentication (counted, not recorded), or 503 when
// the audit log cannot record it.
func (h *Handler) recordVendRefusal(req *vend.Request, status int, msg string, retryAfter int) (int, string, int) {
	// Refusals before authentication share the sign routes' per-source
	// limit: past it they are answered 429 and counted, not recorded.
	if req.Identity == nil && status >= 400 && status < 500 && status != http.StatusTooManyRequests {
		wait, ok, due := h.refusals.allow(req.SourceIP, status, time.Now())
		if len(due) > 0 {
			if err := h.append(due); err != nil {
				h.log.Error("recording suppressed refusals", "err", err, "records", len(due))
			}
		}
		if !ok {
			if m := h.opts.Metrics; m != nil {
				m.RefusalsSuppressed.Inc()
			}
			return http.StatusTooManyRequests, "too many refused requests from " + req.SourceIP + " (limits.refusal_limit); " + msg, wait
		}
	}
	if err := h.stages.Vendor.Refused(context.Background(), req, status, msg); err != nil {
		h.log.Error("audit log unavailable; refusing to vend", "err", err, "request_id", req.RequestID)
		return http.StatusServiceUnavailable, "audit log unavailable; nothing was vended", 1
	}
	return status, msg, retryAfter
}

// decodeUnityRequest reads GenerateTemporaryPathCredential: url and
// operation (PATH_READ, PATH_READ_WRITE, PATH_CREATE_TABLE). The body
// must be strict JSON (no two members of one name) and the names are
// matched exactly: encoding/json would also take "URL" for "url", and the
// last of two, so one body could name two locations.
func decodeUnityRequest(body []byte, req *vend.Request) error {
	v, e := strictjson.Decode(body, strictjson.Options{ValidUTF8: true, UniqueNames: true})
	if e != nil {
		if e.Kind == strictjson.DuplicateName {
			return errors.New("the body has two members named " + strconv.Quote(truncate(e.Name)) + "; each may appear once")
		}
		return errors.New("the body is not a GenerateTemporaryPathCredential JSON object: " + e.Error())
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return errors.New("the body is not a GenerateTemporaryPathCredential JSON object")
	}
	var in struct{ URL, Operation *string }
	for name, dst := range map[string]**string{"url": &in.URL, "operation": &in.Operation} {
		switch x := obj[name].(type) {
		case nil:
		case string:
			*dst = &x
		default:
			return errors.New(strconv.Quote(name) + " must be a string")
		}
	}
	if in.URL == nil || *in.URL == "" {
		return errors.New(`"url" is required: the s3:// location to vend credentials for`)
	}
	req.Location = *in.URL
	op := ""
	if in.Operation != nil {
		op = *in.Operation
	}
	switch op {
	case "PATH_READ":
		req.Access = vend.Read
	case "PATH_READ_WRITE", "PATH_CREATE_TABLE":
		req.Access = vend.ReadWrite
	default:
		return errors.New(`"operation" ` + strconv.Quote(op) + ": PATH_READ, PATH_READ_WRITE or PATH_CREATE_TABLE")
	}
	return nil
}

// VendConfig is what Iceberg clients are told beside the credentials.
type VendConfig struct {
	Region, Endpoint string
}

// icebergAnswer is a LoadCredentialsResponse.
func icebergAnswer(c *vend.Credentials, vc VendConfig) []byte {
	type storageCredential struct {
		Prefix string            `json:"prefix"`
		Config map[string]string `json:"config"`
	}
	b, _ := json.Marshal(struct {
		StorageCredentials []storageCredential `json:"storage-credentials"`
	}{[]storageCredential{{Prefix: c.Location, Config: vend.IcebergConfig(c, vc.Region, vc.Endpoint)}}})
	return b
}

// unityAnswer is a GenerateTemporaryPathCredentialResponse.
func unityAnswer(c *vend.Credentials) []byte {
	type awsCredentials struct {
		AccessKeyID     string `json:"access_key_id"`
		SecretAccessKey string `json:"secret_access_key"`
		SessionToken    string `json:"session_token"`
	}
	b, _ := json.Marshal(struct {
		AWS        awsCredentials `json:"aws_temp_credentials"`
		Expiration int64          `json:"expiration_time"`
	}{awsCredentials{c.AccessKeyID, c.SecretAccessKey, c.SessionToken}, c.Expires.UnixMilli()})
	return b
}

// writeVendError answers in the route's error model: Iceberg's
// ErrorModel, or Unity Catalog's {error_code, message}. Every 401 carries
// the sign routes' WWW-Authenticate challenge, whichever stage refused
// (authentication here, or the Mint: a token that expires too soon).
func writeVendError(ctx *fasthttp.RequestCtx, api string, status int, msg string, retryAfter int) {
	rid := ctx.Response.Header.Peek("X-Request-Id")
	id := string(rid)
	ctx.Response.Reset()
	ctx.SetStatusCode(status)
	ctx.SetContentType("application/json")
	ctx.Response.Header.Set("Cache-Control", "no-store")
	ctx.Response.Header.Set("X-Request-Id", id)
	if retryAfter > 0 {
		ctx.Response.Header.Set("Retry-After", strconv.Itoa(retryAfter))
	}
	if status == http.StatusUnauthorized {
		ctx.Response.Header.Set("WWW-Authenticate", challenge(msg))
	}
	if api == apiUnity {
		b, _ := json.Marshal(struct {
			Code    string `json:"error_code"`
			Message string `json:"message"`
		}{unityErrorCode(status), msg})
		ctx.SetBody(b)
		return
	}
	typ := errorType(status)
	if status == http.StatusNotFound {
		typ = "NoSuchTableException"
	}
	ctx.SetBody(remotesign.AppendError(nil, status, typ, msg))
}

// unityErrorCode maps a status to Unity Catalog's error codes.
func unityErrorCode(status int) string {
	switch status {
	case http.StatusBadRequest:
		return "INVALID_ARGUMENT"
	case http.StatusUnauthorized:
		return "UNAUTHENTICATED"
	case http.StatusForbidden:
		return "PERMISSION_DENIED"
	case http.StatusNotFound:
		return "NOT_FOUND"
	case http.StatusMethodNotAllowed:
		return "NOT_IMPLEMENTED"
	case http.StatusTooManyRequests:
		return "RESOURCE_EXHAUSTED"
	case http.StatusServiceUnavailable:
		return "UNAVAILABLE"
	}
	return "INTERNAL"
}
