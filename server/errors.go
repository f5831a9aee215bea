package server

import (
	"net/http"
	"strconv"

	"github.com/valyala/fasthttp"

	"github.com/countersign/countersign/remotesign"
)

// errorType maps an HTTP status to the exception name of Iceberg's REST
// error model, which clients show to users.
func errorType(status int) string {
	switch status {
	case http.StatusBadRequest, http.StatusRequestEntityTooLarge, http.StatusRequestHeaderFieldsTooLarge:
		return "BadRequestException"
	case http.StatusUnauthorized:
		return "NotAuthorizedException"
	case http.StatusForbidden:
		return "ForbiddenException"
	case http.StatusNotFound:
		return "NoSuchRouteException"
	case http.StatusMethodNotAllowed:
		return "MethodNotAllowedException"
	case http.StatusTooManyRequests:
		return "TooManyRequestsException"
	case http.StatusServiceUnavailable:
		return "ServiceUnavailableException"
	}
	return "InternalServerError"
}

// writeError answers with Iceberg's error model. retryAfter > 0 adds a
// Retry-After header, which Iceberg's Java client requires before it
// retries a 503.
func writeError(ctx *fasthttp.RequestCtx, status int, msg string, retryAfter int) {
	ctx.Response.Reset()
	ctx.SetStatusCode(status)
	ctx.SetContentType("application/json")
	// no-cache on every answer of the sign routes, as on signatures
	// (docs/design.md): one value a client or proxy can rely on.
	ctx.Response.Header.Set("Cache-Control", "no-cache")
	if retryAfter > 0 {
		ctx.Response.Header.Set("Retry-After", strconv.Itoa(retryAfter))
	}
	ctx.SetBody(remotesign.AppendError(ctx.Response.Body()[:0], status, errorType(status), msg))
}
