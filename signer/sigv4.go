package signer

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// SigV4 for S3, computed the way the AWS SDK's v4.Signer.SignHTTP computes
// it (with DisableURIPathEscaping, as S3 requires), byte for byte, in
// reused buffers.
//
// Why not the SDK's signer: it is the reference, and the tests hold this
// code to it (TestSigV4MatchesSDK, FuzzSigV4MatchesSDK, and the
// pipeline's FuzzClassifyThenSign oracle, which re-signs every answer with
// the SDK). On the hot path it cost about 11 µs and 40 allocations per
// request — more than half of the whole in-process path's allocations —
// because it rebuilds an http.Header map, sorts through reflection,
// re-parses the query into url.Values and creates HMACs per call. The
// requests countersign signs are already validated (escaped path, query
// and header characters, one spelling per header name), so the canonical
// request can be written straight into a buffer.

// sigHeader is one header to sign: its lower-case name, at n0:n1 in
// sigv4.names (lowering into a buffer allocates nothing; strings.ToLower
// allocated per capitalised name), and the client's values.
type sigHeader struct {
	n0, n1 int
	values []string
}

// queryParam is one query parameter, escaped, as offsets into a buffer.
type queryParam struct{ k0, k1, v0, v1 int }

// sigv4 is the per-call scratch space (part of state).
type sigv4 struct {
	headers []sigHeader
	names   []byte // the headers' lower-case names
	params  []queryParam
	qbuf    []byte // escaped query keys and values
	canon   []byte // the canonical request
	toSign  []byte
	mac     hash.Hash
	macKey  [sha256.Size]byte
	sum     [sha256.Size]byte
}

func (v *sigv4) reset() {
	clear(v.headers)
	v.headers = v.headers[:0]
	v.names = v.names[:0]
	v.params = v.params[:0]
	v.qbuf, v.canon, v.toSign = v.qbuf[:0], v.canon[:0], v.toSign[:0]
}

