package catalog

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/valyala/fasthttp"

	"github.com/countersign/countersign/auth"
	"github.com/countersign/countersign/internal/policyinput"
	"github.com/countersign/countersign/remotesign"
)

// hopByHop are the connection-level headers a proxy does not forward
// (RFC 9110 §7.6.1), in canonical form.
var hopByHop = map[string]bool{
	"Connection": true, "Keep-Alive": true, "Proxy-Connection": true,
	"Proxy-Authenticate": true, "Proxy-Authorization": true, "Te": true,
	"Trailer": true, "Transfer-Encoding": true, "Upgrade": true,
	"Host": true, "Content-Length": true,
}

// rerouting are the headers with which common HTTP frameworks let a
// request name another method (Jersey's and Spring's method override,
// Google's X-HTTP-Method) or another path (IIS URL Rewrite, Symfony and
// Zend's X-Original-URL, X-Rewrite-URL) than its request line's.
var rerouting = []string{
	"X-HTTP-Method-Override", "X-HTTP-Method", "X-Method-Override",
	"X-Original-URL", "X-Rewrite-URL", "X-Original-Method",
}

// accessDelegation is the header in which a client names the access
// mechanisms it supports (the REST spec's X-Iceberg-Access-Delegation).
const accessDelegation = "X-Iceberg-Access-Delegation"

