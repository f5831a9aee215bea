package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/countersign/countersign/audit"
	"github.com/countersign/countersign/auth"
	"github.com/countersign/countersign/catalog"
	"github.com/countersign/countersign/vend"
)

// CatalogFront serves the Iceberg REST catalog routes countersign does not
// own by forwarding them to the upstream catalog (implemented by
// *catalog.Front). path is the raw path after the base path it came in
// on, base that base path. v vends a table answer's credentials when the
// client asks for them; nil never vends. rec records the refusals the
// front makes itself.
type CatalogFront interface {
	Serve(ctx *fasthttp.RequestCtx, path, base string, v catalog.Vendor, rec catalog.Refusals)
}

// TableLocator gives the location of the table a per-table sign request
// names, as the catalog gives it to this caller (implemented by
// *catalog.Front): table is the raw table path. An error whose
// Retryable() is true means the catalog could not be asked (503, nothing
// signed); any other error is the catalog's refusal (403, nothing signed).
type TableLocator interface {
	Locate(ctx context.Context, token [32]byte, authorization []byte, table string) (string, error)
	// NamespaceSeparator is the decoded separator of namespace levels in
	// the table's path, as the catalog's /v1/config names it.
	NamespaceSeparator() string
}

// serveCatalog hands a path that is not one of countersign's own routes to
// the catalog front, under the longest base path it lies under.
func (s *Server) serveCatalog(ctx *fasthttp.RequestCtx, path string) bool {
	f := s.handler.opts.Catalog
	if f == nil {
		return false
	}
	base := ""
	for _, b := range s.handler.opts.BasePaths {
		if len(b) > len(base) && strings.HasPrefix(path, b+"/") {
			base = b
		}
	}
	rec := frontRefusals{h: s.handler}
	if s.handler.stages.Vendor == nil {
		f.Serve(ctx, path[len(base):], base, nil, rec)
	} else {
		v := &frontVendor{s: s, ctx: ctx}
		f.Serve(ctx, path[len(base):], base, v, rec)
		if v.requestID != "" {
			// The id of the mint's record (or refusal's), on the answer.
			ctx.Response.Header.Set("X-Request-Id", v.requestID)
		}
	}
	if ctx.Response.StatusCode() == http.StatusRequestEntityTooLarge {
		if c := connOf(ctx.Conn()); c != nil {
			c.linger.Store(true) // the body is unread: the client reads the answer, not a reset
		}
	}
	return true
}

// frontVendor vends the credentials of one loadTable answer the catalog
// front forwards (catalog.Vendor): admitted, decided, recorded and
// refused exactly as the credentials route's (admitVend, vend.Service.Mint,
// recordVendRefusal), with the request's source address and id. A mint
// not admitted or refused leaves the answer with remote signing.
type frontVendor struct {
	s         *Server
	ctx       *fasthttp.RequestCtx
	requestID string // set once a mint was asked for
}

// VendTable implements catalog.Vendor.
func (v *frontVendor) VendTable(ctx context.Context, r catalog.VendRequest) ([]catalog.StorageCredential, error) {
	h := v.s.handler
	t := r.Table
	req := &vend.Request{Table: &t, Location: r.Location}
	if r.ReadOnly {
		req.Access = vend.Read
	}
	req.SourceIP, req.RequestID = callerIDs(v.ctx)
	v.requestID = req.RequestID
	stageCtx, cancel := context.WithTimeout(ctx, h.opts.RequestTimeout)
	defer cancel()
	release, no := v.s.admitVend(stageCtx, v.ctx, req)
	if no != nil {
		status, msg, _ := h.recordVendRefusal(req, no.status, no.msg, no.retryAfter)
		return nil, vendErr(&vend.Error{Status: status, Msg: msg})
	}
	defer release()
	c, err := h.stages.Vendor.Mint(stageCtx, req)
	if err != nil {
		var e *vend.Error
		if errors.As(err, &e) {
			return nil, vendErr(e)
		}
		return nil, err
	}
	return []catalog.StorageCredential{{Prefix: c.Location, Config: vend.IcebergConfig(c, h.opts.Vending.Region, h.opts.Vending.Endpoint)}}, nil
}

// vendErr is a refused mint as the front takes it: a refusal of the
// caller is catalog.ErrNotVendable (signed instead, nothing to log); the
// server's own failure is an error of its own.
func vendErr(e *vend.Error) error {
	if e.Status == http.StatusServiceUnavailable || e.Status == http.StatusInternalServerError {
		return errors.New("vending for the catalog's table answer: " + e.Msg)
	}
	return fmt.Errorf("%w: %s", catalog.ErrNotVendable, e.Msg)
}

