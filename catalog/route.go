package catalog

import (
	"net/http"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// The front parses every request-target once into a Route: an operation
// of Iceberg's REST catalog API (open-api/rest-catalog-open-api.yaml)
// with its decoded parameters. Only what parses is forwarded, and what is
// forwarded is built from the Route (Route.escapedPath, Route.rawQuery),
// so the catalog receives exactly the route the front classified, in one
// spelling.
//
// The canonical spelling, the only one accepted:
//
//   - origin-form: the request-target starts with "/" (no CONNECT
//     authority-form, no absolute-form, no "*"), no fragment;
//   - no empty segment, no "." or ".." segment;
//   - in a segment, the RFC 3986 unreserved characters A-Z a-z 0-9 - . _ ~
//     appear as themselves and every other byte percent-encoded with
//     UPPERCASE hex ("%1F", never "%1f"); an escape of an unreserved
//     character ("%2E", "%6E") is refused, as is any other raw character
//     (";", "\", "+", ":", "@", ...);
//   - a decoded parameter is valid UTF-8 with no control character (C0,
//     DEL, C1) and none of / \ % ; ? # (a catalog that decodes twice, or
//     decodes before it routes, would route those differently); namespace
//     levels are split by the catalog's separator and each is non-empty
//     and not "." or "..";
//   - {prefix} is one segment and not "v1" in any case (routers that
//     collapse a repeated /v1 would drop it), and a path that matches
//     another route when its literals are compared case-insensitively
//     (/v1/NAMESPACES/namespaces) is refused as ambiguous;
//   - the query holds only the parameters the spec defines for the
//     operation, each at most once; it is decoded and re-encoded in the
//     spec's order with the same escaping as path segments.
//
// Any other spelling is 400; a path of no route is 404; a route without
// the method is 405 with Allow. countersign's own routes (the sign routes
// and loadCredentials) parse, and the front never forwards them.

// Operation is an operation of the Iceberg REST catalog API (the spec's
// operationId).
type Operation uint8

// Operations of the REST catalog spec, plus the legacy sign route.
const (
	OpGetConfig Operation = iota + 1
	OpGetToken
	OpListNamespaces
	OpCreateNamespace
	OpLoadNamespace
	OpNamespaceExists
	OpDropNamespace
	OpUpdateProperties
	OpListTables
	OpCreateTable
	OpRegisterTable
	OpLoadTable
	OpUpdateTable
	OpDropTable
	OpTableExists
	OpUnregisterTable
	OpLoadCredentials
	OpSignRequest
	OpRenameTable
	OpReportMetrics
	OpPlanTableScan
	OpFetchPlanningResult
	OpCancelPlanning
	OpFetchScanTasks
	OpCommitTransaction
	OpListViews
	OpCreateView
	OpLoadView
	OpReplaceView
	OpDropView
	OpViewExists
	OpRenameView
	OpRegisterView
	OpListFunctions
	OpLoadFunction
	OpLegacySign
)

// treatment is what the front does with a route's answer.
type treatment uint8

const (
	// treatInspect: every answer is read (within the shared answer budget)
	// and a JSON answer loses its credentials (storage-credentials, config
	// keys off the allow-list). The default.
	treatInspect treatment = iota
	// treatStream: the answer is streamed unread. Only operations whose
	// answer schema cannot carry a credential: no body (the HEAD exists
	// routes; drops, renames, metrics, commitTransaction and cancelPlanning
	// answer 204), lists of identifiers or property names and a page token
	// (listNamespaces, listTables, listViews, listFunctions,
	// updateProperties), and the OAuth2 token answer, which is the
	// caller's own token.
	treatStream
	// treatConfig: getConfig. Inspected, and the namespace separator is
	// learned from it.
	treatConfig
	// treatTable: a LoadTableResult (loadTable, createTable,
	// registerTable), rewritten for remote signing; the table's location
	// is learned from it.
	treatTable
	// treatCommit: updateTable. Inspected; the table's new location is
	// learned from its metadata.
	treatCommit
	// treatOwn: countersign's own routes (sign, credentials): never
	// forwarded.
	treatOwn
)

// routeSpec is one (method, path template) of the allow-list.
type routeSpec struct {
	op     Operation
	name   string // the spec's operationId
	method string
	// path is the template after "/v1/" without {prefix}; "{...}" are
	// parameters.
	path string
	// prefixed: the template takes the optional {prefix} after /v1.
	prefixed bool
	query    []string
	treat    treatment
	segs     []string
}

var routeSpecs = func() []*routeSpec {
	const (
		ns    = "namespaces/{namespace}"
		table = ns + "/tables/{table}"
		view  = ns + "/views/{view}"
	)
	specs := []*routeSpec{
		{op: OpGetConfig, name: "getConfig", method: "GET", path: "config", query: []string{"warehouse"}, treat: treatConfig},
		{op: OpGetToken, name: "getToken", method: "POST", path: "oauth/tokens", treat: treatStream},
		{op: OpLegacySign, name: "signRequest (legacy)", method: "POST", path: "aws/s3/sign", treat: treatOwn},
		{op: OpListNamespaces, name: "listNamespaces", method: "GET", path: "namespaces", prefixed: true, query: []string{"pageToken", "pageSize", "parent"}, treat: treatStream},
		{op: OpCreateNamespace, name: "createNamespace", method: "POST", path: "namespaces", prefixed: true, treat: treatInspect},
		{op: OpLoadNamespace, name: "loadNamespaceMetadata", method: "GET", path: ns, prefixed: true, treat: treatInspect},
		{op: OpNamespaceExists, name: "namespaceExists", method: "HEAD", path: ns, prefixed: true, treat: treatStream},
		{op: OpDropNamespace, name: "dropNamespace", method: "DELETE", path: ns, prefixed: true, treat: treatStream},
		{op: OpUpdateProperties, name: "updateProperties", method: "POST", path: ns + "/properties", prefixed: true, treat: treatStream},
		{op: OpListTables, name: "listTables", method: "GET", path: ns + "/tables", prefixed: true, query: []string{"pageToken", "pageSize"}, treat: treatStream},
		{op: OpCreateTable, name: "createTable", method: "POST", path: ns + "/tables", prefixed: true, treat: treatTable},
		{op: OpRegisterTable, name: "registerTable", method: "POST", path: ns + "/register", prefixed: true, treat: treatTable},
		{op: OpLoadTable, name: "loadTable", method: "GET", path: table, prefixed: true, query: []string{"snapshots", "referenced-by"}, treat: treatTable},
		{op: OpUpdateTable, name: "updateTable", method: "POST", path: table, prefixed: true, treat: treatCommit},
		{op: OpDropTable, name: "dropTable", method: "DELETE", path: table, prefixed: true, query: []string{"purgeRequested"}, treat: treatStream},
		{op: OpTableExists, name: "tableExists", method: "HEAD", path: table, prefixed: true, treat: treatStream},
		{op: OpUnregisterTable, name: "unregisterTable", method: "POST", path: table + "/unregister", prefixed: true, treat: treatInspect},
		{op: OpLoadCredentials, name: "loadCredentials", method: "GET", path: table + "/credentials", prefixed: true, query: []string{"planId", "referenced-by"}, treat: treatOwn},
		{op: OpSignRequest, name: "signRequest", method: "POST", path: table + "/sign", prefixed: true, treat: treatOwn},
		{op: OpReportMetrics, name: "reportMetrics", method: "POST", path: table + "/metrics", prefixed: true, treat: treatStream},
		{op: OpPlanTableScan, name: "planTableScan", method: "POST", path: table + "/plan", prefixed: true, treat: treatInspect},
		{op: OpFetchPlanningResult, name: "fetchPlanningResult", method: "GET", path: table + "/plan/{plan-id}", prefixed: true, treat: treatInspect},
		{op: OpCancelPlanning, name: "cancelPlanning", method: "DELETE", path: table + "/plan/{plan-id}", prefixed: true, treat: treatStream},
		{op: OpFetchScanTasks, name: "fetchScanTasks", method: "POST", path: table + "/tasks", prefixed: true, treat: treatInspect},
		{op: OpRenameTable, name: "renameTable", method: "POST", path: "tables/rename", prefixed: true, treat: treatStream},
		{op: OpCommitTransaction, name: "commitTransaction", method: "POST", path: "transactions/commit", prefixed: true, treat: treatStream},
		{op: OpListViews, name: "listViews", method: "GET", path: ns + "/views", prefixed: true, query: []string{"pageToken", "pageSize"}, treat: treatStream},
		{op: OpCreateView, name: "createView", method: "POST", path: ns + "/views", prefixed: true, treat: treatInspect},
		{op: OpLoadView, name: "loadView", method: "GET", path: view, prefixed: true, query: []string{"referenced-by"}, treat: treatInspect},
		{op: OpReplaceView, name: "replaceView", method: "POST", path: view, prefixed: true, treat: treatInspect},
		{op: OpDropView, name: "dropView", method: "DELETE", path: view, prefixed: true, treat: treatStream},
		{op: OpViewExists, name: "viewExists", method: "HEAD", path: view, prefixed: true, treat: treatStream},
		{op: OpRenameView, name: "renameView", method: "POST", path: "views/rename", prefixed: true, treat: treatStream},
		{op: OpRegisterView, name: "registerView", method: "POST", path: ns + "/register-view", prefixed: true, treat: treatInspect},
		{op: OpListFunctions, name: "listFunctions", method: "GET", path: ns + "/functions", prefixed: true, query: []string{"pageToken", "pageSize"}, treat: treatStream},
		{op: OpLoadFunction, name: "loadFunction", method: "GET", path: ns + "/functions/{function}", prefixed: true, treat: treatInspect},
	}
	for _, s := range specs {
		s.segs = strings.Split(s.path, "/")
	}
	return specs
}()

// Route is one request of the REST catalog API, parsed.
type Route struct {
	spec *routeSpec
	// Prefix is the decoded {prefix}; HasPrefix tells "" from absent.
	Prefix    string
	HasPrefix bool
	// Namespace is the decoded namespace levels, nil when the route has
	// no {namespace}.
	Namespace []string
	// Name is the decoded {table}, {view} or {function}.
	Name string
	// PlanID is the decoded {plan-id}.
	PlanID string
	// query holds the allowed parameters present, in the spec's order.
	query []queryParam
	// base is countersign's configured base path the request came in on
	// (not part of the catalog's route).
	base string
}

type queryParam struct{ name, value string }

// Op is the route's operation.
func (r *Route) Op() Operation { return r.spec.op }

// OperationID is the spec's operationId.
func (r *Route) OperationID() string { return r.spec.name }

// Method is the route's HTTP method.
func (r *Route) Method() string { return r.spec.method }

// hasTable reports whether the route names one table by path.
func (r *Route) hasTable() bool { return strings.Contains(r.spec.path, "{table}") }

// RouteError is a request-target the front does not forward: Status is
// 400 (not the canonical spelling), 404 (no such route) or 405 (Allow
// lists the route's methods).
type RouteError struct {
	Status int
	Msg    string
	Allow  []string
}

func (e *RouteError) Error() string { return e.Msg }

func badTarget(msg string) *RouteError { return &RouteError{Status: http.StatusBadRequest, Msg: msg} }

// reservedPrefix is a {prefix} the front refuses: a router that collapses
// a repeated /v1 (SeaweedFS's does) reads /v1/v1/... without it.
func reservedPrefix(p string) bool { return strings.EqualFold(p, "v1") }

// parseRoute parses a request method and origin-form request-target
// (after countersign's base path: "/v1/...?query"); sep is the decoded
// namespace separator.
func parseRoute(method, target, sep string) (Route, *RouteError) {
	if method == http.MethodConnect || !strings.HasPrefix(target, "/") {
		return Route{}, badTarget("the request-target must be a path (origin-form); countersign forwards no CONNECT, absolute-form or asterisk requests")
	}
	rawPath, rawQuery, hasQuery := strings.Cut(target, "?")
	if strings.ContainsRune(target, '#') {
		return Route{}, badTarget("the request-target has a fragment ('#')")
	}
	rawSegs := strings.Split(rawPath[1:], "/")
	segs := make([]string, len(rawSegs))
	for i, s := range rawSegs {
		d, err := canonicalSegment(s)
		if err != "" {
			return Route{}, badTarget("path segment " + strconv.Itoa(i+1) + " (" + quoteShort(s) + ") " + err)
		}
		segs[i] = d
	}
	if segs[0] != "v1" {
		return Route{}, notFound(rawPath)
	}
	segs = segs[1:]

	// Every template the path matches, with literals compared exactly and
	// case-insensitively.
	type match struct {
		spec      *routeSpec
		prefixed  bool
		caseExact bool
	}
	var matches []match
	shapes := map[string]bool{}
	for _, s := range routeSpecs {
		for _, withPrefix := range []bool{false, true} {
			if withPrefix && !s.prefixed {
				continue
			}
			rest := segs
			if withPrefix {
				if len(rest) == 0 {
					continue
				}
				rest = rest[1:]
			}
			exact, fold := matchTemplate(s.segs, rest)
			if !fold {
				continue
			}
			matches = append(matches, match{s, withPrefix, exact})
			shapes[strconv.FormatBool(withPrefix)+"/"+s.path] = true
		}
	}
	if len(shapes) > 1 {
		return Route{}, badTarget("the path " + quoteShort(rawPath) + " can be read as more than one route of the catalog API; rename the namespace, table or prefix")
	}
	var allow []string
	var found *match
	for i, m := range matches {
		if !m.caseExact {
			continue
		}
		allow = append(allow, m.spec.method)
		if m.spec.method == method {
			found = &matches[i]
		}
	}
	if len(allow) == 0 {
		// Only a case-insensitive match (/v1/aws/s3/Sign), or none.
		return Route{}, notFound(rawPath)
	}
	if found == nil {
		return Route{}, &RouteError{Status: http.StatusMethodNotAllowed, Allow: allow,
			Msg: "the catalog API has no " + method + " " + quoteShort(rawPath) + "; allowed: " + strings.Join(allow, ", ")}
	}
	r := Route{spec: found.spec}
	if found.prefixed {
		r.Prefix, r.HasPrefix, segs = segs[0], true, segs[1:]
		if reservedPrefix(r.Prefix) {
			return Route{}, badTarget("the prefix " + quoteShort(r.Prefix) + " is refused: a repeated /v1 is read differently by different catalogs")
		}
		if msg := checkValue(r.Prefix, false); msg != "" {
			return Route{}, badTarget("the prefix " + msg)
		}
	}
	for i, t := range found.spec.segs {
		v := segs[i]
		switch t {
		case "{namespace}":
			levels, err := splitNamespace(v, sep)
			if err != "" {
				return Route{}, badTarget("namespace " + quoteShort(v) + ": " + err)
			}
			r.Namespace = levels
		case "{table}", "{view}", "{function}", "{plan-id}":
			if msg := checkValue(v, false); msg != "" {
				return Route{}, badTarget("the " + strings.Trim(t, "{}") + " " + quoteShort(v) + " " + msg)
			}
			if t == "{plan-id}" {
				r.PlanID = v
			} else {
				r.Name = v
			}
		}
	}
	if hasQuery {
		q, err := parseQuery(found.spec, rawQuery, sep)
		if err != nil {
			return Route{}, err
		}
		r.query = q
	}
	return r, nil
}

func notFound(rawPath string) *RouteError {
	return &RouteError{Status: http.StatusNotFound, Msg: "no route of the Iceberg REST catalog API is " + quoteShort(rawPath)}
}

// matchTemplate compares segments to a template's: exact when every
// literal is equal, fold when every literal is equal ignoring case.
func matchTemplate(tmpl, segs []string) (exact, fold bool) {
	if len(tmpl) != len(segs) {
		return false, false
	}
	exact = true
	for i, t := range tmpl {
		if strings.HasPrefix(t, "{") {
			continue
		}
		if t != segs[i] {
			exact = false
			if !strings.EqualFold(t, segs[i]) {
				return false, false
			}
		}
	}
	return exact, true
}

// splitNamespace splits a decoded namespace segment into its levels.
func splitNamespace(v, sep string) ([]string, string) {
	levels := strings.Split(v, sep)
	for _, l := range levels {
		switch {
		case l == "":
			return nil, "a namespace level is empty"
		case l == "." || l == "..":
			return nil, "a namespace level is \".\" or \"..\""
		}
		if msg := checkValue(l, false); msg != "" {
			return nil, "a namespace level " + msg
		}
	}
	return levels, ""
}

// canonicalSegment decodes one raw path segment, or says why it is not
// in the canonical spelling.
func canonicalSegment(s string) (string, string) {
	switch s {
	case "":
		return "", "is empty (\"//\" or a trailing \"/\")"
	case ".", "..":
		return "", "is a dot segment"
	}
	d, msg := decodeStrict(s)
	if msg != "" {
		return "", msg
	}
	// The namespace separator (U+001F by default) is the one control
	// character a segment may carry; namespace levels are checked again
	// after the split.
	if msg := checkValue(d, true); msg != "" {
		return "", msg
	}
	if escapeSegment(d) != s {
		return "", "is not in the canonical spelling (unreserved characters as themselves, every other byte as %XX with uppercase hex)"
	}
	return d, ""
}

// decodeStrict percent-decodes s, refusing raw characters outside the
// unreserved set and escapes of unreserved characters, with a message
// naming the first.
func decodeStrict(s string) (string, string) {
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case unreserved(c):
			b = append(b, c)
		case c == '%':
			if i+2 >= len(s) || fromHex(s[i+1]) < 0 || fromHex(s[i+2]) < 0 {
				return "", "has an invalid percent escape"
			}
			d := byte(fromHex(s[i+1])<<4 | fromHex(s[i+2]))
			if s[i+1] >= 'a' || s[i+2] >= 'a' {
				return "", "has a lowercase percent escape (" + s[i:i+3] + "); use uppercase hex"
			}
			switch {
			case d == '/':
				return "", "has an encoded '/' (%2F)"
			case d == '\\':
				return "", "has an encoded '\\' (%5C)"
			case d == '.':
				return "", "has an encoded '.' (%2E)"
			case unreserved(d):
				return "", "has an escape of " + strconv.QuoteRune(rune(d)) + ", which needs none"
			}
			b = append(b, d)
			i += 2
		case c == ';':
			return "", "has a ';' (path parameters are not part of the catalog API)"
		case c == '\\':
			return "", "has a '\\'"
		default:
			return "", "has " + quoteByte(c) + ", which must be percent-encoded"
		}
	}
	return string(b), ""
}