// Serve forwards one request to the upstream catalog and answers it. base
// is the configured base path the request came in on ("" for the root);
// the request-target is parsed, as received, from the request itself
// (parseRequest): the path argument, the server's view of it, decides
// nothing here. v vends a table answer's credentials when the client asks
// for them (nil never vends). rec records every refusal the front makes
// itself, before it is answered (refusals.go; nil records none).
func (f *Front) Serve(ctx *fasthttp.RequestCtx, _, base string, v Vendor, rec Refusals) {
	select {
	case f.inflight <- struct{}{}:
		defer func() { <-f.inflight }()
	default:
		f.refuse(ctx, rec, refusalOf(nil, http.StatusServiceUnavailable,
			"countersign is forwarding its limit of "+strconv.Itoa(cap(f.inflight))+" catalog requests at once (catalog.max_concurrency)", 1), "ServiceUnavailableException")
		return
	}
	if len(ctx.Request.Header.PeekAll(fasthttp.HeaderAuthorization)) > 1 {
		// The front authenticates and learns by the first, the catalog
		// might act on the last: two callers in one request.
		f.refuse(ctx, rec, refusalOf(nil, http.StatusBadRequest,
			"the request has more than one Authorization header; send exactly one", 0), "BadRequestException")
		return
	}
	for k := range ctx.Request.Header.All() {
		// CGI-style servers read "X_HTTP_Method_Override" as the same
		// header as "X-HTTP-Method-Override".
		h := string(k)
		if n := strings.ReplaceAll(h, "_", "-"); slices.ContainsFunc(rerouting, func(r string) bool { return strings.EqualFold(r, n) }) {
			// The front decides by the request's own method and target;
			// a catalog (or a framework in front of it) that honours one
			// of these would execute another route than the one decided.
			f.refuse(ctx, rec, refusalOf(nil, http.StatusBadRequest,
				"the request has a "+h+" header, which would make a catalog execute another method or path than the request's; countersign forwards only the request's own method and target: send the request without it", 0), "BadRequestException")
			return
		}
	}
	method := string(ctx.Method())
	rt, rerr := f.parseRequest(ctx, base)
	if rerr != nil {
		typ := "BadRequestException"
		switch {
		case len(rerr.Allow) > 0:
			typ = "MethodNotAllowedException"
		case rerr.Status == http.StatusNotFound:
			typ = "NoSuchRouteException"
		}
		f.refuse(ctx, rec, refusalOf(nil, rerr.Status, rerr.Msg, 0), typ) // no route parsed
		if len(rerr.Allow) > 0 && ctx.Response.StatusCode() == rerr.Status {
			ctx.Response.Header.Set("Allow", strings.Join(rerr.Allow, ", "))
		}
		return
	}
	path := rt.escapedPath(f.NamespaceSeparator()) // for errors and logs
	if rt.spec.treat == treatOwn {
		f.refuse(ctx, rec, refusalOf(&rt, http.StatusNotFound,
			"countersign does not forward "+rt.OperationID()+" to the catalog: signing, and credential vending where configured, are served by countersign itself on their canonical routes", 0), "NoSuchRouteException")
		return
	}
	// The bodies the front reads are read whole (body.go); the others
	// stream to the catalog.
	reads := changeOf(&rt, path).kind != changeNone || rt.Op() == OpRenameTable
	if reads {
		if msg := bodyEncoding(ctx); msg != "" {
			f.refuse(ctx, rec, refusalOf(&rt, http.StatusBadRequest, msg, 0), "BadRequestException")
			return
		}
	}
	rb, refused := f.requestBody(ctx, reads)
	if refused != nil {
		f.refuse(ctx, rec, refusalOf(&rt, refused.status, refused.msg, refused.retryAfter), "BadRequestException")
		return
	}
	defer rb.close()
	body := rb.whole
	if reads && !isJSONMediaType(ctx) && slices.ContainsFunc(body, func(c byte) bool { return c >= 0x80 }) {
		// Without a charset a servlet reads a body that is not
		// application/json as ISO-8859-1 (the reference RESTCatalogServer
		// creates "Ã©" from the UTF-8 "é"); ASCII reads the same either way.
		f.refuse(ctx, rec, refusalOf(&rt, http.StatusBadRequest,
			"the request body has non-ASCII characters but its Content-Type is "+quoteShort(string(ctx.Request.Header.ContentType()))+
				", which a catalog may read as ISO-8859-1; send Content-Type: application/json", 0), "BadRequestException")
		return
	}
	if op := rt.Op(); op == OpCreateTable || op == OpRegisterTable {
		// createTable, registerTable: the table's name is in the body. The
		// catalog may read another "name" than encoding/json would, and
		// countersign would learn one table's location under the name of
		// another; refused before the catalog acts on it.
		if err := checkStrict(body); err != nil {
			f.refuse(ctx, rec, refusalOf(&rt, http.StatusBadRequest, "the table request's body "+err.Error(), 0), "BadRequestException")
			return
		}
		if doc, err := decodeMembers(body); err == nil {
			if err := spelledExactly(doc, "name", "location", "metadata-location"); err != nil {
				f.refuse(ctx, rec, refusalOf(&rt, http.StatusBadRequest, "the table request's body "+err.Error(), 0), "BadRequestException")
				return
			}
		}
	}
	if !f.checkTableChange(ctx, rec, method, path, &rt, body) {
		return // a location the operator has not given (tablechange.go)
	}
	reqCtx, cancel := context.WithTimeout(context.Background(), f.cfg.Timeout)
	req, err := http.NewRequestWithContext(reqCtx, method, f.upstreamURL(&rt).String(), rb.reader())
	if err != nil {
		cancel()
		f.refuse(ctx, rec, refusalOf(&rt, http.StatusBadRequest, "cannot forward this request: "+err.Error(), 0), "BadRequestException")
		return
	}
	req.URL = f.upstreamURL(&rt)
	req.ContentLength = rb.length
	if rb.length == 0 {
		req.Body = http.NoBody
	}
	f.forwardHeaders(ctx, req)
	stream := rt.spec.treat == treatStream
	if !stream {
		// The front reads these answers: let the transport negotiate (and
		// undo) compression instead of the client.
		req.Header.Del("Accept-Encoding")
	}
	resp, err := f.client.Do(req)
	if err != nil {
		cancel()
		f.upstreamFailed(ctx, method, path, err)
		return
	}
	if resp.StatusCode >= 200 && resp.StatusCode <= 299 {
		f.forgetDropped(&rt, body)
	}
	if stream {
		f.stream(ctx, resp, cancel)
		return
	}
	defer cancel()
	defer resp.Body.Close()
	data, release, err := f.readAnswer(resp)
	defer release()
	switch {
	case errors.Is(err, errAnswerBudget):
		f.refuse(ctx, rec, refusalOf(&rt, http.StatusServiceUnavailable, fmt.Sprintf(
			"countersign is reading its limit of %d bytes of catalog answers at once (catalog.answer_budget_bytes); retry", f.cfg.AnswerBudgetBytes), 1), "ServiceUnavailableException")
		return
	case errors.Is(err, errAnswerTooLarge):
		writeError(ctx, http.StatusBadGateway, "BadGatewayException", fmt.Sprintf(
			"the catalog's answer to %s %s is larger than catalog.max_response_bytes (%d); countersign reads every answer that may carry credentials whole to remove them",
			method, truncate(path), f.cfg.MaxResponseBytes), 0)
		return
	case err != nil:
		f.upstreamFailed(ctx, method, path, err)
		return
	}
	ok := resp.StatusCode >= 200 && resp.StatusCode <= 299
	if len(bytes.TrimSpace(data)) == 0 && (!ok || rt.spec.treat != treatTable || method == http.MethodHead) {
		// An empty answer (204, 304, an error without a body) carries
		// nothing to remove.
		f.answerHeaders(ctx, resp)
		return
	}
	var out []byte
	if ok {
		out, err = f.answer(ctx, &rt, data, v)
	} else {
		// An error answer is read too: in Iceberg's error model it is
		// cleaned like any other. One the front cannot read (not JSON, a
		// BOM, a member spelled twice) is withheld, not forwarded: a
		// client's parser may read credentials in it where the front
		// could not look.
		if out, _, _, err = inspect(data); err != nil {
			writeError(ctx, resp.StatusCode, "CatalogErrorWithheldException", fmt.Sprintf(
				"the catalog answered %d to %s %s with a body countersign cannot read (%v); it is withheld because it could carry credentials",
				resp.StatusCode, method, truncate(path), err), 0)
			return
		}
	}
	if err != nil && f.refusedAnswer(ctx, rec, &rt, err) {
		return
	}
	if err != nil {
		f.log.Error("catalog answer refused", "method", method, "path", truncate(path), "err", err)
		writeError(ctx, http.StatusBadGateway, "BadGatewayException",
			"countersign cannot read the catalog's answer to "+method+" "+truncate(path)+": "+err.Error(), 0)
		return
	}
	f.answerHeaders(ctx, resp)
	ctx.SetBody(out)
}

