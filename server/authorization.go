package server

import "github.com/valyala/fasthttp"

// errTwoAuthorizations is the refusal of a request with several
// Authorization headers.
const errTwoAuthorizations = "the request has more than one Authorization header; send exactly one"

// authorization returns the request's Authorization header value (nil when
// there is none). single is false when the request has more than one:
// Authorization is not a list (RFC 9110 §11.6.2), and which one a reader
// takes (countersign reads the first, a catalog behind the front may read
// the last) would decide who the caller is.
func authorization(ctx *fasthttp.RequestCtx) (value []byte, single bool) {
	switch all := ctx.Request.Header.PeekAll(fasthttp.HeaderAuthorization); len(all) {
	case 0:
		return nil, true
	case 1:
		return all[0], true
	}
	return nil, false
}