// checkValue is "" when a decoded value is valid UTF-8 without control
// characters or the characters routers decode and re-read; sepOK lets
// U+001F through (namespace separators, checked after the split).
func checkValue(v string, sepOK bool) string {
	if !utf8.ValidString(v) {
		return "is not valid UTF-8"
	}
	for _, r := range v {
		switch {
		case r == 0x1f && sepOK:
		case r < 0x20, r == 0x7f, r >= 0x80 && r <= 0x9f:
			return "has the control character " + strconv.QuoteRune(r)
		case strings.ContainsRune("/\\%;?#", r):
			return "has " + strconv.QuoteRune(r) + ", which countersign does not forward in a name"
		}
	}
	return ""
}

func unreserved(c byte) bool {
	return 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~'
}

func fromHex(c byte) int {
	switch {
	case '0' <= c && c <= '9':
		return int(c - '0')
	case 'a' <= c && c <= 'f':
		return int(c-'a') + 10
	case 'A' <= c && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}

// escapeSegment is the canonical spelling of a decoded segment or query
// value: unreserved characters as themselves, every other byte %XX with
// uppercase hex. It is the one escaping function of what the front
// forwards.
func escapeSegment(s string) string {
	const hex = "0123456789ABCDEF"
	n := 0
	for i := 0; i < len(s); i++ {
		if !unreserved(s[i]) {
			n++
		}
	}
	if n == 0 {
		return s
	}
	b := make([]byte, 0, len(s)+2*n)
	for i := 0; i < len(s); i++ {
		c := s[i]
		if unreserved(c) {
			b = append(b, c)
			continue
		}
		b = append(b, '%', hex[c>>4], hex[c&15])
	}
	return string(b)
}

// parseQuery decodes the query and keeps the parameters the spec defines
// for the operation, each at most once; anything else is refused.
func parseQuery(s *routeSpec, raw, sep string) ([]queryParam, *RouteError) {
	if raw == "" {
		return nil, badTarget("the request-target ends in an empty query ('?'); send none")
	}
	got := map[string]string{}
	for _, kv := range strings.Split(raw, "&") {
		k, v, _ := strings.Cut(kv, "=")
		name, ok1 := queryUnescape(k)
		value, ok2 := queryUnescape(v)
		if !ok1 || !ok2 {
			return nil, badTarget("the query parameter " + quoteShort(kv) + " has an invalid percent escape")
		}
		if !slices.Contains(s.query, name) {
			msg := "the catalog API's " + s.name + " has no query parameter " + quoteShort(name)
			if len(s.query) > 0 {
				msg += "; it takes " + strings.Join(s.query, ", ")
			}
			return nil, badTarget(msg)
		}
		if _, dup := got[name]; dup {
			return nil, badTarget("the query parameter " + quoteShort(name) + " is given twice")
		}
		if msg := checkQueryValue(name, value, sep); msg != "" {
			return nil, badTarget("the query parameter " + name + " " + msg)
		}
		got[name] = value
	}
	var q []queryParam
	for _, name := range s.query {
		if v, ok := got[name]; ok {
			q = append(q, queryParam{name, v})
		}
	}
	return q, nil
}

func checkQueryValue(name, v, sep string) string {
	switch name {
	case "snapshots":
		if v != "all" && v != "refs" {
			return "must be all or refs"
		}
	case "purgeRequested":
		if v != "true" && v != "false" {
			return "must be true or false"
		}
	case "pageSize":
		if n, err := strconv.Atoi(v); err != nil || n < 1 || strconv.Itoa(n) != v {
			return "must be a positive decimal integer"
		}
	case "parent":
		if _, msg := splitNamespace(v, sep); msg != "" {
			return "(a namespace): " + msg
		}
	default:
		// pageToken, warehouse, planId, referenced-by (view identifiers
		// joined by U+001F and commas): opaque strings.
		if !utf8.ValidString(v) {
			return "is not valid UTF-8"
		}
		for _, r := range v {
			if (r < 0x20 && r != 0x1f) || r == 0x7f || (r >= 0x80 && r <= 0x9f) {
				return "has the control character " + strconv.QuoteRune(r)
			}
		}
	}
	return ""
}

// queryUnescape decodes a query component (application/x-www-form-
// urlencoded: '+' is a space).
func queryUnescape(s string) (string, bool) {
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '%':
			if i+2 >= len(s) || fromHex(s[i+1]) < 0 || fromHex(s[i+2]) < 0 {
				return "", false
			}
			b = append(b, byte(fromHex(s[i+1])<<4|fromHex(s[i+2])))
			i += 2
		case '+':
			b = append(b, ' ')
		default:
			b = append(b, c)
		}
	}
	return string(b), true
}

