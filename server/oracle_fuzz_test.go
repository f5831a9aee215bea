package server

import (
	"context"
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"hash"
	"hash/crc32"
	"hash/crc64"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/countersign/countersign/policy"
)

// The oracle fuzz test: arbitrary method, URI, headers and body go through
// the real pipeline (decode, authenticate, classify, OPA, sign, audit) with
// a policy that allows everything on bucket "lake". Whenever a request is
// signed, the oracle re-derives — from the returned uri and headers only,
// and without s3req — what an S3 server would see: the endpoint, the
// bucket and the key after exactly one percent-decoding (path-style or
// virtual-hosted, as newTestServer's endpoint "localhost:7070" allows),
// the copy source, the DeleteObjects keys of the body the signature binds.
// Those must be exactly the objects the policy was asked about, and the
// returned signature must be the one AWS SigV4 gives the canonical request
// an S3 server builds from that bucket and key. So a request that
// classified to object K in bucket B can never carry a signature valid
// for another object.

// oraclePolicy allows everything — any operation, admin included — whose
// object is in bucket "lake", so that as much as possible gets signed.
const oraclePolicy = `package countersign.authz

default allow := false

allow if input.resource.bucket == "lake"
`

const (
	oracleAccessKey = "AKTEST"
	oracleSecret    = "secret"
	oracleRegion    = "us-east-1"
	oracleHost      = "localhost"
	oraclePort      = "7070"
)

// recordingAuthorizer records every policy input and delegates the
// decision to the real engine.
type recordingAuthorizer struct {
	next Authorizer
	mu   sync.Mutex
	ins  []policy.Input
}

func (r *recordingAuthorizer) Authorize(ctx context.Context, in *policy.Input) (policy.Decision, error) {
	r.mu.Lock()
	c := *in
	if in.CopySource != nil {
		cs := *in.CopySource
		c.CopySource = &cs
	}
	r.ins = append(r.ins, c)
	r.mu.Unlock()
	return r.next.Authorize(ctx, in)
}

func (r *recordingAuthorizer) take() []policy.Input {
	r.mu.Lock()
	defer r.mu.Unlock()
	ins := r.ins
	r.ins = nil
	return ins
}

// oracleRequest builds the sign request JSON from the fuzzed parts, so the
// fuzzer spends its time on S3 semantics rather than on JSON syntax
// (FuzzServeSign covers that).
func oracleRequest(method, uri, headers, body string) (string, bool) {
	m := map[string]any{"region": oracleRegion, "uri": uri, "method": method}
	hs := map[string][]string{}
	// headers: one "Name: value" per line; a repeated name adds a value.
	for line := range strings.SplitSeq(headers, "\n") {
		name, value, ok := strings.Cut(line, ":")
		if !ok || name == "" {
			continue
		}
		hs[name] = append(hs[name], strings.TrimPrefix(value, " "))
	}
	m["headers"] = hs
	if body != "" {
		m["body"] = body
	}
	b, err := json.Marshal(m)
	return string(b), err == nil
}

// oracleSeeds are seeds (also committed in testdata/fuzz/FuzzClassifyThenSign,
// as style 3): method, uri, headers ("Name: value" lines) and body. All but
// the stale X-Amz-Date one are signed.
var oracleSeeds = func() [][4]string {
	del := `<Delete><Object><Key>wh/a</Key></Object><Object><Key>wh/b c</Key></Object></Delete>`
	delMD5 := md5.Sum([]byte(del))
	return [][4]string{
		{"GET", "http://localhost:7070/lake/wh/db/t/data/f.parquet", "amz-sdk-request: attempt=1; max=4", ""},
		{"HEAD", "http://lake.localhost:7070/wh/a%20b%2B%E2%82%AC.parquet", "Range: bytes=0-99", ""},
		{"PUT", "http://localhost:7070/lake/wh/copy", "x-amz-copy-source: lake/wh/src%3Dx?versionId=3", ""},
		{"PUT", "http://lake.localhost:7070/wh/k?partNumber=1&uploadId=abc", "Content-Length: 4\nx-amz-content-sha256: UNSIGNED-PAYLOAD", ""},
		{"POST", "http://localhost:7070/lake?delete", "Content-MD5: " + base64.StdEncoding.EncodeToString(delMD5[:]), del},
		{"POST", "http://lake.localhost:7070/?delete", "Content-Type: application/xml", del},
		{"GET", "http://localhost:7070/lake?list-type=2&prefix=wh%2Fdb%2F&delimiter=%2F", "", ""},
		{"GET", "http://localhost:7070/lake/wh/%252F..%252Fother", "Host: localhost:7070", ""},
		{"DELETE", "http://localhost:7070/lake/wh/k?uploadId=u1", "X-Amz-Date: 20200101T000000Z", ""},
		{"PUT", "http://lake.localhost:7070/wh/k?tagging", "x-amz-acl: private\nx-amz-meta-a: 1\nX-Multi: 1\nX-Multi: 2", ""},
	}
}()

