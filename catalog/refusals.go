package catalog

import (
	"net/http"
	"strings"

	"github.com/valyala/fasthttp"

	"github.com/countersign/countersign/internal/policyinput"
)

// Refusals records the requests the front refuses itself (implemented by
// the server, which holds the audit log): a route it does not forward, a
// spelling it refuses, a body too large, a location change, a table
// location outside the operator's, a budget spent. Refused records r
// durably and returns the answer to give: r, with the request's id in
// RequestID; or, instead, 429 when the caller's source is past its limit
// of refusals before authentication (counted, not recorded one by one),
// or 503 when the audit log cannot record it. Requests the catalog itself
// answers are not countersign's decisions and are not recorded. nil
// records nothing.
type Refusals interface {
	Refused(ctx *fasthttp.RequestCtx, r Refusal) Refusal
}

// Refusal is one request the front refuses, as the audit log records it.
type Refusal struct {
	// Operation is the route's operationId (e.g. "updateTable"), or
	// OperationUnknown for a request-target that parsed to no route.
	Operation string
	// Table is the table or namespace the route names (Name "" for a
	// namespace, Namespace nil for neither); nil when no route parsed.
	Table      *policyinput.Table
	Status     int
	Message    string
	RetryAfter int
	// RequestID is the request's id, set by Refused, for X-Request-Id.
	RequestID string
}

// OperationUnknown is the operation of a refusal whose request-target
// parsed to no route.
const OperationUnknown = "unknown route"

// refusalOf is the refusal of a request on route rt (nil: no route
// parsed).
func refusalOf(rt *Route, status int, msg string, retryAfter int) Refusal {
	r := Refusal{Operation: OperationUnknown, Status: status, Message: msg, RetryAfter: retryAfter}
	if rt != nil && rt.spec != nil {
		r.Operation = rt.OperationID()
		if rt.HasPrefix || rt.Namespace != nil || rt.Name != "" {
			r.Table = &policyinput.Table{Prefix: rt.Prefix, Namespace: rt.Namespace, Name: rt.Name}
		}
	}
	return r
}

// refuse records a refusal of the front's own (rec nil records nothing)
// and answers it in Iceberg's error model, typ its error type unless the
// recording changed the answer.
func (f *Front) refuse(ctx *fasthttp.RequestCtx, rec Refusals, r Refusal, typ string) {
	asked := r.Status
	if rec != nil {
		r = rec.Refused(ctx, r)
	}
	if r.Status != asked {
		typ = exceptionType(r.Status)
	}
	writeError(ctx, r.Status, typ, r.Message, r.RetryAfter)
	if r.RequestID != "" {
		ctx.Response.Header.Set("X-Request-Id", r.RequestID)
	}
}

// exceptionType is the error type of a status the recording answers with.
func exceptionType(status int) string {
	switch status {
	case http.StatusTooManyRequests:
		return "TooManyRequestsException"
	case http.StatusServiceUnavailable:
		return "ServiceUnavailableException"
	}
	return strings.ReplaceAll(http.StatusText(status), " ", "") + "Exception"
}
