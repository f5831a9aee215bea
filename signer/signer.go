// Package signer signs classified S3 requests with AWS SigV4 for the Iceberg
// remote-signing protocol: it signs exactly the method, path, query and
// headers the client will send, and returns the headers the client must add.
//
// The signer never returns a header the client sent with a different value
// (clients restore or merge their own headers over the response), never signs
// headers that legitimately change between attempts, and never lets the
// signature or secret key leave the process except in the Authorization
// header itself.
package signer

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/countersign/countersign/internal/swar"
	"github.com/countersign/countersign/remotesign"
	"github.com/countersign/countersign/s3req"
)

var (
	// ErrCredentials means no usable signing credentials could be obtained.
	// Signing fails closed; callers answer 503. Messages never carry secrets.
	ErrCredentials = errors.New("signer: signing credentials unavailable")

	// ErrBadRequest means the request description cannot be signed as given
	// (callers answer 400). The message names the offending part.
	ErrBadRequest = errors.New("signer: request cannot be signed")

	// ErrBadDate is a client-supplied x-amz-date that does not parse or is
	// too far from the signer's clock. It wraps ErrBadRequest.
	ErrBadDate = fmt.Errorf("%w: invalid x-amz-date", ErrBadRequest)
)

// Other errors from Sign (for example an inconsistent s3req.Request) are
// internal errors.

const (
	// DefaultMaxClockSkew bounds how far a client-supplied x-amz-date may be
	// from the signer's clock.
	DefaultMaxClockSkew = 5 * time.Minute

	amzDateLayout = "20060102T150405Z"
	service       = "s3"
	algorithm     = "AWS4-HMAC-SHA256"

	// Header names the signer adds, in the spelling the AWS SDK's signer
	// uses (Go canonical).
	hdrAuthorization = "Authorization"
	hdrAmzDate       = "X-Amz-Date"
	hdrSecurityToken = "X-Amz-Security-Token"
	// x-amz-content-sha256 is added in the lower-case spelling AWS SDKs use.
	hdrContentSHA256 = "x-amz-content-sha256"
)

// headerKind says what the signer does with a client header.
type headerKind uint8

const (
	kindSigned        headerKind = iota // signed and echoed
	kindUnsigned                        // echoed, not signed
	kindPreSigned                       // the client must not send it: error
	kindDate                            // x-amz-date: sign with it if valid
	kindHost                            // must match the URI's host
	kindContentLength                   // signed through http.Request.ContentLength
	kindContentSHA256                   // must equal Request.ContentSHA256
)

// headerRules is the one place that decides which client headers are not
// signed as ordinary headers. Names are lower-case; matching ignores case.
// Every header not listed here (and not amz-sdk-*) is signed.
var headerRules = [...]struct {
	name string
	kind headerKind
}{
	// Unsigned, because they legitimately differ between the signed request
	// and the one that reaches S3:
	// - range: Java caches a signed response per (method, region, uri) and
	//   reuses it for other ranges of the same object; readers also split or
	//   resume ranges on retry.
	{"range", kindUnsigned},
	// - user-agent: HTTP stacks and proxies append to or rewrite it.
	{"user-agent", kindUnsigned},
	// - expect: HTTP clients add or drop "100-continue" on their own.
	{"expect", kindUnsigned},
	// - x-amzn-trace-id: tracing (X-Ray, Lambda) injects it after signing.
	{"x-amzn-trace-id", kindUnsigned},
	// - hop-by-hop headers (RFC 9110 7.6.1, RFC 2616 13.5.1): proxies and
	//   the HTTP client's connection management consume or rewrite them.
	{"connection", kindUnsigned},
	{"keep-alive", kindUnsigned},
	{"proxy-connection", kindUnsigned},
	{"proxy-authorization", kindUnsigned},
	{"te", kindUnsigned},
	{"transfer-encoding", kindUnsigned},
	{"upgrade", kindUnsigned},
	// (amz-sdk-invocation-id, amz-sdk-request, amz-sdk-retry and any other
	// amz-sdk-* header change on every attempt: see unsignedPrefix.)

	// Owned by the signer. A client that sends these tried to sign the
	// request itself; returning our value would change a header it sent.
	{"authorization", kindPreSigned},
	{"x-amz-security-token", kindPreSigned},
	// Signed, with special handling.
	{"x-amz-date", kindDate},
	{"host", kindHost},
	{"content-length", kindContentLength},
	{"x-amz-content-sha256", kindContentSHA256},
}

