package e2e

import (
	"fmt"
	"hash/crc32"
	"hash/crc64"
	"math/bits"
	"slices"
	"strings"
)

// mutation is one change to a signed request in a part the signature does
// not cover, or in a way SigV4's canonical form forgives (whitespace,
// parameter order, percent-encoding spelling).
type mutation struct {
	name  string
	apply func(r *wireReq)
}

// mutationEnv is what the generator knows besides the request: the names
// of the signed headers (lower case), and other bodies of the same kind the
// case offers for swapping.
type mutationEnv struct {
	signed   map[string]bool
	altBody  map[string][]byte
	copyFrom []string // x-amz-copy-source values worth injecting
}

// injectedHeaders are added when the request lacks them: headers that
// select another operation or widen the one signed (copy, rename, tags,
// ACLs, lock bypass, method overrides), change what is stored or returned,
// or confuse the payload and authentication parsing.
func injectedHeaders(env mutationEnv) []wireHeader {
	hs := []wireHeader{
		{"x-amz-copy-source-range", "bytes=0-1"},
		{"x-amz-metadata-directive", "REPLACE"},
		{"x-amz-tagging", "injected=1"},
		{"x-amz-tagging-directive", "REPLACE"},
		{"x-amz-acl", "public-read-write"},
		{"x-amz-grant-full-control", `id="attacker"`},
		{"x-amz-storage-class", "REDUCED_REDUNDANCY"},
		{"x-amz-website-redirect-location", "/elsewhere"},
		{"x-amz-server-side-encryption", "AES256"},
		{"x-amz-bypass-governance-retention", "true"},
		{"x-amz-object-lock-legal-hold", "ON"},
		{"x-amz-meta-injected", "1"},
		{"x-amz-write-offset-bytes", "0"},
		{"x-amz-object-attributes", "ETag"},
		{"x-amz-checksum-mode", "ENABLED"},
		{"x-amz-expected-bucket-owner", "000000000000"},
		{"x-amz-request-payer", "requester"},
		{"x-amz-security-token", "injected"},
		{"x-amz-decoded-content-length", "1"},
		{"x-amz-checksum-crc32", "AAAAAA=="},
		{"Content-MD5", "1B2M2Y8AsgTpgAmY7PhCfg=="},
		{"Content-Type", "text/html"},
		{"Content-Encoding", "aws-chunked"},
		{"Content-Disposition", "attachment"},
		{"Cache-Control", "no-store"},
		{"Range", "bytes=1-2"},
		{"If-None-Match", "*"},
		{"If-Match", `"0123456789abcdef0123456789abcdef"`},
		{"X-HTTP-Method-Override", "DELETE"},
		{"X-HTTP-Method", "DELETE"},
		{"X-Method-Override", "DELETE"},
	}
	for _, src := range env.copyFrom {
		hs = append(hs, wireHeader{"x-amz-copy-source", src}, wireHeader{"x-amz-rename-source", src})
	}
	return hs
}

// addedParams are query parameters appended to the signed query: each
// selects another operation, version, upload or listing if the server
// ignored the signature's query.
var addedParams = []string{
	"versionId=null", "versionId=3HL4kqtJlcpXroDTDmJ%2BrmSpXd3dIbrHY", "uploadId=injected", "partNumber=1",
	"tagging", "acl", "delete", "uploads", "x-id=DeleteObject", "list-type=2", "prefix=",
	"response-content-type=text%2Fhtml", "attributes", "retention", "restore", "renameObject",
	"X-Amz-Algorithm=AWS4-HMAC-SHA256",
}

