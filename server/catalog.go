package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/valyala/fasthttp"

	"github.com/countersign/countersign/catalog"
	"github.com/countersign/countersign/vend"
)

// CatalogFront serves the Iceberg REST catalog routes countersign does not
// own by forwarding them to the upstream catalog (implemented by
// *catalog.Front). path is the raw path after the base path it came in
// on, base that base path. v vends a table answer's credentials when the
// client asks for them; nil never vends.
type CatalogFront interface {
	Serve(ctx *fasthttp.RequestCtx, path, base string, v catalog.Vendor)
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
	if s.handler.stages.Vendor == nil {
		f.Serve(ctx, path[len(base):], base, nil)
	} else {
		v := &frontVendor{s: s, ctx: ctx}
		f.Serve(ctx, path[len(base):], base, v)
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