// oracleSetup is the real pipeline with the recording authorizer in front
// of the real OPA engine.
type oracleSetup struct {
	s     *Server
	rec   *recordingAuthorizer
	authz string
	creds aws.Credentials
	v4    *v4.Signer
}

func newOracleSetup(tb testing.TB) *oracleSetup {
	s := newTestServer(tb, oraclePolicy, nil, Options{})
	rec := &recordingAuthorizer{next: s.handler.stages.Authorizer}
	s.handler.stages.Authorizer = rec
	return &oracleSetup{
		s: s, rec: rec,
		authz: "Bearer " + mintToken("fuzzer", time.Now().Add(24*time.Hour), "engineers"),
		creds: aws.Credentials{AccessKeyID: oracleAccessKey, SecretAccessKey: oracleSecret},
		v4:    v4.NewSigner(func(o *v4.SignerOptions) { o.DisableURIPathEscaping = true }),
	}
}

type oracleResult struct {
	URI     string              `json:"uri"`
	Headers map[string][]string `json:"headers"`
}

// sign runs one request through the pipeline. It returns nil (and no
// error) when the request was refused without any signature.
func (o *oracleSetup) sign(tb testing.TB, method, uri, headers, body string) (*oracleResult, []policy.Input, error) {
	reqBody, ok := oracleRequest(method, uri, headers, body)
	if !ok {
		return nil, nil, nil
	}
	o.rec.take()
	r := doAs(tb, o.s, o.authz, "POST", "/v1/aws/s3/sign", reqBody)
	ins := o.rec.take()
	if r.status != http.StatusOK {
		if strings.Contains(r.raw, `"Authorization"`) || signatureRE.MatchString(r.raw) {
			return nil, nil, fmt.Errorf("refusal %d carries a signature: %s", r.status, r.raw)
		}
		return nil, nil, nil
	}
	var res oracleResult
	if err := json.Unmarshal([]byte(r.raw), &res); err != nil {
		return nil, nil, fmt.Errorf("signed answer is not a RemoteSignResult: %v %s", err, r.raw)
	}
	return &res, ins, nil
}

// oracleURI builds the request URI from the fuzzed style and target:
// mostly a key (or bucket and query) under the configured endpoint, so
// that a good share of inputs is signed and checked, and with style 3 the
// whole URI, so that hosts, ports and schemes are fuzzed too.
func oracleURI(style uint8, target string) string {
	switch style % 4 {
	case 0:
		return "http://localhost:7070/lake/" + target
	case 1:
		return "http://lake.localhost:7070/" + target
	case 2:
		return "http://localhost:7070/" + target
	}
	return target
}

// oracleStyleSeeds are seeds for styles 0-2 (oracleSeeds are style 3).
var oracleStyleSeeds = []struct {
	method  string
	style   uint8
	target  string
	headers string
}{
	{"GET", 0, "wh/db/t/data/00000-1-a.parquet?x-id=GetObject", "Range: bytes=4-"},
	{"PUT", 0, "wh/db/t/metadata/v2.metadata.json", "Content-Length: 1024\nContent-Type: application/json"},
	{"POST", 1, "wh/k?uploads", "x-amz-checksum-algorithm: CRC32"},
	{"DELETE", 1, "wh/%E2%82%AC/k?versionId=v1", ""},
	{"GET", 2, "lake?list-type=2&prefix=wh%2Fdb%2F&continuation-token=abc", ""},
	{"HEAD", 2, "lake", ""},
}