// mutations derives every variant of r the oracle sends.
func mutations(r wireReq, env mutationEnv) []mutation {
	var ms []mutation
	add := func(name string, f func(r *wireReq)) { ms = append(ms, mutation{name, f}) }

	// Headers present: remove the unsigned ones, duplicate every one,
	// replace the unsigned ones' values.
	seen := map[string]bool{}
	for _, h := range r.headers {
		lower := strings.ToLower(h.name)
		// amz-sdk-* are unsigned client headers like User-Agent, which
		// stands for them (the oracle's time goes to other classes).
		if seen[lower] || lower == "host" || strings.HasPrefix(lower, "amz-sdk-") {
			continue
		}
		seen[lower] = true
		name, value := h.name, h.value
		if !env.signed[lower] && lower != "authorization" {
			add("remove "+name, func(r *wireReq) { r.headers = dropHeader(r.headers, name) })
			add("duplicate "+name+" with another value", func(r *wireReq) {
				r.headers = append(r.headers, wireHeader{name, otherValue(lower, value)})
			})
			continue
		}
		add("duplicate "+name, func(r *wireReq) { r.headers = append(r.headers, wireHeader{name, value}) })
	}
	for _, h := range injectedHeaders(env) {
		if seen[strings.ToLower(h.name)] {
			continue
		}
		add("add "+h.name+": "+h.value, func(r *wireReq) { r.headers = append(r.headers, h) })
	}

	// Whitespace SigV4 forgives in signed header values: leading and
	// trailing blanks are trimmed and runs of spaces become one.
	for _, h := range r.headers {
		lower := strings.ToLower(h.name)
		if !env.signed[lower] && lower != "authorization" {
			continue
		}
		name := h.name
		add("whitespace around "+name, func(r *wireReq) { mapHeader(r, name, func(v string) string { return "  " + v + " \t" }) })
		if lower != "authorization" && (strings.Contains(h.value, " ") || lower == "x-amz-copy-source") {
			add("double spaces in "+name, func(r *wireReq) {
				mapHeader(r, name, func(v string) string {
					return strings.ReplaceAll(v, " ", "  ") + map[bool]string{true: "  "}[!strings.Contains(v, " ")]
				})
			})
		}
	}
	add("upper-case Host", func(r *wireReq) { mapHeader(r, "Host", strings.ToUpper) })
	add("Host with a trailing dot", func(r *wireReq) {
		mapHeader(r, "Host", func(v string) string {
			host, port, _ := strings.Cut(v, ":")
			return host + ".:" + port
		})
	})

	// Query: order, additions, duplicates, removals, spelling.
	path, query, _ := strings.Cut(r.target, "?")
	params := splitQuery(query)
	if len(params) > 1 {
		add("reverse the query", func(r *wireReq) {
			rev := slices.Clone(params)
			slices.Reverse(rev)
			r.target = path + "?" + strings.Join(rev, "&")
		})
	}
	for _, p := range addedParams {
		add("add ?"+p, func(r *wireReq) { r.target = path + "?" + strings.Join(append(slices.Clone(params), p), "&") })
	}
	add("prepend ?versionId=null", func(r *wireReq) {
		r.target = path + "?" + strings.Join(append([]string{"versionId=null"}, params...), "&")
	})
	for i, p := range params {
		pn, _, _ := strings.Cut(p, "=")
		add("duplicate ?"+pn, func(r *wireReq) { r.target = path + "?" + strings.Join(slices.Insert(slices.Clone(params), i, p), "&") })
		add("remove ?"+pn, func(r *wireReq) { r.target = joinTarget(path, slices.Delete(slices.Clone(params), i, i+1)) })
		if lower := lowerHex(p); lower != p {
			add("lower-case escapes in ?"+pn, func(r *wireReq) { r.target = path + "?" + replaceAt(params, i, lower) })
		}
		if strings.Contains(p, "%20") {
			add("'+' for %20 in ?"+pn, func(r *wireReq) { r.target = path + "?" + replaceAt(params, i, strings.ReplaceAll(p, "%20", "+")) })
		}
		if strings.Contains(p, "%2F") {
			add("raw '/' in ?"+pn, func(r *wireReq) { r.target = path + "?" + replaceAt(params, i, strings.ReplaceAll(p, "%2F", "/")) })
		}
	}
	add("trailing '&' in the query", func(r *wireReq) { r.target = path + "?" + strings.Join(params, "&") + "&" })
	if query == "" {
		add("empty query '?'", func(r *wireReq) { r.target = path + "?" })
	}

	// Path spelling: the path is signed, but a server that canonicalizes
	// it differently from countersign may accept one spelling for another.
	if i := strings.LastIndexByte(path, '/'); i >= 0 && i+1 < len(path) {
		dir, leaf := path[:i], path[i+1:]
		add("dot segment in the path", func(r *wireReq) { r.target = joinTarget(dir+"/./"+leaf, params) })
		add("double slash in the path", func(r *wireReq) { r.target = joinTarget(dir+"//"+leaf, params) })
		add("escaped '/' in the path", func(r *wireReq) { r.target = joinTarget(dir+"%2F"+leaf, params) })
		add("escaped letter in the path", func(r *wireReq) { r.target = joinTarget(dir+"/"+escapeFirstLetter(leaf), params) })
		add("'+' for %20 in the path", func(r *wireReq) { r.target = joinTarget(strings.ReplaceAll(path, "%20", "+"), params) })
	}
	add("trailing slash on the path", func(r *wireReq) { r.target = joinTarget(path+"/", params) })

	// Body.
	if len(r.body) > 0 {
		add("flip the body's last byte", func(r *wireReq) { r.body[len(r.body)-1] ^= 0x01 })
		add("append a newline to the body", func(r *wireReq) { r.body = append(r.body, '\n') })
		add("truncate the body", func(r *wireReq) { r.body = r.body[:len(r.body)/2] })
		add("empty the body", func(r *wireReq) { r.body = nil })
		add("send the body chunked", func(r *wireReq) { r.chunked = true })
	} else if r.method == "PUT" || r.method == "POST" {
		add("add a body", func(r *wireReq) { r.body = []byte("injected") })
	}
	names := make([]string, 0, len(env.altBody))
	for n := range env.altBody {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		alt := env.altBody[n]
		add("swap the body for "+n, func(r *wireReq) { r.body = slices.Clone(alt) })
		// The same body, but with the original's CRC: a CRC does not bind
		// a body, since a same-length one with any CRC takes a moment.
		for _, c := range crcHeaders {
			if v := r.get(c.header); len(v) == 1 {
				forged, ok := forgeCRC(alt, r.body, c)
				if !ok {
					panic(fmt.Sprintf("cannot forge %s for %q: it needs a run of %d '@' and to be no longer than %d bytes", c.header, alt, c.width/4+8, len(r.body)))
				}
				add("swap the body for "+n+" with a forged "+c.header, func(r *wireReq) { r.body = forged })
			}
		}
	}
	return ms
}

