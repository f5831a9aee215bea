package remotesign

import (
	"bytes"
	"strconv"
	"unicode/utf8"

	"github.com/valyala/fastjson"

	"github.com/countersign/countersign/internal/swar"
)

// Request is a decoded and validated RemoteSignRequest.
//
// The strings of a Request are constants or slices of one allocation owned
// by the Request, not by the Decoder or the input, so a Request stays valid
// after both are reused and may be kept (by audit, for example) as long as
// needed. Keeping any one string keeps that whole allocation, Body included,
// alive: strings.Clone a small one that must outlive the request for long.
type Request struct {
	// Region is non-empty, valid UTF-8, without control characters.
	Region string
	// URI is non-empty, valid UTF-8, without control characters. It is not
	// parsed here: that is the S3 request classifier's job.
	URI string
	// Method is exactly one of PUT, GET, HEAD, POST, DELETE, PATCH, OPTIONS.
	Method string
	// Headers are in the client's order (nil if the client sent none; the
	// member itself is required). Every name is an HTTP token, no two
	// names are equal under ASCII case folding, every header has at least
	// one value, and every value is valid UTF-8 without control characters
	// other than HTAB.
	Headers Headers
	// Properties is nil when the member is absent, null or empty.
	Properties map[string]string
	// Body is the body the client will send (only DeleteObjects has one).
	// HasBody tells an empty body apart from an absent or null one.
	Body    string
	HasBody bool
	// Provider is always "s3", the only storage provider countersign signs
	// for; an absent or null provider means "s3" by the protocol.
	Provider string
}

// Limits bound what the decoder accepts from one request, so a request
// within the HTTP body limit still cannot make later stages (canonical
// request building, policy input, audit) do unbounded work. A field that is
// zero or negative takes its default.
//
// The limits also bound the JSON as a whole: a body may hold at most as many
// JSON values (ignored members included) as the limits let the known
// members have, plus maxSpareValues, so parsing work and memory follow the
// limits rather than the body size.
type Limits struct {
	MaxHeaders      int // distinct header names
	MaxHeaderValues int // values of any one header
	MaxHeaderBytes  int // total length of all header names and values
	MaxProperties   int // members of "properties"
}

// Defaults for Limits. AWS SDKs send about ten headers with one value each,
// and S3 itself refuses requests whose headers exceed 8 KB, so these leave
// ample room for real clients while bounding hostile ones. Iceberg clients
// send few properties, usually none.
const (
	DefaultMaxHeaders      = 64
	DefaultMaxHeaderValues = 16
	DefaultMaxHeaderBytes  = 16 << 10
	DefaultMaxProperties   = 256
)

// maxSpareValues is the allowance of JSON values beyond what the known
// members may use: the top-level members themselves and unknown members.
const maxSpareValues = 1024

// DefaultLimits returns the limits a zero Limits stands for.
func DefaultLimits() Limits {
	return Limits{
		MaxHeaders:      DefaultMaxHeaders,
		MaxHeaderValues: DefaultMaxHeaderValues,
		MaxHeaderBytes:  DefaultMaxHeaderBytes,
		MaxProperties:   DefaultMaxProperties,
	}
}

func (l Limits) withDefaults() Limits {
	if l.MaxHeaders <= 0 {
		l.MaxHeaders = DefaultMaxHeaders
	}
	if l.MaxHeaderValues <= 0 {
		l.MaxHeaderValues = DefaultMaxHeaderValues
	}
	if l.MaxHeaderBytes <= 0 {
		l.MaxHeaderBytes = DefaultMaxHeaderBytes
	}
	if l.MaxProperties <= 0 {
		l.MaxProperties = DefaultMaxProperties
	}
	return l
}

// maxValues is the number of JSON values a body within l may hold.
func (l Limits) maxValues() int {
	const c = 1 << 20 // keeps the product from overflowing
	return 1 + min(l.MaxHeaders, c)*(1+min(l.MaxHeaderValues, c)) + min(l.MaxProperties, c) + maxSpareValues
}

// DecodeError says why a sign request was rejected (HTTP 400). Field names
// the offending member, for example "method" or "headers.Range", and is
// empty when the problem is the body as a whole. Any input echoed in Field
// or Msg is truncated, and Error quotes it, so the text is safe to send back
// to the client and to log.
type DecodeError struct {
	Field string
	Msg   string
}