// answerHeaders copies a read answer's status and headers; the answer is
// countersign's (cleaned, maybe rewritten for one caller), so no cache
// may keep it, whatever the catalog said.
func (f *Front) answerHeaders(ctx *fasthttp.RequestCtx, resp *http.Response) {
	copyHeaders(ctx, resp.Header)
	ctx.Response.Header.Del("Expires")
	ctx.Response.Header.Del("Pragma")
	ctx.Response.Header.Set("Cache-Control", "no-store")
	ctx.SetStatusCode(resp.StatusCode)
}

// forwardHeaders copies the caller's headers to the upstream request,
// except connection headers and the forwarding headers: countersign
// vouches for none a client wrote. X-Forwarded-For is the peer countersign
// saw.
func (f *Front) forwardHeaders(ctx *fasthttp.RequestCtx, req *http.Request) {
	for k, v := range ctx.Request.Header.All() {
		name := http.CanonicalHeaderKey(string(k))
		if hopByHop[name] || forwarding(name) {
			continue
		}
		req.Header.Add(name, string(v))
	}
	if ip := ctx.RemoteIP(); ip != nil && !ip.IsUnspecified() {
		req.Header.Set("X-Forwarded-For", ip.String())
	}
}

// forwarding reports whether a canonical header name is one a proxy
// sets: X-Forwarded-*, Forwarded, X-Real-Ip, and their kin.
func forwarding(name string) bool {
	switch name {
	case "Forwarded", "X-Real-Ip", "X-Client-Ip", "True-Client-Ip", "X-Original-Forwarded-For", "Via":
		return true
	}
	return strings.HasPrefix(name, "X-Forwarded-")
}