// add queues a header to sign. canonicalRequest refuses two with the same
// lower-case name (remotesign refuses them first; this keeps Sign safe on
// its own).
func (v *sigv4) add(name string, values []string) {
	n0 := len(v.names)
	for i := 0; i < len(name); i++ { // ASCII: validateHeader allows tokens only
		c := name[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		v.names = append(v.names, c)
	}
	v.headers = append(v.headers, sigHeader{n0: n0, n1: len(v.names), values: values})
}

// name is h's lower-case name.
func (v *sigv4) name(h *sigHeader) []byte { return v.names[h.n0:h.n1] }

// canonicalRequest writes the canonical request into v.canon:
//
//	METHOD \n URI \n QUERY \n name:value \n ... \n \n SIGNED;HEADERS \n PAYLOAD
//
// host is the Host the client sends, contentLength is signed when
// positive, amzDate and token are the headers the signer adds.
func (v *sigv4) canonicalRequest(method, rawPath, rawQuery, host string, contentLength int64, amzDate []byte, token, payload string) (signedHeaders []byte, err error) {
	v.add("host", nil)
	if contentLength > 0 {
		v.add("content-length", nil)
	}
	v.add("x-amz-date", nil)
	if token != "" {
		v.add("x-amz-security-token", nil)
	}
	names := v.names
	slices.SortFunc(v.headers, func(a, b sigHeader) int { return bytes.Compare(names[a.n0:a.n1], names[b.n0:b.n1]) })
	for i := 1; i < len(v.headers); i++ {
		if name := v.name(&v.headers[i]); bytes.Equal(name, v.name(&v.headers[i-1])) {
			return nil, fmt.Errorf("%w: header %q appears twice (header names are case-insensitive)", ErrBadRequest, clip(string(name)))
		}
	}

	b := append(v.canon[:0], method...)
	b = append(b, '\n')
	if rawPath == "" {
		b = append(b, '/')
	} else {
		b = append(b, rawPath...)
	}
	b = append(b, '\n')
	b = v.appendCanonicalQuery(b, rawQuery)
	b = append(b, '\n')
	for i := range v.headers {
		h := &v.headers[i]
		name := v.name(h)
		b = append(b, name...)
		b = append(b, ':')
		switch string(name) {
		case "host":
			b = appendStripped(b, host, false)
		case "content-length":
			b = strconv.AppendInt(b, contentLength, 10)
		case "x-amz-date":
			b = append(b, amzDate...)
		case "x-amz-security-token":
			b = appendStripped(b, token, true)
		default:
			for j, val := range h.values {
				if j > 0 {
					b = append(b, ',')
				}
				b = appendStripped(b, val, true)
			}
		}
		b = append(b, '\n')
	}
	b = append(b, '\n')
	start := len(b)
	for i := range v.headers {
		if i > 0 {
			b = append(b, ';')
		}
		b = append(b, v.name(&v.headers[i])...)
	}
	signedHeaders = b[start:len(b):len(b)]
	b = append(b, '\n')
	b = append(b, payload...)
	v.canon = b
	return signedHeaders, nil
}

// appendStripped appends the SDK's cleaned header value:
// StripExcessSpaces (leading and trailing spaces removed, inner runs of
// spaces collapsed to one) and then, for header values (trim),
// strings.TrimSpace — in that order, as the SDK does.
func appendStripped(b []byte, s string, trim bool) []byte {
	start := len(b)
	j := len(s) - 1
	for j >= 0 && s[j] == ' ' {
		j--
	}
	k := 0
	for k < j && s[k] == ' ' {
		k++
	}
	s = s[k : j+1]
	if !strings.Contains(s, "  ") {
		// No run to collapse (session tokens, ~1-3 KB, never have one):
		// one copy instead of a byte at a time.
		b = append(b, s...)
	} else {
		b = appendCollapsed(b, s)
	}
	if trim {
		t := bytes.TrimSpace(b[start:])
		b = b[:start+copy(b[start:], t)]
	}
	return b
}

// appendCollapsed appends s with every run of spaces collapsed to one.
func appendCollapsed(b []byte, s string) []byte {
	spaces := 0
	for i := 0; i < len(s); i++ {
		if s[i] == ' ' {
			if spaces == 0 {
				b = append(b, ' ')
			}
			spaces++
			continue
		}
		spaces = 0
		b = append(b, s[i])
	}
	return b
}

// appendCanonicalQuery is the SDK's canonical query: the query parsed as
// url.ParseQuery parses it (pairs split on '&', a pair with ';' or a bad
// escape dropped, '+' read as a space), every key and value escaped as
// url.QueryEscape does with spaces as %20, sorted by key then value,
// joined with '&' and '='.
func (v *sigv4) appendCanonicalQuery(b []byte, rawQuery string) []byte {
	q := v.qbuf[:0]
	params := v.params[:0]
	for rawQuery != "" {
		var pair string
		pair, rawQuery, _ = strings.Cut(rawQuery, "&")
		if pair == "" || strings.IndexByte(pair, ';') >= 0 {
			continue
		}
		key, value, _ := strings.Cut(pair, "=")
		key, err := url.QueryUnescape(key)
		if err != nil {
			continue
		}
		value, err = url.QueryUnescape(value)
		if err != nil {
			continue
		}
		var p queryParam
		p.k0 = len(q)
		q = appendQueryEscaped(q, key)
		p.k1 = len(q)
		p.v0 = len(q)
		q = appendQueryEscaped(q, value)
		p.v1 = len(q)
		params = append(params, p)
	}
	slices.SortFunc(params, func(x, y queryParam) int {
		// bytes.Compare: string conversions here allocated for keys and
		// values longer than 32 bytes (an uploadId).
		if c := bytes.Compare(q[x.k0:x.k1], q[y.k0:y.k1]); c != 0 {
			return c
		}
		return bytes.Compare(q[x.v0:x.v1], q[y.v0:y.v1])
	})
	for i, p := range params {
		if i > 0 {
			b = append(b, '&')
		}
		b = append(b, q[p.k0:p.k1]...)
		b = append(b, '=')
		b = append(b, q[p.v0:p.v1]...)
	}
	v.qbuf, v.params = q, params
	return b
}

// appendQueryEscaped is strings.ReplaceAll(url.QueryEscape(s), "+", "%20"):
// every byte but the unreserved A-Z a-z 0-9 - _ . ~ percent-encoded with
// upper-case hex.
func appendQueryEscaped(b []byte, s string) []byte {
	const upperHex = "0123456789ABCDEF"
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.' || c == '~' {
			b = append(b, c)
			continue
		}
		b = append(b, '%', upperHex[c>>4], upperHex[c&15])
	}
	return b
}