func (e *DecodeError) Error() string {
	if e.Field == "" {
		return "invalid sign request: " + e.Msg
	}
	return "invalid sign request: field " + strconv.Quote(e.Field) + ": " + e.Msg
}

// maxEcho bounds how much of a client's input an error message repeats, so a
// hostile request cannot make its error response or log line large.
const maxEcho = 64

// clip shortens s to about maxEcho bytes, cutting at a rune start.
func clip(s string) string {
	if len(s) <= maxEcho {
		return s
	}
	i := maxEcho
	for i > maxEcho-utf8.UTFMax && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + "..."
}

// quote is clip followed by strconv.Quote: one line, printable, bounded.
func quote(s string) string { return strconv.Quote(clip(s)) }

// Decoder decodes sign requests. It keeps its JSON parser and scratch
// buffers between calls so that steady-state decoding allocates only the
// returned Request; for the same reason it is not safe for concurrent use.
// Give each goroutine its own, or pool them as server's Handler does (the
// package keeps no pool of its own: no state outside a Decoder).
type Decoder struct {
	p fastjson.Parser

	// Scratch reused across calls. buf holds the bytes of every string the
	// Request will keep; the spans below index it until build copies it
	// into the Request's single string.
	buf   []byte
	hdrs  []hdrRef
	vals  []span
	props []propRef

	st decodeState
}

// decodeState is what one Decode call accumulates; reset wholesale per call.
type decodeState struct {
	lim      Limits
	seen     fieldSet
	region   span
	uri      span
	body     span
	hasBody  bool
	method   string
	hdrBytes int
	// err is the first error found inside a fastjson Visit callback, which
	// cannot stop early: later callbacks see it and return at once.
	err *DecodeError
}

type span struct{ start, end int }

type hdrRef struct {
	name   span
	fold   uint64 // hash of the lower-cased name: cheap duplicate screening
	v0, v1 int    // values are vals[v0:v1]
}

type propRef struct{ key, val span }

// fieldSet records which known top-level members were seen, to reject
// duplicates (which parsers resolve differently: first wins, last wins) and
// to find missing required members.
type fieldSet uint8

const (
	fRegion fieldSet = 1 << iota
	fURI
	fMethod
	fHeaders
	fProperties
	fBody
	fProvider
)

// maxRetained caps the scratch memory a Decoder keeps between calls, so a
// pooled Decoder does not pin the memory of the largest request it has seen.
const maxRetained = 64 << 10

// Decode parses and validates one RemoteSignRequest body. The error, if any,
// is a *DecodeError. data is only read, and is not referenced once Decode
// returns. lim's zero fields take their defaults.
func (d *Decoder) Decode(data []byte, lim Limits) (*Request, error) {
	req, err := d.decode(data, lim)
	d.trim(len(data))
	if err != nil {
		return nil, err
	}
	return req, nil
}

func (d *Decoder) decode(data []byte, lim Limits) (*Request, *DecodeError) {
	d.buf, d.hdrs, d.vals, d.props = d.buf[:0], d.hdrs[:0], d.vals[:0], d.props[:0]
	d.st = decodeState{lim: lim.withDefaults()}

	// fastjson is lenient (raw control characters in strings, bad escapes,
	// lone surrogates, NaN) and its error messages quote unbounded input, so
	// strict RFC 8259 syntax is checked first, with a bounded message.
	if e := checkSyntax(data, d.st.lim.maxValues()); e != nil {
		return nil, e
	}
	root, err := d.p.ParseBytes(data)
	if err != nil {
		// Unreachable: fastjson accepts everything checkSyntax does. Its
		// message is not passed on, for the reason above.
		return nil, &DecodeError{Msg: "malformed JSON (parser disagreement)"}
	}
	obj, err := root.Object()
	if err != nil {
		return nil, &DecodeError{Msg: "body must be a JSON object, got " + typeName(root)}
	}
	obj.Visit(d.member)
	if d.st.err != nil {
		return nil, d.st.err
	}
	for _, r := range [...]struct {
		f    fieldSet
		name string
	}{{fRegion, "region"}, {fURI, "uri"}, {fMethod, "method"}, {fHeaders, "headers"}} {
		if d.st.seen&r.f == 0 {
			return nil, &DecodeError{Field: r.name, Msg: "required"}
		}
	}
	return d.build()
}