// unsignedPrefix marks the AWS SDK retry-bookkeeping headers
// (amz-sdk-invocation-id, amz-sdk-request: attempt=N; max=M, amz-sdk-retry):
// they change on every attempt, so they are never signed.
const unsignedPrefix = "amz-sdk-"

func classify(name string) headerKind {
	if len(name) >= len(unsignedPrefix) && strings.EqualFold(name[:len(unsignedPrefix)], unsignedPrefix) {
		return kindUnsigned
	}
	for i := range headerRules {
		if len(headerRules[i].name) == len(name) && strings.EqualFold(headerRules[i].name, name) {
			return headerRules[i].kind
		}
	}
	return kindSigned
}

// Options configures a Signer. The zero value is usable.
type Options struct {
	// Now returns the current time; nil means time.Now. For tests.
	Now func() time.Time
	// MaxClockSkew bounds how far a client-supplied x-amz-date may be from
	// Now. Zero or negative means DefaultMaxClockSkew.
	MaxClockSkew time.Duration
	// Sessions, when set, signs every request with the caller's
	// per-principal session (credentials.per_principal; sessions.go)
	// instead of the provider given to New.
	Sessions Sessions
}

// Signer signs S3 requests with SigV4. It is safe for concurrent use.
type Signer struct {
	creds   aws.CredentialsProvider
	keys    keyCache
	now     func() time.Time
	maxSkew time.Duration
	pool    sync.Pool // *state
	// sessions: per-principal session credentials (nil: sign with creds)
	sessions Sessions

	// onCanonical, when set (tests only), receives every canonical request.
	onCanonical func(canonical string)
}

// Signed is a signed request.
type Signed struct {
	// Headers is what to return to the client: every client header echoed
	// unchanged, in the client's order and spelling, followed by the headers
	// the signer added: Authorization, X-Amz-Date (unless the client sent
	// x-amz-date), X-Amz-Security-Token (session credentials) and
	// x-amz-content-sha256 (when Request.AddContentSHA256).
	Headers remotesign.Headers

	// For audit. None of these is secret; the signature itself is never
	// exposed here (a signed request is a bearer credential for minutes).
	AccessKeyID            string
	CredentialScope        string   // e.g. "20261130/us-east-1/s3/aws4_request"
	AmzDate                string   // e.g. "20261130T120000Z"
	SignedHeaders          []string // lower-case, sorted
	SignatureSHA256        string   // hex SHA-256 of the hex signature
	CanonicalRequestSHA256 string   // hex SHA-256 of the canonical request
	// The per-principal session signed with ("" without Options.Sessions).
	SourceIdentity, SessionName string
}