func FuzzClassifyThenSign(f *testing.F) {
	for _, s := range oracleSeeds {
		f.Add(s[0], uint8(3), s[1], s[2], s[3])
	}
	for _, s := range oracleStyleSeeds {
		f.Add(s.method, s.style, s.target, s.headers, "")
	}
	o := newOracleSetup(f)
	f.Fuzz(func(t *testing.T, method string, style uint8, target, headers, body string) {
		uri := oracleURI(style, target)
		res, ins, err := o.sign(t, method, uri, headers, body)
		if err == nil && res != nil {
			err = checkSigned(o.v4, o.creds, method, uri, body, res.URI, res.Headers, ins)
		}
		if err != nil {
			t.Fatal(err)
		}
	})
}

// TestClassifyThenSignOracle shows the oracle is not vacuous: the seeds
// are signed and pass it, and each way of pointing a signature at another
// object than the one authorized is caught.
func TestClassifyThenSignOracle(t *testing.T) {
	o := newOracleSetup(t)
	type signed struct {
		res  *oracleResult
		ins  []policy.Input
		seed [4]string
	}
	var got []signed
	for i, sd := range oracleSeeds {
		res, ins, err := o.sign(t, sd[0], sd[1], sd[2], sd[3])
		if err != nil {
			t.Fatalf("seed %d: %v", i, err)
		}
		if strings.Contains(sd[2], "X-Amz-Date: 2020") {
			if res != nil {
				t.Fatalf("seed %d: signed with a stale date", i)
			}
			continue
		}
		if res == nil {
			t.Fatalf("seed %d (%s %s) was not signed", i, sd[0], sd[1])
		}
		if err := checkSigned(o.v4, o.creds, sd[0], sd[1], sd[3], res.URI, res.Headers, ins); err != nil {
			t.Fatalf("seed %d: %v", i, err)
		}
		got = append(got, signed{res, ins, sd})
	}

	for i, sd := range oracleStyleSeeds {
		uri := oracleURI(sd.style, sd.target)
		res, ins, err := o.sign(t, sd.method, uri, sd.headers, "")
		if err == nil && res == nil {
			err = fmt.Errorf("not signed")
		}
		if err == nil {
			err = checkSigned(o.v4, o.creds, sd.method, uri, "", res.URI, res.Headers, ins)
		}
		if err != nil {
			t.Fatalf("style seed %d (%s %s): %v", i, sd.method, uri, err)
		}
	}

	clone := func(h map[string][]string) map[string][]string {
		c := make(map[string][]string, len(h))
		for k, v := range h {
			c[k] = slices.Clone(v)
		}
		return c
	}
	get, put, del, cp := got[0], got[3], got[4], got[2]
	mutations := []struct {
		name string
		err  func() error
	}{
		{"signature replayed for another key", func() error {
			u := strings.Replace(get.seed[1], "f.parquet", "g.parquet", 1)
			return checkSigned(o.v4, o.creds, "GET", u, "", u, get.res.Headers, get.ins)
		}},
		{"policy asked about another key", func() error {
			ins := slices.Clone(get.ins)
			ins[0].Resource.Key = "wh/other"
			return checkSigned(o.v4, o.creds, "GET", get.seed[1], "", get.res.URI, get.res.Headers, ins)
		}},
		{"signature replayed with another method", func() error {
			return checkSigned(o.v4, o.creds, "DELETE", get.seed[1], "", get.res.URI, get.res.Headers, get.ins)
		}},
		{"signature replayed on another bucket (virtual-hosted)", func() error {
			u := strings.Replace(put.seed[1], "lake.", "other.", 1)
			return checkSigned(o.v4, o.creds, "PUT", u, "", u, put.res.Headers, put.ins)
		}},
		{"signature replayed with another query (same object)", func() error {
			u := strings.Replace(put.seed[1], "partNumber=1", "partNumber=2", 1)
			return checkSigned(o.v4, o.creds, "PUT", u, "", u, put.res.Headers, put.ins)
		}},
		{"signature byte flipped", func() error {
			h := clone(get.res.Headers)
			a := h["Authorization"][0]
			h["Authorization"][0] = a[:len(a)-1] + string("01"[(a[len(a)-1]&1)^1])
			return checkSigned(o.v4, o.creds, "GET", get.seed[1], "", get.res.URI, h, get.ins)
		}},
		{"unsigned x-amz-acl added", func() error {
			h := clone(get.res.Headers)
			h["x-amz-acl"] = []string{"public-read"}
			return checkSigned(o.v4, o.creds, "GET", get.seed[1], "", get.res.URI, h, get.ins)
		}},
		{"DeleteObjects body swapped", func() error {
			evil := strings.Replace(del.seed[3], "wh/a", "wh/z", 1)
			return checkSigned(o.v4, o.creds, "POST", del.seed[1], evil, del.res.URI, del.res.Headers, del.ins)
		}},
		{"DeleteObjects key not decided", func() error {
			return checkSigned(o.v4, o.creds, "POST", del.seed[1], del.seed[3], del.res.URI, del.res.Headers, del.ins[:1])
		}},
		{"copy source swapped", func() error {
			h := clone(cp.res.Headers)
			h["x-amz-copy-source"] = []string{"lake/wh/secret"}
			return checkSigned(o.v4, o.creds, "PUT", cp.seed[1], "", cp.res.URI, h, cp.ins)
		}},
	}
	for _, m := range mutations {
		if err := m.err(); err == nil {
			t.Errorf("%s: the oracle did not notice", m.name)
		} else {
			t.Logf("%s: %v", m.name, err)
		}
	}
}