func (d *Decoder) trim(inputLen int) {
	if cap(d.buf) > maxRetained {
		d.buf = nil
	}
	if cap(d.vals) > maxRetained/16 {
		d.vals = nil
	}
	if cap(d.props) > maxRetained/32 {
		d.props = nil
	}
	if inputLen > maxRetained {
		// fastjson keeps a copy of the last input and a value per node.
		d.p = fastjson.Parser{}
	}
}

// member handles one top-level member. Unknown members are ignored, as the
// protocol requires for forward compatibility.
func (d *Decoder) member(key []byte, v *fastjson.Value) {
	if d.st.err != nil {
		return
	}
	var f fieldSet
	switch string(key) {
	case "region":
		f = fRegion
	case "uri":
		f = fURI
	case "method":
		f = fMethod
	case "headers":
		f = fHeaders
	case "properties":
		f = fProperties
	case "body":
		f = fBody
	case "provider":
		f = fProvider
	default:
		return
	}
	if d.st.seen&f != 0 {
		d.st.err = &DecodeError{Field: string(key), Msg: "duplicate member"}
		return
	}
	d.st.seen |= f
	switch f {
	case fRegion:
		d.st.region, d.st.err = d.requiredText("region", v)
	case fURI:
		d.st.uri, d.st.err = d.requiredText("uri", v)
	case fMethod:
		d.st.method, d.st.err = parseMethod(v)
	case fHeaders:
		d.headers(v)
	case fProperties:
		d.properties(v)
	case fBody:
		d.body(v)
	case fProvider:
		d.st.err = checkProvider(v)
	}
}

// requiredText keeps a required non-empty string member. Control characters
// are refused: neither a region nor a URI can contain one, and they would
// otherwise reach logs and policy input.
func (d *Decoder) requiredText(field string, v *fastjson.Value) (span, *DecodeError) {
	b, err := v.StringBytes()
	if err != nil {
		return span{}, &DecodeError{Field: field, Msg: "must be a non-empty string, got " + typeName(v)}
	}
	switch {
	case len(b) == 0:
		return span{}, &DecodeError{Field: field, Msg: "must be a non-empty string"}
	case !utf8.Valid(b):
		return span{}, &DecodeError{Field: field, Msg: "invalid UTF-8"}
	case hasControl(b, false):
		return span{}, &DecodeError{Field: field, Msg: "must not contain control characters"}
	}
	return d.keep(b), nil
}

const methodMsg = "must be one of PUT, GET, HEAD, POST, DELETE, PATCH, OPTIONS"

// parseMethod returns the method as a constant, so it costs no copy.
func parseMethod(v *fastjson.Value) (string, *DecodeError) {
	b, err := v.StringBytes()
	if err != nil {
		return "", &DecodeError{Field: "method", Msg: methodMsg + ", got " + typeName(v)}
	}
	switch string(b) {
	case "PUT":
		return "PUT", nil
	case "GET":
		return "GET", nil
	case "HEAD":
		return "HEAD", nil
	case "POST":
		return "POST", nil
	case "DELETE":
		return "DELETE", nil
	case "PATCH":
		return "PATCH", nil
	case "OPTIONS":
		return "OPTIONS", nil
	}
	return "", &DecodeError{Field: "method", Msg: methodMsg + " (case-sensitive), got " + quote(string(b))}
}

func checkProvider(v *fastjson.Value) *DecodeError {
	if v.Type() == fastjson.TypeNull {
		return nil
	}
	b, err := v.StringBytes()
	if err != nil {
		return &DecodeError{Field: "provider", Msg: "must be a string, got " + typeName(v)}
	}
	if string(b) != "s3" {
		return &DecodeError{Field: "provider", Msg: `only "s3" is supported, got ` + quote(string(b))}
	}
	return nil
}

func (d *Decoder) headers(v *fastjson.Value) {
	o, err := v.Object()
	if err != nil {
		d.st.err = &DecodeError{Field: "headers", Msg: "must be an object mapping names to arrays of strings, got " + typeName(v)}
		return
	}
	// Checked before visiting, so an oversized header set costs no work.
	if o.Len() > d.st.lim.MaxHeaders {
		d.st.err = &DecodeError{Field: "headers", Msg: "more than " + strconv.Itoa(d.st.lim.MaxHeaders) + " headers"}
		return
	}
	o.Visit(d.header)
}

func headerField(name []byte) string { return "headers." + clip(string(name)) }