// New returns a Signer that signs with the credentials from creds (use
// NewCredentials). It panics if creds is nil: that is a wiring error.
func New(creds aws.CredentialsProvider, opts Options) *Signer {
	if creds == nil {
		panic("signer.New: nil credentials provider")
	}
	s := &Signer{
		creds:    creds,
		now:      opts.Now,
		maxSkew:  opts.MaxClockSkew,
		sessions: opts.Sessions,
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.maxSkew <= 0 {
		s.maxSkew = DefaultMaxClockSkew
	}
	s.pool.New = func() any { return newState() }
	return s
}

// state is the per-call scratch space, pooled to keep the hot path lean.
type state struct {
	v4  sigv4
	buf []byte    // amz date, scope, hashes
	sha [1]string // value slice for an added x-amz-content-sha256
}

func newState() *state {
	return &state{buf: make([]byte, 0, 256)}
}

func (s *Signer) release(st *state) {
	st.v4.reset()
	st.buf = st.buf[:0]
	st.sha[0] = ""
	s.pool.Put(st)
}

// Sign signs r with SigV4 for service "s3" in r.Region. See Signed for what
// is returned. Errors wrap ErrBadRequest (the request cannot be signed as
// described), ErrCredentials (no usable credentials), or are internal.
func (s *Signer) Sign(ctx context.Context, r *s3req.Request) (*Signed, error) {
	return s.SignFor(ctx, r, Caller{})
}

// SignFor is Sign for caller c: with Options.Sessions it signs with c's
// per-principal session (and fails with ErrCredentials without a caller);
// otherwise c is not used.
func (s *Signer) SignFor(ctx context.Context, r *s3req.Request, c Caller) (*Signed, error) {
	return s.SignInto(ctx, r, c, new(Storage))
}

// Storage is room for one signature: SignInto builds its result there.
// The Signed it returns lives in the Storage and shares its lifetime, so
// a Storage is used for one signature only.
type Storage struct {
	box signedBox
}

// SignInto is SignFor with the result in out: a caller that keeps its
// per-request state in one struct saves the result's allocation.
func (s *Signer) SignInto(ctx context.Context, r *s3req.Request, c Caller, out *Storage) (*Signed, error) {
	if err := validateRequest(r); err != nil {
		return nil, err
	}
	if r.ContentSHA256 == "" {
		return nil, errors.New("signer: internal: request has no ContentSHA256")
	}
	now := s.now()

	st := s.pool.Get().(*state)
	defer s.release(st)

	var (
		host          = canonicalHost(r.Scheme, r.Host)
		clientDate    string // the client's x-amz-date, if sent
		contentLength int64
		sawSHA256     bool
	)
	for i := range r.Headers {
		h := &r.Headers[i]
		if err := validateHeader(h); err != nil {
			return nil, err
		}
		switch classify(h.Name) {
		case kindUnsigned:
			continue
		case kindPreSigned:
			return nil, fmt.Errorf("%w: the request already has header %q; countersign signs requests itself and clients must not pre-sign them", ErrBadRequest, h.Name)
		case kindDate:
			if len(h.Values) != 1 {
				return nil, fmt.Errorf("%w: header %q must have exactly one value (has %d)", ErrBadDate, h.Name, len(h.Values))
			}
			v := h.Values[0]
			t, ok := parseAmzDate(v)
			if !ok {
				return nil, fmt.Errorf("%w: header %q value %q is not of the form YYYYMMDDTHHMMSSZ", ErrBadDate, h.Name, clip(v))
			}
			if d := absDuration(t.Sub(now)); d > s.maxSkew {
				return nil, fmt.Errorf("%w: header %q value %q is %s away from the signer's clock (at most %s allowed)", ErrBadDate, h.Name, clip(v), d.Round(time.Second), s.maxSkew)
			}
			clientDate = v
			// Signed as the X-Amz-Date the signer adds from the signing
			// time, which is this value.
		case kindHost:
			v, err := single(h)
			if err != nil {
				return nil, err
			}
			if !strings.EqualFold(v, host) {
				if strings.EqualFold(v, r.Host) {
					// The host is signed without the scheme's default
					// port (as HTTP clients send it); this one carries it.
					return nil, fmt.Errorf("%w: header %q value %q carries the scheme's default port; send %q", ErrBadRequest, h.Name, clip(v), host)
				}
				return nil, fmt.Errorf("%w: header %q value %q does not match the URI's host %q", ErrBadRequest, h.Name, clip(v), host)
			}
			host = v // sign the spelling the client will send
		case kindContentLength:
			v, err := single(h)
			if err != nil {
				return nil, err
			}
			n, perr := strconv.ParseUint(v, 10, 63)
			if perr != nil || (len(v) > 1 && v[0] == '0') { // ParseUint takes no sign
				// One spelling: the value is signed in decimal and echoed
				// as sent, so "010" would reach the server unsigned.
				return nil, fmt.Errorf("%w: header %q value %q is not a length in decimal without sign or leading zeros", ErrBadRequest, h.Name, clip(v))
			}
			// Signed in decimal when positive, as SigV4 signers do (a
			// declared 0 is bound through the payload hash: s3req).
			contentLength = int64(n)
		case kindContentSHA256:
			v, err := single(h)
			if err != nil {
				return nil, err
			}
			if r.AddContentSHA256 || v != r.ContentSHA256 {
				return nil, fmt.Errorf("signer: internal: header %q disagrees with the request's payload hash", h.Name)
			}
			sawSHA256 = true
			st.v4.add(h.Name, h.Values[:1:1])
		default:
			if len(h.Values) == 0 {
				continue // a header without values is not sent at all
			}
			st.v4.add(h.Name, h.Values)
		}
	}
	if r.AddContentSHA256 {
		st.sha[0] = r.ContentSHA256
		st.v4.add(hdrContentSHA256, st.sha[:])
	} else if !sawSHA256 {
		return nil, errors.New("signer: internal: request says the client sent x-amz-content-sha256, but it did not")
	}

	signTime := now
	if clientDate != "" {
		signTime, _ = parseAmzDate(clientDate)
	}

	creds, sess, err := s.credentials(ctx, r, &c)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCredentials, err)
	}
	if !creds.HasKeys() {
		return nil, fmt.Errorf("%w: the provider returned no access key", ErrCredentials)
	}
	if creds.CanExpire && !creds.Expires.After(now) {
		return nil, fmt.Errorf("%w: credentials for access key %s expired at %s", ErrCredentials, creds.AccessKeyID, creds.Expires.UTC().Format(time.RFC3339))
	}

	signed, err := s.sign(r, st, creds, host, contentLength, signTime, clientDate, &out.box)
	if err == nil {
		signed.SourceIdentity, signed.SessionName = sess.sourceIdentity, sess.sessionName
	}
	return signed, err
}