var signatureRE = regexp.MustCompile(`Credential=|Signature=[0-9a-f]{64}`)

// hdrValues returns the values of a returned header, any case.
func hdrValues(h map[string][]string, name string) []string {
	for k, v := range h {
		if strings.EqualFold(k, name) {
			return v
		}
	}
	return nil
}

// neverSigned are the headers countersign deliberately leaves unsigned
// (README: they vary between attempts). Every other header it returns must
// be signed, or the holder of the signature could change it.
func neverSigned(name string) bool {
	n := strings.ToLower(name)
	if strings.HasPrefix(n, "amz-sdk-") {
		return true
	}
	switch n {
	case "range", "user-agent", "expect", "x-amzn-trace-id", "authorization",
		"connection", "keep-alive", "proxy-connection", "proxy-authorization", "te", "transfer-encoding", "upgrade":
		return true
	}
	return false
}

// awsEscapeKey is the AWS SDKs' path encoding of an object key, written
// here independently of s3req: unreserved bytes and '/' stay, every other
// byte is %XX with upper-case hex.
func awsEscapeKey(key string) string {
	var b strings.Builder
	for i := 0; i < len(key); i++ {
		c := key[i]
		if 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || strings.IndexByte("-_.~/", c) >= 0 {
			b.WriteByte(c)
			continue
		}
		fmt.Fprintf(&b, "%%%02X", c)
	}
	return b.String()
}

var authRE = regexp.MustCompile(`^AWS4-HMAC-SHA256 Credential=([^/]+)/(\d{8})/([^/]+)/s3/aws4_request, SignedHeaders=([a-z0-9;!#$%&'*+.^_` + "`" + `|~-]+), Signature=([0-9a-f]{64})$`)