// answer applies the route's treatment to a 2xx answer body.
func (f *Front) answer(ctx *fasthttp.RequestCtx, rt *Route, data []byte, v Vendor) ([]byte, error) {
	authz := ctx.Request.Header.Peek("Authorization")
	token, haveToken := auth.TokenHash(authz)
	sep := f.NamespaceSeparator()
	switch rt.spec.treat {
	case treatConfig:
		out, doc, _, err := inspect(data)
		if err != nil {
			return nil, err
		}
		if err := f.checkSeparator(doc); err != nil {
			return nil, err
		}
		return out, nil
	case treatTable:
		tr := *rt
		if !rt.hasTable() { // createTable, registerTable: the name is in the body
			req, _ := decodeMembers(ctx.PostBody()) // strict: Serve checked it
			name := stringMember(req, "name")
			if name == "" {
				return nil, errors.New("the table request names no table")
			}
			if msg := checkValue(name, false); msg != "" {
				return nil, errors.New("the table's name " + quoteShort(name) + " " + msg)
			}
			tr = rt.tableRoute(name)
		} else {
			tr = rt.tableRoute(rt.Name)
		}
		table := tr.escapedPath(sep)
		s := signing{signerURI: f.signerURI(ctx, rt), endpoint: tableEndpoint(table)}
		doc, err := decodeObject(data)
		if err != nil {
			return nil, err
		}
		loc := tableLocation(doc)
		if err := f.checkLocation(ctx, authz, table, loc); err != nil {
			return nil, err
		}
		if v != nil && wantsVending(ctx.Request.Header.Peek(accessDelegation)) && loc != "" {
			s.credentials = f.vend(v, authz, table, loc)
		}
		out, loc, err := rewriteTable(data, s)
		if err != nil {
			return nil, err
		}
		if haveToken {
			f.locations.learn(token, table, loc)
		}
		return out, nil
	case treatCommit:
		out, doc, _, err := inspect(data)
		if err != nil {
			return nil, err
		}
		if tr := rt.tableRoute(rt.Name); haveToken && f.checkLocation(ctx, authz, tr.escapedPath(sep), tableLocation(doc)) == nil {
			f.locations.learn(token, tr.escapedPath(sep), tableLocation(doc)) // the commit's new metadata
		}
		return out, nil
	default:
		out, _, _, err := inspect(data)
		return out, err
	}
}

// vend asks the Vendor for credentials; nil (sign instead) on refusal or
// error.
func (f *Front) vend(v Vendor, authz []byte, table, loc string) []StorageCredential {
	t, ok := f.parseTable(table)
	if !ok {
		return nil
	}
	t.Location = loc
	vctx, cancel := context.WithTimeout(context.Background(), f.cfg.ResponseTimeout)
	defer cancel()
	creds, err := v.VendTable(vctx, VendRequest{Authorization: authz, Table: t, Location: loc})
	switch {
	case errors.Is(err, ErrNotVendable):
		return nil
	case err != nil:
		f.log.Error("vending failed; answering with remote signing", "table", truncate(table), "err", err)
		return nil
	}
	if len(creds) == 0 {
		return nil
	}
	return creds
}

// wantsVending reports whether X-Iceberg-Access-Delegation lists
// vended-credentials.
func wantsVending(h []byte) bool {
	for _, m := range strings.Split(string(h), ",") {
		if strings.EqualFold(strings.TrimSpace(m), "vended-credentials") {
			return true
		}
	}
	return false
}

// stream copies an answer through unchanged, body streamed; cancel ends
// the upstream exchange once the body is sent (or the client is gone).
func (f *Front) stream(ctx *fasthttp.RequestCtx, resp *http.Response, cancel context.CancelFunc) {
	copyHeaders(ctx, resp.Header)
	ctx.SetStatusCode(resp.StatusCode)
	size := int(resp.ContentLength)
	if resp.ContentLength < 0 || resp.Uncompressed {
		size = -1
	}
	ctx.SetBodyStream(&cancelOnClose{ReadCloser: resp.Body, cancel: cancel}, size)
}

type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (c *cancelOnClose) Close() error {
	err := c.ReadCloser.Close()
	c.cancel()
	return err
}

func copyHeaders(ctx *fasthttp.RequestCtx, h http.Header) {
	for name, vs := range h {
		if hopByHop[name] {
			continue
		}
		for _, v := range vs {
			ctx.Response.Header.Add(name, v)
		}
	}
}

// parseRequest parses the caller's request-target, as received, after
// the base path it came in on.
func (f *Front) parseRequest(ctx *fasthttp.RequestCtx, base string) (Route, *RouteError) {
	target := string(ctx.Request.Header.RequestURI())
	rest, ok := strings.CutPrefix(target, base)
	if !ok || !strings.HasPrefix(target, "/") {
		return Route{}, badTarget("the request-target must be a path (origin-form); countersign forwards no CONNECT, absolute-form or asterisk requests")
	}
	rt, err := parseRoute(string(ctx.Method()), rest, f.NamespaceSeparator())
	rt.base = base
	return rt, err
}