func splitQuery(q string) []string {
	if q == "" {
		return nil
	}
	return strings.Split(q, "&")
}

func joinTarget(path string, params []string) string {
	if len(params) == 0 {
		return path
	}
	return path + "?" + strings.Join(params, "&")
}

func replaceAt(params []string, i int, p string) string {
	c := slices.Clone(params)
	c[i] = p
	return strings.Join(c, "&")
}

func lowerHex(s string) string {
	b := []byte(s)
	for i := 0; i+2 < len(b); i++ {
		if b[i] == '%' {
			for j := i + 1; j <= i+2; j++ {
				if b[j] >= 'A' && b[j] <= 'F' {
					b[j] += 'a' - 'A'
				}
			}
		}
	}
	return string(b)
}

func escapeFirstLetter(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' {
			return s[:i] + "%" + strings.ToUpper(hexByte(c)) + s[i+1:]
		}
	}
	return s
}

func hexByte(c byte) string {
	const digits = "0123456789abcdef"
	return string([]byte{digits[c>>4], digits[c&15]})
}

// otherValue is a plausible different value for an unsigned header.
func otherValue(lower, v string) string {
	switch lower {
	case "range":
		return "bytes=1-2"
	case "content-type":
		return "text/html"
	case "content-md5":
		return "1B2M2Y8AsgTpgAmY7PhCfg=="
	}
	return v + "-other"
}

func dropHeader(hs []wireHeader, name string) []wireHeader {
	return slices.DeleteFunc(slices.Clone(hs), func(h wireHeader) bool { return strings.EqualFold(h.name, name) })
}

func mapHeader(r *wireReq, name string, f func(string) string) {
	for i := range r.headers {
		if strings.EqualFold(r.headers[i].name, name) {
			r.headers[i].value = f(r.headers[i].value)
		}
	}
}

// crcHeader is a checksum header S3 verifies against the body.
type crcHeader struct {
	header string
	width  int // bits
	sum    func([]byte) uint64
}

var (
	crc32C    = crc32.MakeTable(crc32.Castagnoli)
	crc64NVME = crc64.MakeTable(0x9a6c9329ac4bc9b5)
)

var crcHeaders = []crcHeader{
	{"x-amz-checksum-crc32", 32, func(b []byte) uint64 { return uint64(crc32.ChecksumIEEE(b)) }},
	{"x-amz-checksum-crc32c", 32, func(b []byte) uint64 { return uint64(crc32.Checksum(b, crc32C)) }},
	{"x-amz-checksum-crc64nvme", 64, func(b []byte) uint64 { return crc64.Checksum(b, crc64NVME) }},
}

// forgeCRC returns alt, with its '@' placeholders replaced by letters of
// '@'..'O', so that it has original's length and CRC; alt must hold at
// least width/4+8 consecutive '@' (e.g. in a key name) and be no longer
// than original, which it is padded to by repeating its last placeholder
// run. CRCs are affine over GF(2) for a fixed length, so this is linear
// algebra: each placeholder contributes 4 free bits.
func forgeCRC(alt, original []byte, c crcHeader) ([]byte, bool) {
	run := strings.Index(string(alt), strings.Repeat("@", c.width/4+8))
	if run < 0 || len(alt) > len(original) {
		return nil, false
	}
	body := slices.Insert(slices.Clone(alt), run, []byte(strings.Repeat("@", len(original)-len(alt)))...)
	var free []int
	for i := run; i < len(body) && body[i] == '@'; i++ {
		free = append(free, i)
	}
	base := c.sum(body)
	target := c.sum(original) ^ base
	type row struct {
		vec   uint64
		combo []bool
	}
	basis := map[int]row{}
	for i := 0; i < 4*len(free); i++ {
		trial := slices.Clone(body)
		trial[free[i/4]] |= 1 << (i % 4)
		r := row{c.sum(trial) ^ base, make([]bool, 4*len(free))}
		r.combo[i] = true
		for r.vec != 0 {
			p := 63 - bits.LeadingZeros64(r.vec)
			b, ok := basis[p]
			if !ok {
				basis[p] = r
				break
			}
			r.vec ^= b.vec
			for j := range r.combo {
				r.combo[j] = r.combo[j] != b.combo[j]
			}
		}
	}
	combo := make([]bool, 4*len(free))
	for target != 0 {
		b, ok := basis[63-bits.LeadingZeros64(target)]
		if !ok {
			return nil, false
		}
		target ^= b.vec
		for j := range combo {
			combo[j] = combo[j] != b.combo[j]
		}
	}
	for i, set := range combo {
		if set {
			body[free[i/4]] |= 1 << (i % 4)
		}
	}
	if c.sum(body) != c.sum(original) {
		return nil, false
	}
	return body, true
}