func checkSigned(v4s *v4.Signer, creds aws.Credentials, method, uri, body, gotURI string, h map[string][]string, ins []policy.Input) error {
	if gotURI != uri {
		return fmt.Errorf("uri changed: %q -> %q", uri, gotURI)
	}
	if len(ins) == 0 {
		return fmt.Errorf("signed without a policy decision: %s", uri)
	}
	for _, in := range ins {
		if in.Resource.Bucket != "lake" {
			return fmt.Errorf("signed although the policy was asked about bucket %q", in.Resource.Bucket)
		}
		if in.Request.Method != method || in.Request.Region != oracleRegion {
			return fmt.Errorf("policy saw method %q region %q, request is %q %q", in.Request.Method, in.Request.Region, method, oracleRegion)
		}
	}

	// What an S3 server sees: scheme, authority, raw path, raw query.
	scheme, rest, ok := strings.Cut(uri, "://")
	if !ok || scheme != "http" {
		return fmt.Errorf("signed for scheme %q (endpoint is http): %q", scheme, uri)
	}
	authority, pathQuery := rest, "/"
	if i := strings.IndexAny(rest, "/?"); i >= 0 {
		authority, pathQuery = rest[:i], rest[i:]
	}
	rawPath, rawQuery, _ := strings.Cut(pathQuery, "?")
	if rawPath == "" {
		rawPath = "/"
	}
	host := authority
	if v := hdrValues(h, "Host"); v != nil {
		if len(v) != 1 {
			return fmt.Errorf("signed with %d Host values", len(v))
		}
		host = v[0] // the server routes by the Host header it receives
		if host != authority {
			return fmt.Errorf("Host header %q differs from the uri's authority %q", host, authority)
		}
	}
	hostname, port, ok := strings.Cut(host, ":")
	if !ok || port != oraclePort {
		return fmt.Errorf("signed for port %q of %q (endpoint port is %s)", port, host, oraclePort)
	}

	// Bucket and key per AWS addressing rules: the endpoint host itself is
	// path-style (bucket = first path segment), "<bucket>.<endpoint host>"
	// is virtual-hosted (path = key). The key is the rest of the raw path,
	// percent-decoded exactly once.
	var bucket, rawKey string
	switch {
	case hostname == oracleHost:
		seg, after, _ := strings.Cut(rawPath[1:], "/")
		bucket, rawKey = seg, after
	case strings.HasSuffix(hostname, "."+oracleHost):
		bucket, rawKey = strings.TrimSuffix(hostname, "."+oracleHost), rawPath[1:]
	default:
		return fmt.Errorf("signed for host %q, not the endpoint %q", hostname, oracleHost)
	}
	key, err := url.PathUnescape(rawKey)
	if err != nil {
		return fmt.Errorf("signed path %q does not percent-decode: %v", rawPath, err)
	}
	if b, err := url.PathUnescape(bucket); err != nil || b != bucket {
		return fmt.Errorf("signed bucket segment %q is percent-encoded", bucket)
	}
	main := ins[0]
	if main.Operation == "DeleteObjects" {
		if key != "" {
			return fmt.Errorf("DeleteObjects on an object path %q", rawPath)
		}
		if err := checkDeleteBinding(h, body, ins, bucket); err != nil {
			return err
		}
	} else if main.Resource.Bucket != bucket || main.Resource.Key != key {
		return fmt.Errorf("authorized %q/%q, but S3 would see %q/%q (uri %q)", main.Resource.Bucket, main.Resource.Key, bucket, key, uri)
	}
	if err := checkVersion(rawQuery, main); err != nil {
		return err
	}
	if err := checkCopySource(h, ins); err != nil {
		return err
	}

	// The canonical request an S3 server builds from what it received:
	// the path re-encoded from the decoded bucket and key.
	canonPath := rawPath
	if key != "" {
		canonPath = "/" + awsEscapeKey(key)
		if hostname == oracleHost {
			canonPath = "/" + bucket + canonPath
		}
	} else if rawPath != "/" && rawPath != "/"+bucket && rawPath != "/"+bucket+"/" {
		return fmt.Errorf("bucket-level request with path %q", rawPath)
	}

	auth := hdrValues(h, "Authorization")
	if len(auth) != 1 {
		return fmt.Errorf("signed answer has %d Authorization values", len(auth))
	}
	m := authRE.FindStringSubmatch(auth[0])
	if m == nil {
		return fmt.Errorf("Authorization %q is not SigV4 for s3", auth[0])
	}
	if m[1] != creds.AccessKeyID || m[3] != oracleRegion {
		return fmt.Errorf("credential scope %q/%q, want %q/%q", m[1], m[3], creds.AccessKeyID, oracleRegion)
	}
	signedNames := strings.Split(m[4], ";")
	if !slices.Contains(signedNames, "host") || !slices.Contains(signedNames, "x-amz-content-sha256") || !slices.Contains(signedNames, "x-amz-date") {
		return fmt.Errorf("SignedHeaders %v lack host, x-amz-date or x-amz-content-sha256", signedNames)
	}
	for name, v := range h {
		if strings.EqualFold(name, "content-length") && len(v) == 1 && strings.Trim(v[0], "0") == "" && v[0] != "" {
			// A zero Content-Length is not signed: SigV4 signers (AWS's
			// own included) sign content-length only when it is positive.
			// countersign binds the empty body through the payload hash
			// instead, unless the client chose its own x-amz-content-sha256
			// (SECURITY.md; e2e/payload_test.go shows S3 refusing a body).
			continue
		}
		if !neverSigned(name) && !slices.Contains(signedNames, strings.ToLower(name)) {
			return fmt.Errorf("header %q is returned but not signed: its holder could change it (SignedHeaders %v)", name, signedNames)
		}
	}

	dates := hdrValues(h, "X-Amz-Date")
	if len(dates) != 1 {
		return fmt.Errorf("%d X-Amz-Date values", len(dates))
	}
	when, err := time.Parse("20060102T150405Z", dates[0])
	if err != nil || m[2] != dates[0][:8] {
		return fmt.Errorf("X-Amz-Date %q does not match the scope date %q", dates[0], m[2])
	}
	payload := hdrValues(h, "x-amz-content-sha256")
	if len(payload) != 1 {
		return fmt.Errorf("%d x-amz-content-sha256 values", len(payload))
	}

	req := &http.Request{
		Method: method,
		URL:    &url.URL{Scheme: scheme, Host: authority, Opaque: "//" + authority + canonPath, RawQuery: rawQuery},
		Host:   host,
		Header: http.Header{},
	}
	for _, name := range signedNames {
		switch name {
		case "host", "x-amz-date":
			continue // from req.Host and the signing time
		case "content-length":
			v := hdrValues(h, name)
			n, err := strconv.ParseInt(strings.Join(v, ""), 10, 64)
			if len(v) != 1 || err != nil {
				return fmt.Errorf("signed content-length %v", v)
			}
			req.ContentLength = n
			continue
		}
		v := hdrValues(h, name)
		if v == nil {
			return fmt.Errorf("signed header %q is not in the answer", name)
		}
		req.Header[name] = v
	}
	if err := v4s.SignHTTP(context.Background(), creds, req, payload[0], "s3", oracleRegion, when); err != nil {
		return fmt.Errorf("re-signing: %v", err)
	}
	if got := req.Header.Get("Authorization"); got != auth[0] {
		return fmt.Errorf("the signature is not valid for the request S3 would see\n returned  %s\n S3 checks %s\nuri %q", auth[0], got, uri)
	}
	return nil
}