// sign computes the signature and assembles Signed in two allocations:
// one string holding the amz date, the Authorization value and the audit's
// digests (every string of Signed is a part of it), and one box holding
// Signed with the added headers' values, the signed-header names and the
// returned header slice (when they fit its arrays, as they do for the
// requests Iceberg clients send).
func (s *Signer) sign(r *s3req.Request, st *state, creds aws.Credentials, host string, contentLength int64, signTime time.Time, clientDate string, box *signedBox) (*Signed, error) {
	signTime = signTime.UTC()
	// ts is "YYYYMMDDTHHMMSSZ" then the scope "YYYYMMDD/region/s3/aws4_request",
	// in the state's buffer until the result's one string is built.
	ts := appendAmzDate(st.buf[:0], signTime)
	ts = appendScope(ts, signTime, r.Region)
	amzDate, scope := ts[:len(amzDateLayout)], ts[len(amzDateLayout):]
	if clientDate != "" && string(amzDate) != clientDate {
		return nil, fmt.Errorf("signer: internal: signing with x-amz-date %q, client sent %q", amzDate, clientDate)
	}

	signedHeaders, err := st.v4.canonicalRequest(r.Method, r.RawPath, r.RawQuery, host, contentLength, amzDate, creds.SessionToken, r.ContentSHA256)
	if err != nil {
		return nil, err
	}
	if s.onCanonical != nil {
		s.onCanonical(string(st.v4.canon))
	}
	key := s.keys.get(creds.AccessKeyID, creds.SecretAccessKey, amzDate[:8], r.Region)
	sig, crHash, b := st.v4.signature(ts, key, amzDate, scope)
	st.buf = b

	// One string: amz date, then
	// "AWS4-HMAC-SHA256 Credential=AKID/SCOPE, SignedHeaders=H, Signature=SIG",
	// then the audit's digests: of the canonical request, and of the hex
	// signature (never the signature itself).
	const credPrefix, shPrefix, sigPrefix = algorithm + " Credential=", ", SignedHeaders=", ", Signature="
	n := len(amzDate) + len(credPrefix) + len(creds.AccessKeyID) + 1 + len(scope) + len(shPrefix) + len(signedHeaders) + len(sigPrefix) + len(sig) + 4*sha256.Size
	var ab []byte
	if n <= len(box.text) {
		ab = box.text[:0:n]
	} else {
		ab = make([]byte, 0, n)
	}
	ab = append(ab, amzDate...)
	authAt := len(ab)
	ab = append(ab, credPrefix...)
	ab = append(ab, creds.AccessKeyID...)
	ab = append(ab, '/')
	scopeAt := len(ab)
	ab = append(ab, scope...)
	ab = append(ab, shPrefix...)
	shAt := len(ab)
	ab = append(ab, signedHeaders...)
	ab = append(ab, sigPrefix...)
	ab = append(ab, sig...)
	authEnd := len(ab)
	ab = append(ab, crHash...)
	sum := sha256.Sum256(sig)
	ab = hex.AppendEncode(ab, sum[:])
	// ab is never written again, so its bytes can be the result's one
	// string without a copy: in the box when it fits.
	all := unsafe.String(unsafe.SliceData(ab), len(ab))
	auth := all[authAt:authEnd]
	digests := all[authEnd:]

	out := &box.Signed
	*out = Signed{
		AccessKeyID:            creds.AccessKeyID,
		CredentialScope:        all[scopeAt : scopeAt+len(scope)],
		AmzDate:                all[:len(amzDateLayout)],
		SignedHeaders:          box.splitNames(all[shAt : shAt+len(signedHeaders)]),
		SignatureSHA256:        digests[2*sha256.Size:],
		CanonicalRequestSHA256: digests[:2*sha256.Size],
	}

	added := 1 // Authorization
	if clientDate == "" {
		added++
	}
	if creds.SessionToken != "" {
		added++
	}
	if r.AddContentSHA256 {
		added++
	}
	var hs remotesign.Headers
	if n := len(r.Headers) + added; n <= len(box.headers) {
		hs = box.headers[:len(r.Headers):n]
	} else {
		hs = make(remotesign.Headers, len(r.Headers), n)
	}
	copy(hs, r.Headers)
	nv := 0
	add := func(name, value string) {
		box.vals[nv] = value
		hs = append(hs, remotesign.Header{Name: name, Values: box.vals[nv : nv+1 : nv+1]})
		nv++
	}
	add(hdrAuthorization, auth)
	if clientDate == "" {
		add(hdrAmzDate, out.AmzDate)
	}
	if creds.SessionToken != "" {
		add(hdrSecurityToken, creds.SessionToken)
	}
	if r.AddContentSHA256 {
		add(hdrContentSHA256, r.ContentSHA256)
	}
	out.Headers = hs
	return out, nil
}