func (d *Decoder) header(name []byte, v *fastjson.Value) {
	if d.st.err != nil {
		return
	}
	fold, ok := tokenFold(name)
	if !ok {
		if len(name) == 0 {
			d.st.err = &DecodeError{Field: "headers", Msg: "empty header name"}
		} else {
			d.st.err = &DecodeError{Field: headerField(name), Msg: "header name is not a valid HTTP token"}
		}
		return
	}
	// Two spellings of one header are ambiguous: which one a signer, S3 or
	// a proxy uses differs, so the request is refused rather than guessed.
	for i := range d.hdrs {
		h := &d.hdrs[i]
		if h.fold == fold && bytes.EqualFold(d.buf[h.name.start:h.name.end], name) {
			d.st.err = &DecodeError{Field: headerField(name),
				Msg: "duplicate header: same name as " + quote(string(d.buf[h.name.start:h.name.end])) + " ignoring case"}
			return
		}
	}
	arr, err := v.Array()
	if err != nil {
		d.st.err = &DecodeError{Field: headerField(name), Msg: "must be an array of strings, got " + typeName(v)}
		return
	}
	switch {
	case len(arr) == 0:
		// A header without a value can be neither sent nor signed.
		d.st.err = &DecodeError{Field: headerField(name), Msg: "must have at least one value"}
		return
	case len(arr) > d.st.lim.MaxHeaderValues:
		d.st.err = &DecodeError{Field: headerField(name), Msg: "more than " + strconv.Itoa(d.st.lim.MaxHeaderValues) + " values"}
		return
	}
	if !d.countHeaderBytes(len(name)) {
		return
	}
	ref := hdrRef{name: d.keep(name), fold: fold, v0: len(d.vals)}
	for _, e := range arr {
		b, err := e.StringBytes()
		if err != nil {
			d.st.err = &DecodeError{Field: headerField(name), Msg: "values must be strings, got " + typeName(e)}
			return
		}
		if !d.countHeaderBytes(len(b)) {
			return
		}
		// CR and LF would let a value smuggle another header into the
		// request the client sends (header injection), NUL truncates it in
		// C-based proxies, and RFC 9110 allows no other control either.
		if hasControl(b, true) {
			d.st.err = &DecodeError{Field: headerField(name), Msg: "value contains a control character (CR, LF, NUL or other)"}
			return
		}
		if !utf8.Valid(b) {
			d.st.err = &DecodeError{Field: headerField(name), Msg: "value is not valid UTF-8"}
			return
		}
		d.vals = append(d.vals, d.keep(b))
	}
	ref.v1 = len(d.vals)
	d.hdrs = append(d.hdrs, ref)
}

// countHeaderBytes adds n to the header byte total before anything is
// copied, so an oversized header is refused without being copied.
func (d *Decoder) countHeaderBytes(n int) bool {
	d.st.hdrBytes += n
	if d.st.hdrBytes > d.st.lim.MaxHeaderBytes {
		d.st.err = &DecodeError{Field: "headers", Msg: "names and values exceed " + strconv.Itoa(d.st.lim.MaxHeaderBytes) + " bytes"}
		return false
	}
	return true
}

func (d *Decoder) properties(v *fastjson.Value) {
	if v.Type() == fastjson.TypeNull {
		return
	}
	o, err := v.Object()
	if err != nil {
		d.st.err = &DecodeError{Field: "properties", Msg: "must be an object of strings, got " + typeName(v)}
		return
	}
	if o.Len() > d.st.lim.MaxProperties {
		d.st.err = &DecodeError{Field: "properties", Msg: "more than " + strconv.Itoa(d.st.lim.MaxProperties) + " properties"}
		return
	}
	o.Visit(d.property)
}

func propertyField(key []byte) string { return "properties." + clip(string(key)) }

func (d *Decoder) property(key []byte, v *fastjson.Value) {
	if d.st.err != nil {
		return
	}
	b, err := v.StringBytes()
	switch {
	case err != nil:
		d.st.err = &DecodeError{Field: propertyField(key), Msg: "must be a string, got " + typeName(v)}
	case !utf8.Valid(key):
		d.st.err = &DecodeError{Field: propertyField(key), Msg: "key is not valid UTF-8"}
	case !utf8.Valid(b):
		d.st.err = &DecodeError{Field: propertyField(key), Msg: "value is not valid UTF-8"}
	default:
		d.props = append(d.props, propRef{key: d.keep(key), val: d.keep(b)})
	}
}