// upstreamURL is the upstream URL of a route: the configured upstream's
// scheme, host and base path, then the route's segments escaped by
// escapeSegment, and its canonical query.
func (f *Front) upstreamURL(rt *Route) *url.URL {
	u := *f.upstream
	sep := f.NamespaceSeparator()
	u.Path = f.upstream.Path + rt.decodedPath(sep)
	u.RawPath = f.upstream.EscapedPath() + rt.escapedPath(sep)
	u.RawQuery = rt.rawQuery()
	u.ForceQuery = false
	return &u
}

// signerURI is countersign's base URI for the table answers' s3.signer.uri:
// catalog.public_url, or else the address of the listener the request
// arrived on (the connection's local address, never the caller's Host
// header), with the configured base path the request came in on.
func (f *Front) signerURI(ctx *fasthttp.RequestCtx, rt *Route) string {
	if f.public != nil {
		return f.public.String()
	}
	scheme := "http"
	if ctx.IsTLS() {
		scheme = "https"
	}
	host := "localhost"
	if a, ok := ctx.LocalAddr().(*net.TCPAddr); ok {
		host = net.JoinHostPort(a.IP.String(), strconv.Itoa(a.Port))
	}
	return scheme + "://" + host + rt.base
}

// upstreamFailed answers a request the upstream did not answer: 504 when
// it was too slow, 502 when it could not be reached or broke off.
func (f *Front) upstreamFailed(ctx *fasthttp.RequestCtx, method, path string, err error) {
	status, typ, what := http.StatusBadGateway, "BadGatewayException", "could not be reached"
	var ne net.Error
	var op *net.OpError
	switch {
	case errors.As(err, &op) && op.Op == "dial":
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		status, typ, what = http.StatusGatewayTimeout, "GatewayTimeoutException", "did not answer in time"
	}
	f.log.Error("catalog upstream failed", "method", method, "path", truncate(path), "status", status, "err", err)
	writeError(ctx, status, typ, fmt.Sprintf("the catalog at %s %s (%s %s): %s", f.upstream.Host, what, method, truncate(path), errText(err)), 1)
}

// errText is an upstream error without the URL (which url.Error repeats).
func errText(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return err.Error()
}

// fetchLocation asks the catalog for the table's metadata with the
// caller's Authorization: its location, a RefusedError or an
// UnavailableError.
func (f *Front) fetchLocation(ctx context.Context, authorization []byte, table string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, f.cfg.ResponseTimeout)
	defer cancel()
	rt, rerr := parseRoute(http.MethodGet, table+"?snapshots=refs", f.NamespaceSeparator())
	if rerr != nil || rt.Op() != OpLoadTable {
		msg := "not a table path in the canonical spelling"
		if rerr != nil {
			msg = rerr.Msg
		}
		return "", &RefusedError{Table: table, Status: http.StatusBadRequest, Message: msg}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, f.upstreamURL(&rt).String(), nil)
	if err != nil {
		return "", &UnavailableError{Table: table, Err: err}
	}
	req.URL = f.upstreamURL(&rt)
	if len(authorization) > 0 {
		req.Header.Set("Authorization", string(authorization))
	}
	req.Header.Set("Accept", "application/json")
	resp, err := f.client.Do(req)
	if err != nil {
		return "", &UnavailableError{Table: table, Err: errors.New(errText(err))}
	}
	defer resp.Body.Close()
	data, release, err := f.readAnswer(resp)
	defer release()
	if err != nil {
		return "", &UnavailableError{Table: table, Err: err}
	}
	switch {
	case resp.StatusCode >= 400 && resp.StatusCode < 500 && resp.StatusCode != http.StatusTooManyRequests && resp.StatusCode != http.StatusRequestTimeout:
		return "", &RefusedError{Table: table, Status: resp.StatusCode, Message: errorMessage(data)}
	case resp.StatusCode != http.StatusOK:
		return "", &UnavailableError{Table: table, Err: fmt.Errorf("HTTP %d", resp.StatusCode)}
	}
	doc, err := decodeObject(data)
	if err != nil {
		return "", &UnavailableError{Table: table, Err: err}
	}
	loc := tableLocation(doc)
	if loc == "" {
		return "", &UnavailableError{Table: table, Err: errors.New("the table's metadata has no location")}
	}
	return loc, nil
}

// errorMessage is the message of Iceberg's error model, if data is one.
func errorMessage(data []byte) string {
	var e struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(data, &e) != nil {
		return ""
	}
	return truncate(e.Error.Message)
}