// signedBox is a Signed with the storage its slices and strings usually
// need, so that a signature is one allocation.
type signedBox struct {
	Signed
	text    [520]byte             // the strings: date, Authorization, digests (with the 8-byte malloc header, the box fills the 1,280-byte size class)
	vals    [4]string             // the added headers' values
	names   [8]string             // SignedHeaders
	headers [10]remotesign.Header // Headers: the client's and the added
}

// splitNames is strings.Split(list, ";") into the box's array when the
// names fit it.
func (box *signedBox) splitNames(list string) []string {
	n := strings.Count(list, ";") + 1
	names := box.names[:0:len(box.names)]
	if n > len(box.names) {
		names = make([]string, 0, n)
	}
	for {
		i := strings.IndexByte(list, ';')
		if i < 0 {
			return append(names, list)
		}
		names = append(names, list[:i])
		list = list[i+1:]
	}
}

// single returns the one value of a header the signer interprets.
func single(h *remotesign.Header) (string, error) {
	if len(h.Values) != 1 {
		return "", fmt.Errorf("%w: header %q must have exactly one value (has %d)", ErrBadRequest, h.Name, len(h.Values))
	}
	return h.Values[0], nil
}

// parseAmzDate parses exactly YYYYMMDDTHHMMSSZ. The shape check matters:
// time.Parse alone would also accept fractional seconds, and the signature
// must be computed over the very string the client sends.
func parseAmzDate(v string) (time.Time, bool) {
	if len(v) != len(amzDateLayout) || v[8] != 'T' || v[15] != 'Z' {
		return time.Time{}, false
	}
	for i := 0; i < 15; i++ {
		if i != 8 && (v[i] < '0' || v[i] > '9') {
			return time.Time{}, false
		}
	}
	t, err := time.Parse(amzDateLayout, v)
	return t, err == nil
}

// clip shortens client-supplied text quoted in error messages.
func clip(s string) string {
	const max = 128
	if len(s) <= max {
		return s
	}
	return s[:max] + "..."
}

func absDuration(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}

// canonicalHost is the Host header an HTTP client sends for the URI's
// host[:port]: the default port of the scheme is dropped (as Go, Java and
// botocore do), anything else is kept. Unlike the SDK's own sanitizing, an
// IPv6 literal keeps its brackets.
func canonicalHost(scheme, host string) string {
	var def string
	switch {
	case strings.EqualFold(scheme, "https"):
		def = ":443"
	case strings.EqualFold(scheme, "http"):
		def = ":80"
	}
	if def != "" && strings.HasSuffix(host, def) {
		return host[:len(host)-len(def)]
	}
	return host
}