// checkCopySource: a copy source S3 would read must be the one the policy
// was asked about, as a read.
func checkCopySource(h map[string][]string, ins []policy.Input) error {
	v := hdrValues(h, "x-amz-copy-source")
	if v == nil {
		if ins[0].CopySource != nil {
			return fmt.Errorf("copy source authorized without an x-amz-copy-source header")
		}
		return nil
	}
	if len(v) != 1 {
		return fmt.Errorf("signed with %d copy sources", len(v))
	}
	src, srcQuery, _ := strings.Cut(v[0], "?")
	sq, _ := url.ParseQuery(srcQuery)
	version, action := sq.Get("versionId"), "s3:GetObject"
	if version != "" {
		action = "s3:GetObjectVersion"
	}
	src = strings.TrimPrefix(src, "/")
	b, rawKey, _ := strings.Cut(src, "/")
	k, err := url.PathUnescape(rawKey)
	if err != nil {
		return fmt.Errorf("signed copy source %q does not percent-decode", v[0])
	}
	cs := ins[0].CopySource
	if cs == nil || cs.Bucket != b || cs.Key != k || cs.VersionID != version {
		return fmt.Errorf("S3 would copy from %q/%q, policy input copy_source is %+v", b, k, cs)
	}
	for _, in := range ins[1:] {
		if in.Resource.Bucket == b && in.Resource.Key == k && in.Resource.VersionID == version && in.Action == action {
			return nil
		}
	}
	return fmt.Errorf("copy source %q/%q (version %q) was never decided as %s", b, k, version, action)
}