// writeError answers in Iceberg's error model. A refusal of the front's
// own goes through refuse (refusals.go), which records it first; only
// what the catalog's failure or answer causes (502, 504, a withheld error
// answer) is written here directly.
func writeError(ctx *fasthttp.RequestCtx, status int, typ, msg string, retryAfter int) {
	ctx.Response.Reset()
	ctx.SetStatusCode(status)
	ctx.SetContentType("application/json")
	ctx.Response.Header.Set("Cache-Control", "no-store")
	if retryAfter > 0 {
		ctx.Response.Header.Set("Retry-After", strconv.Itoa(retryAfter))
	}
	ctx.SetBody(remotesign.AppendError(nil, status, typ, msg))
}

func truncate(s string) string {
	if len(s) > 200 {
		return s[:200] + "..."
	}
	return s
}

// forgetDropped forgets the known location of a table the catalog just
// dropped or unregistered on this request (its location is free for
// another table), and moves a renamed table's to its new name.
func (f *Front) forgetDropped(rt *Route, body []byte) {
	switch rt.Op() {
	case OpDropTable, OpUnregisterTable:
		f.known.forget(tableKey(policyinput.Table{Prefix: rt.Prefix, Namespace: rt.Namespace, Name: rt.Name}))
	case OpRenameTable:
		// Read as strictly as an answer: a body another parser reads as
		// other tables must not move a table's location.
		src, ok1 := renamed(body, "source")
		dst, ok2 := renamed(body, "destination")
		if ok1 && ok2 {
			src.Prefix, dst.Prefix = rt.Prefix, rt.Prefix
			d := rt.tableRoute(dst.Name)
			d.Namespace = dst.Namespace
			f.known.move(tableKey(src), tableKey(dst), d.escapedPath(f.NamespaceSeparator()))
		}
	}
}

// renamed reads a renameTable body's source or destination identifier,
// every member spelled exactly.
func renamed(body []byte, member string) (policyinput.Table, bool) {
	if checkStrict(body) != nil {
		return policyinput.Table{}, false
	}
	doc, err := decodeMembers(body)
	if err != nil || spelledExactly(doc, member) != nil {
		return policyinput.Table{}, false
	}
	id, err := decodeMembers(doc[member])
	if err != nil || spelledExactly(id, "namespace", "name") != nil {
		return policyinput.Table{}, false
	}
	var ns []string
	if json.Unmarshal(id["namespace"], &ns) != nil {
		return policyinput.Table{}, false
	}
	name := stringMember(id, "name")
	return policyinput.Table{Namespace: ns, Name: name}, name != "" && len(ns) > 0
}

// bodyEncoding is "" when a body the front reads is read by the catalog
// as the same text: no Content-Encoding, and UTF-8 if a charset is named.
// A servlet catalog decodes a body by the Content-Type's charset
// (Iceberg's RESTCatalogServlet reads request.getReader()): as ISO-8859-1
// the name "ä" the front checks and learns is the table "Ã¤" the catalog
// creates.
func bodyEncoding(ctx *fasthttp.RequestCtx) string {
	if ce := strings.TrimSpace(string(ctx.Request.Header.Peek(fasthttp.HeaderContentEncoding))); ce != "" && !strings.EqualFold(ce, "identity") {
		return "the request body has Content-Encoding " + quoteShort(ce) + "; countersign reads this route's body to decide it, and accepts it only unencoded"
	}
	ct := string(ctx.Request.Header.ContentType())
	if ct == "" {
		return ""
	}
	_, params, err := mime.ParseMediaType(ct)
	if err != nil {
		return "the request's Content-Type " + quoteShort(ct) + " does not parse: " + err.Error()
	}
	if cs, ok := params["charset"]; ok && !strings.EqualFold(cs, "utf-8") && !strings.EqualFold(cs, "utf8") {
		return "the request body's charset is " + quoteShort(cs) + "; countersign reads this route's body as UTF-8 and accepts only charset=utf-8 (or none)"
	}
	return ""
}

// isJSONMediaType reports whether the request's Content-Type is
// application/json (or a +json type), which servlet containers read as
// UTF-8 when no charset is named.
func isJSONMediaType(ctx *fasthttp.RequestCtx) bool {
	mt, _, err := mime.ParseMediaType(string(ctx.Request.Header.ContentType()))
	return err == nil && (mt == "application/json" || strings.HasPrefix(mt, "application/") && strings.HasSuffix(mt, "+json"))
}