func (d *Decoder) body(v *fastjson.Value) {
	if v.Type() == fastjson.TypeNull {
		return
	}
	b, err := v.StringBytes()
	switch {
	case err != nil:
		d.st.err = &DecodeError{Field: "body", Msg: "must be a string, got " + typeName(v)}
	case !utf8.Valid(b):
		d.st.err = &DecodeError{Field: "body", Msg: "invalid UTF-8"}
	default:
		d.st.body, d.st.hasBody = d.keep(b), true
	}
}

// keep copies b into the scratch buffer; build turns it into a string.
func (d *Decoder) keep(b []byte) span {
	s := span{start: len(d.buf)}
	d.buf = append(d.buf, b...)
	s.end = len(d.buf)
	return s
}

// build makes the Request: one string holds every kept byte, and the header
// values of all headers share one slice, so the cost is a handful of
// allocations whatever the number of headers, and two (the string and a
// requestBox) for a request of at most boxHeaders headers and boxValues
// values, as the engines send them.
func (d *Decoder) build() (*Request, *DecodeError) {
	arena := string(d.buf)
	at := func(s span) string { return arena[s.start:s.end] }
	box := &requestBox{}
	r := &box.r
	*r = Request{
		Region:   at(d.st.region),
		URI:      at(d.st.uri),
		Method:   d.st.method,
		HasBody:  d.st.hasBody,
		Provider: "s3",
	}
	if d.st.hasBody {
		r.Body = at(d.st.body)
	}
	if len(d.hdrs) > 0 {
		vals := box.vals[:]
		if len(d.vals) > len(vals) {
			vals = make([]string, len(d.vals))
		}
		vals = vals[:len(d.vals):len(d.vals)]
		for i, s := range d.vals {
			vals[i] = at(s)
		}
		hs := Headers(box.hdrs[:])
		if len(d.hdrs) > len(hs) {
			hs = make(Headers, len(d.hdrs))
		}
		hs = hs[:len(d.hdrs):len(d.hdrs)]
		for i, h := range d.hdrs {
			// Capacity capped so appending to one header's values can
			// never overwrite the next header's.
			hs[i] = Header{Name: at(h.name), Values: vals[h.v0:h.v1:h.v1]}
		}
		r.Headers = hs
	}
	if len(d.props) > 0 {
		m := make(map[string]string, len(d.props))
		for _, p := range d.props {
			k := at(p.key)
			if _, dup := m[k]; dup {
				return nil, &DecodeError{Field: propertyField([]byte(k)), Msg: "duplicate key"}
			}
			m[k] = at(p.val)
		}
		r.Properties = m
	}
	return r, nil
}

// requestBox is a Request with room for the headers and values of a typical
// sign request: an engine's GET sends four to six headers of one value each.
type requestBox struct {
	r    Request
	hdrs [boxHeaders]Header
	vals [boxValues]string
}

const boxHeaders, boxValues = 8, 8

func typeName(v *fastjson.Value) string {
	switch v.Type() {
	case fastjson.TypeObject:
		return "object"
	case fastjson.TypeArray:
		return "array"
	case fastjson.TypeString:
		return "string"
	case fastjson.TypeNumber:
		return "number"
	case fastjson.TypeTrue, fastjson.TypeFalse:
		return "boolean"
	default:
		return "null"
	}
}

// hasControl reports whether b holds an ASCII control character (C0 or
// DEL); allowTab exempts HTAB, which RFC 9110 permits in field values.
func hasControl(b []byte, allowTab bool) bool { return swar.HasControl(b, allowTab) }

// tchar marks the RFC 9110 token characters, the only bytes allowed in a
// header name.
var tchar = func() (t [256]bool) {
	for c := '0'; c <= '9'; c++ {
		t[c] = true
	}
	for c := 'a'; c <= 'z'; c++ {
		t[c] = true
		t[c-'a'+'A'] = true
	}
	for _, c := range "!#$%&'*+-.^_`|~" {
		t[c] = true
	}
	return t
}()

// tokenFold reports whether name is a non-empty HTTP token and returns an
// FNV-1a hash of its lower-cased bytes. The duplicate check compares names
// only when their hashes match, so many long names that share a prefix
// cannot make it quadratic in the header bytes.
func tokenFold(name []byte) (uint64, bool) {
	if len(name) == 0 {
		return 0, false
	}
	h := uint64(14695981039346656037)
	for _, c := range name {
		if !tchar[c] {
			return 0, false
		}
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		h = (h ^ uint64(c)) * 1099511628211
	}
	return h, true
}