// namespaceSeparator is the separator the sign routes split namespaces by.
func (h *Handler) namespaceSeparator() string {
	if t := h.opts.Tables; t != nil {
		return t.NamespaceSeparator()
	}
	return defaultNamespaceSeparator
}

// locateTable fills in the table's location from the catalog on the
// per-table route, when countersign fronts the catalog. A caller the
// catalog refuses, or a catalog that cannot be asked, gets nothing signed.
func (h *Handler) locateTable(ctx context.Context, c *call, authorization []byte) {
	t := c.route.table
	if t == nil || h.opts.Tables == nil {
		return
	}
	loc, err := h.opts.Tables.Locate(ctx, c.identity.TokenHash, authorization, c.route.tablePath)
	if err == nil {
		t.Location = loc
		return
	}
	var r interface{ Retryable() bool }
	if errors.As(err, &r) && r.Retryable() {
		h.log.Error("table location unavailable", "err", err, "request_id", c.requestID)
		c.refuse(http.StatusServiceUnavailable, err.Error()+"; nothing was signed", 1)
		return
	}
	c.refuse(http.StatusForbidden, err.Error()+"; nothing was signed", 0)
}

// frontRefusals records the catalog front's own refusals
// (catalog.Refusals) as the sign routes record theirs (finish,
// limitRefusal): one access record with the request's source address and
// id, the route's operation and table, durable before the answer. The
// front does not authenticate; the record names the principal when the
// request's credentials authenticate (the sign routes' Authenticator, as
// a malformed sign request's record does), and then it is not charged to
// the source's limit of refusals before authentication. Past that limit
// an anonymous refusal is answered 429 and counted in the source's
// summary, not recorded; when the log cannot record it, 503.
type frontRefusals struct{ h *Handler }

// Refused implements catalog.Refusals.
func (r frontRefusals) Refused(ctx *fasthttp.RequestCtx, fr catalog.Refusal) catalog.Refusal {
	h := r.h
	rec := &audit.Record{Kind: audit.KindAccess, Operation: fr.Operation, Status: fr.Status, Reason: fr.Message}
	rec.SourceIP, rec.RequestID = callerIDs(ctx)
	fr.RequestID = rec.RequestID
	if t := fr.Table; t != nil {
		rec.Table = &audit.Table{Prefix: t.Prefix, Namespace: t.Namespace, Name: t.Name}
	}
	switch fr.Status {
	case http.StatusForbidden:
		rec.Decision = audit.DecisionDeny
	case http.StatusBadRequest, http.StatusNotFound, http.StatusMethodNotAllowed, http.StatusRequestEntityTooLarge:
		rec.Decision = audit.DecisionMalformed
	default:
		rec.Decision = audit.DecisionError
	}
	id := h.frontIdentity(ctx)
	if id != nil {
		rec.Principal = &audit.Principal{Issuer: id.Principal.Issuer, ID: id.Principal.ID, Groups: id.Principal.Groups,
			JTI: id.TokenID, TokenSHA256: id.TokenHash}
	}
	recs, recorded := []*audit.Record{rec}, true
	if id == nil && fr.Status >= 400 && fr.Status < 500 && fr.Status != http.StatusTooManyRequests {
		wait, ok, due := h.refusals.allow(rec.SourceIP, fr.Status, time.Now())
		if !ok {
			if m := h.opts.Metrics; m != nil {
				m.RefusalsSuppressed.Inc()
			}
			fr.Status, fr.RetryAfter = http.StatusTooManyRequests, wait
			fr.Message = "too many refused requests from " + rec.SourceIP + " (limits.refusal_limit); " + fr.Message
			recs, recorded = recs[:0], false
		}
		recs = append(recs, due...)
	}
	if len(recs) == 0 {
		return fr
	}
	if err := h.append(recs); err != nil {
		h.log.Error("audit log unavailable; refusing the catalog request", "err", err, "request_id", rec.RequestID)
		if recorded {
			fr.Status, fr.RetryAfter = http.StatusServiceUnavailable, 1
			fr.Message = "audit log unavailable; countersign refuses this catalog request"
		}
		return fr
	}
	if m := h.opts.Metrics; m != nil && recorded {
		m.CountAuditDecision(string(rec.Decision))
	}
	return fr
}

// frontIdentity is the caller of a request to the catalog front when its
// credentials authenticate as the sign routes' do, else nil. Only a
// request with one Authorization header, or a client certificate, is
// tried.
func (h *Handler) frontIdentity(ctx *fasthttp.RequestCtx) *auth.Identity {
	authz, single := authorization(ctx)
	certs := peerCertificates(ctx)
	if !single || len(authz) == 0 && len(certs) == 0 {
		return nil
	}
	id, err := h.stages.Authenticator.Authenticate(h.deadlines.context(time.Now()), authz, certs)
	if err != nil {
		return nil
	}
	return id
}