// unversionedActions are the actions IAM replaces by a version action
// when the request names a version.
var unversionedActions = []string{"s3:GetObject", "s3:DeleteObject", "s3:GetObjectTagging", "s3:PutObjectTagging",
	"s3:DeleteObjectTagging", "s3:GetObjectAcl", "s3:PutObjectAcl", "s3:GetObjectAttributes"}

// checkVersion: the version S3 would act on (?versionId=) is the one
// decided, and under a version action.
func checkVersion(rawQuery string, main policy.Input) error {
	q, _ := url.ParseQuery(rawQuery)
	v := q.Get("versionId")
	if main.Resource.VersionID != v {
		return fmt.Errorf("S3 would act on version %q, decided version %q", v, main.Resource.VersionID)
	}
	if v != "" && slices.Contains(unversionedActions, main.Action) {
		return fmt.Errorf("version %q decided as the unversioned %s", v, main.Action)
	}
	return nil
}

// checkDeleteBinding: the signature must bind the body (S3 checks
// Content-MD5, x-amz-checksum-* and a hex payload hash against it), and
// the keys S3 would delete from that body — parsed here with encoding/xml,
// not with s3req — must be exactly the keys that were decided.
func checkDeleteBinding(h map[string][]string, body string, ins []policy.Input, bucket string) error {
	bound := false
	var err error
	check := func(name string, sum []byte, enc func([]byte) string) {
		v := hdrValues(h, name)
		if v == nil {
			return
		}
		if len(v) != 1 || v[0] != enc(sum) {
			err = fmt.Errorf("%s %v does not match the body", name, v)
		}
		bound = true
	}
	b64 := base64.StdEncoding.EncodeToString
	sum := func(hh hash.Hash) []byte { hh.Write([]byte(body)); return hh.Sum(nil) }
	m5 := md5.Sum([]byte(body))
	check("Content-MD5", m5[:], b64)
	check("x-amz-checksum-crc32", sum(crc32.NewIEEE()), b64)
	check("x-amz-checksum-crc32c", sum(crc32.New(crc32.MakeTable(crc32.Castagnoli))), b64)
	check("x-amz-checksum-crc64nvme", sum(crc64.New(crc64.MakeTable(0x9a6c9329ac4bc9b5))), b64)
	check("x-amz-checksum-sha1", sum(sha1.New()), b64)
	check("x-amz-checksum-sha256", sum(sha256.New()), b64)
	if err != nil {
		return err
	}
	if v := hdrValues(h, "x-amz-content-sha256"); len(v) == 1 && len(v[0]) == 64 {
		s := sha256.Sum256([]byte(body))
		if v[0] != hex.EncodeToString(s[:]) {
			return fmt.Errorf("x-amz-content-sha256 does not match the body")
		}
		bound = true
	}
	if !bound {
		return fmt.Errorf("DeleteObjects signed without binding the body: %v", h)
	}
	var doc struct {
		XMLName xml.Name
		Objects []struct {
			Key       string `xml:"Key"`
			VersionID string `xml:"VersionId"`
		} `xml:"Object"`
	}
	if err := xml.Unmarshal([]byte(body), &doc); err != nil || doc.XMLName.Local != "Delete" {
		return fmt.Errorf("signed DeleteObjects body does not parse as <Delete>: %v", err)
	}
	if len(doc.Objects) != len(ins) {
		return fmt.Errorf("S3 would delete %d keys, %d were decided", len(doc.Objects), len(ins))
	}
	for i, o := range doc.Objects {
		action := "s3:DeleteObject"
		if o.VersionID != "" {
			action = "s3:DeleteObjectVersion"
		}
		if ins[i].Resource.Bucket != bucket || ins[i].Resource.Key != o.Key || ins[i].Resource.VersionID != o.VersionID || ins[i].Action != action {
			return fmt.Errorf("S3 would delete %q/%q, decided %+v", bucket, o.Key, ins[i].Resource)
		}
	}
	return nil
}