// segments is the route's path after /v1, decoded, one element per
// segment.
func (r *Route) segments(sep string) []string {
	out := make([]string, 0, len(r.spec.segs)+1)
	if r.HasPrefix {
		out = append(out, r.Prefix)
	}
	for _, t := range r.spec.segs {
		switch t {
		case "{namespace}":
			out = append(out, strings.Join(r.Namespace, sep))
		case "{table}", "{view}", "{function}":
			out = append(out, r.Name)
		case "{plan-id}":
			out = append(out, r.PlanID)
		default:
			out = append(out, t)
		}
	}
	return out
}

// escapedPath is the route's canonical path, "/v1/...", every segment
// escaped by escapeSegment.
func (r *Route) escapedPath(sep string) string {
	var b strings.Builder
	b.WriteString("/v1")
	for _, s := range r.segments(sep) {
		b.WriteByte('/')
		b.WriteString(escapeSegment(s))
	}
	return b.String()
}

// decodedPath is the route's path, "/v1/...", unescaped (url.URL.Path).
func (r *Route) decodedPath(sep string) string {
	return "/v1/" + strings.Join(r.segments(sep), "/")
}

// rawQuery is the route's canonical query string ("" when none).
func (r *Route) rawQuery() string {
	var b strings.Builder
	for i, p := range r.query {
		if i > 0 {
			b.WriteByte('&')
		}
		b.WriteString(escapeSegment(p.name))
		b.WriteByte('=')
		b.WriteString(escapeSegment(p.value))
	}
	return b.String()
}

// target is the canonical request-target: escapedPath plus the query.
func (r *Route) target(sep string) string {
	if q := r.rawQuery(); q != "" {
		return r.escapedPath(sep) + "?" + q
	}
	return r.escapedPath(sep)
}

// tableRoute is the loadTable route of the table r names (by path, or,
// for createTable and registerTable, in the namespace r names with the
// name from the body).
func (r *Route) tableRoute(name string) Route {
	t := Route{Prefix: r.Prefix, HasPrefix: r.HasPrefix, Namespace: r.Namespace, Name: name}
	for _, s := range routeSpecs {
		if s.op == OpLoadTable {
			t.spec = s
		}
	}
	return t
}

func quoteShort(s string) string { return strconv.Quote(truncate(s)) }

func quoteByte(c byte) string {
	if c >= 0x20 && c < 0x7f {
		return strconv.QuoteRune(rune(c))
	}
	return "the byte 0x" + strconv.FormatUint(uint64(c), 16)
}