// Character classes (RFC 3986, RFC 9110) for validating what is signed. The
// signature is over these bytes exactly, so anything an HTTP client would
// have to re-encode, or that SigV4 canonicalization would read differently
// from S3, is rejected rather than signed.
var (
	pathChars  = charClass(alnum, "-._~!$&'()*+,;=:@/") // pchar without '%', plus '/'
	queryChars = charClass(alnum, "-._~!$&'()*+,=:@/?") // pchar without '%' and ';', plus '/' and '?'
	tokenChars = charClass(alnum, "!#$%&'*+-.^_`|~")    // tchar
	hostChars  = charClass(alnum, "-._~:[]")            // reg-name / IP literal / port characters
)

// alnum is every ASCII letter and digit. queryChars leaves out ';': Go's
// url.ParseQuery (the AWS SDK's canonical query, which sigv4.go
// reproduces) drops pairs containing it silently; S3 would not.
const alnum = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"

func charClass(sets ...string) *[256]bool {
	var t [256]bool
	for _, set := range sets {
		for i := 0; i < len(set); i++ {
			t[set[i]] = true
		}
	}
	return &t
}

func validateRequest(r *s3req.Request) error {
	if r == nil {
		return errors.New("signer: internal: nil request")
	}
	if r.Method == "" || !allIn(r.Method, tokenChars) {
		return fmt.Errorf("%w: invalid method %q", ErrBadRequest, clip(r.Method))
	}
	if !validRegion(r.Region) {
		return fmt.Errorf("%w: invalid region %q", ErrBadRequest, clip(r.Region))
	}
	if !strings.EqualFold(r.Scheme, "https") && !strings.EqualFold(r.Scheme, "http") {
		return fmt.Errorf("%w: scheme %q is not http or https", ErrBadRequest, clip(r.Scheme))
	}
	if !validHost(r.Host) {
		return fmt.Errorf("%w: invalid host %q", ErrBadRequest, clip(r.Host))
	}
	if (r.RawPath != "" && r.RawPath[0] != '/') || !validEscaped(r.RawPath, pathChars) {
		return fmt.Errorf("%w: path %q is not a valid escaped URI path", ErrBadRequest, clip(r.RawPath))
	}
	if !validEscaped(r.RawQuery, queryChars) {
		return fmt.Errorf("%w: query %q is not a valid escaped URI query", ErrBadRequest, clip(r.RawQuery))
	}
	return nil
}

// validRegion accepts AWS regions and the names S3-compatible stores use;
// nothing that could change the credential scope's structure.
func validRegion(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

// validHost accepts host[:port] with a reg-name or bracketed IP literal and
// an optional non-empty numeric port.
func validHost(h string) bool {
	if h == "" || !allIn(h, hostChars) {
		return false
	}
	hostPart, port := h, ""
	if h[0] == '[' {
		end := strings.IndexByte(h, ']')
		if end < 0 {
			return false
		}
		hostPart, port = h[:end+1], h[end+1:]
		if port != "" {
			if port[0] != ':' {
				return false
			}
			port = port[1:]
			if port == "" {
				return false
			}
		}
	} else if i := strings.IndexByte(h, ':'); i >= 0 {
		hostPart, port = h[:i], h[i+1:]
		if port == "" {
			return false
		}
	}
	if hostPart == "" || (h[0] != '[' && strings.ContainsAny(hostPart, "[]")) {
		return false
	}
	for i := 0; i < len(port); i++ {
		if port[i] < '0' || port[i] > '9' {
			return false
		}
	}
	return true
}

// validEscaped reports whether s consists of allowed characters and
// well-formed %XX escapes.
func validEscaped(s string, allowed *[256]bool) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '%' {
			if i+2 >= len(s) || !isHex(s[i+1]) || !isHex(s[i+2]) {
				return false
			}
			i += 2
			continue
		}
		if !allowed[c] {
			return false
		}
	}
	return true
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func allIn(s string, allowed *[256]bool) bool {
	for i := 0; i < len(s); i++ {
		if !allowed[s[i]] {
			return false
		}
	}
	return true
}

// validateHeader rejects names that are not HTTP tokens and values with
// control characters: neither can be sent on the wire as signed, and a line
// break in a value would be ambiguous in the canonical request.
func validateHeader(h *remotesign.Header) error {
	if h.Name == "" || !allIn(h.Name, tokenChars) {
		return fmt.Errorf("%w: invalid header name %q", ErrBadRequest, clip(h.Name))
	}
	for _, v := range h.Values {
		if swar.HasControl(v, true) {
			return fmt.Errorf("%w: header %q has a control character in its value", ErrBadRequest, h.Name)
		}
	}
	return nil
}