// signature computes the hex signature of the canonical request in v.canon
// and the hex SHA-256 of the canonical request, both appended to out.
func (v *sigv4) signature(out []byte, key *[sha256.Size]byte, amzDate, scope []byte) (sig, crHash []byte, buf []byte) {
	v.sum = sha256.Sum256(v.canon)
	start := len(out)
	out = hex.AppendEncode(out, v.sum[:])
	crHash = out[start:len(out):len(out)]

	t := append(v.toSign[:0], algorithm...)
	t = append(t, '\n')
	t = append(t, amzDate...)
	t = append(t, '\n')
	t = append(t, scope...)
	t = append(t, '\n')
	t = append(t, crHash...)
	v.toSign = t

	if v.mac == nil || v.macKey != *key {
		v.mac = hmac.New(sha256.New, key[:])
		v.macKey = *key
	} else {
		v.mac.Reset()
	}
	v.mac.Write(t)
	start = len(out)
	out = hex.AppendEncode(out, v.mac.Sum(v.sum[:0]))
	sig = out[start:len(out):len(out)]
	return sig, crHash, out
}

// derivedKey is a SigV4 signing key: HMAC chain over the secret, the date,
// the region and the service. It changes once a day per region and key.
type derivedKey struct {
	accessKeyID, secret, date, region string
	key                               [sha256.Size]byte
}

// keyCache keeps recently derived keys in a set-associative table chosen
// by the access key id (keyWays slots per id): one credential, or with
// per-principal sessions many sessions in turn, hit without deriving again;
// a miss costs four HMACs and their allocations (a few µs), so alternating
// regions is still cheap.
type keyCache struct {
	slots [keySlots]atomic.Pointer[derivedKey]
	next  atomic.Uint32 // the way a miss replaces
}

const (
	keySlots = 256
	keyWays  = 4
)

func (c *keyCache) get(accessKeyID, secret string, date []byte, region string) *[sha256.Size]byte {
	h := uint32(2166136261) // FNV-1a
	for i := 0; i < len(accessKeyID); i++ {
		h = (h ^ uint32(accessKeyID[i])) * 16777619
	}
	set := h % (keySlots / keyWays) * keyWays
	for w := uint32(0); w < keyWays; w++ {
		if k := c.slots[set+w].Load(); k != nil && k.accessKeyID == accessKeyID && k.secret == secret && k.date == string(date) && k.region == region {
			return &k.key
		}
	}
	k := &derivedKey{accessKeyID: accessKeyID, secret: secret, date: string(date), region: region}
	hk := keyStep([]byte("AWS4"+secret), k.date)
	hk = keyStep(hk, region)
	hk = keyStep(hk, service)
	hk = keyStep(hk, "aws4_request")
	copy(k.key[:], hk)
	c.slots[set+c.next.Add(1)%keyWays].Store(k)
	return &k.key
}

func keyStep(key []byte, data string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(data))
	return m.Sum(nil)
}

// appendScope appends "YYYYMMDD/region/s3/aws4_request".
func appendScope(b []byte, t time.Time, region string) []byte {
	b = appendDate(b, t)
	b = append(b, '/')
	b = append(b, region...)
	b = append(b, "/"+service+"/aws4_request"...)
	return b
}

// appendAmzDate appends t (UTC) as amzDateLayout, "YYYYMMDDTHHMMSSZ":
// time.AppendFormat interprets the layout on every call.
func appendAmzDate(b []byte, t time.Time) []byte {
	b = appendDate(b, t)
	h, m, sec := t.Clock()
	return append(b, 'T', byte('0'+h/10), byte('0'+h%10), byte('0'+m/10), byte('0'+m%10), byte('0'+sec/10), byte('0'+sec%10), 'Z')
}

// appendDate appends t's date as "YYYYMMDD" (years 0000-9999; SigV4 dates
// are the signing time's).
func appendDate(b []byte, t time.Time) []byte {
	y, mo, d := t.Date()
	return append(b, byte('0'+y/1000%10), byte('0'+y/100%10), byte('0'+y/10%10), byte('0'+y%10),
		byte('0'+mo/10), byte('0'+mo%10), byte('0'+d/10), byte('0'+d%10))
}
