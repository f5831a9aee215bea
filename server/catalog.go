package server

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/valyala/fasthttp"
)

// CatalogFront serves the Iceberg REST catalog routes countersign does not
// own by forwarding them to the upstream catalog (implemented by
// *catalog.Front). path is the raw path after the base path it came in
// on, base that base path.
type CatalogFront interface {
	Serve(ctx *fasthttp.RequestCtx, path, base string)
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
	f.Serve(ctx, path[len(base):], base)
	return true
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
