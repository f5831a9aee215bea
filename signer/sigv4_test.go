package signer

import (
	"context"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/smithy-go/logging"

	"github.com/countersign/countersign/remotesign"
	"github.com/countersign/countersign/s3req"
)

// sdkSign signs r the way Sign did before sigv4.go, with the SDK's
// v4.Signer: every header Sign signs goes into an http.Header under the
// client's spelling, content-length through ContentLength, the path as
// URL.Opaque. It returns the SDK's Authorization and canonical request.
func sdkSign(t testing.TB, r *s3req.Request, creds aws.Credentials, at time.Time) (auth, canonical string) {
	t.Helper()
	h := http.Header{}
	host := canonicalHost(r.Scheme, r.Host)
	var length int64
	for _, hd := range r.Headers {
		switch classify(hd.Name) {
		case kindUnsigned, kindDate:
			continue
		case kindHost:
			host = hd.Values[0]
			continue
		case kindContentLength:
			n, _ := parseLength(hd.Values[0])
			length = n
			continue
		}
		if len(hd.Values) > 0 {
			h[hd.Name] = hd.Values
		}
	}
	if r.AddContentSHA256 {
		h[hdrContentSHA256] = []string{r.ContentSHA256}
	}
	req := &http.Request{
		Method: r.Method, Header: h, Host: host, ContentLength: length,
		URL: &url.URL{Scheme: r.Scheme, Host: r.Host, Opaque: opaquePath(r.Host, r.RawPath), RawQuery: r.RawQuery},
	}
	capture := &canonicalCapture{}
	sdk := v4.NewSigner(func(o *v4.SignerOptions) { o.DisableURIPathEscaping = true })
	err := sdk.SignHTTP(context.Background(), creds, req, r.ContentSHA256, "s3", r.Region, at, func(o *v4.SignerOptions) {
		o.LogSigning, o.Logger = true, capture
	})
	if err != nil {
		t.Fatalf("SDK: %v", err)
	}
	return req.Header.Get("Authorization"), capture.canonical
}

type canonicalCapture struct{ canonical string }

func (c *canonicalCapture) Logf(_ logging.Classification, _ string, v ...any) {
	c.canonical, _ = v[0].(string)
}

func parseLength(v string) (int64, bool) {
	var n int64
	for i := 0; i < len(v); i++ {
		if v[i] < '0' || v[i] > '9' {
			return 0, false
		}
		n = n*10 + int64(v[i]-'0')
	}
	return n, true
}

// checkAgainstSDK signs r with Sign and with the SDK and fails on any
// difference in the canonical request or the Authorization header. A
// request Sign refuses is skipped: the refusal is tested elsewhere.
func checkAgainstSDK(t testing.TB, r *s3req.Request, token string, at time.Time) bool {
	t.Helper()
	creds := aws.Credentials{AccessKeyID: testAKID, SecretAccessKey: testSecret, SessionToken: token}
	s := New(aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) { return creds, nil }), Options{Now: func() time.Time { return at }})
	var canonical string
	s.onCanonical = func(c string) { canonical = c }
	signed, err := s.Sign(context.Background(), r)
	if err != nil {
		return false
	}
	var auth string
	for _, h := range signed.Headers {
		if h.Name == hdrAuthorization {
			auth = h.Values[0]
		}
	}
	signAt := at
	if d, ok := r.Headers.Get("x-amz-date"); ok {
		signAt, _ = parseAmzDate(d)
	}
	wantAuth, wantCanonical := sdkSign(t, r, creds, signAt)
	if canonical != wantCanonical {
		t.Fatalf("canonical request differs from the SDK's\n got: %q\nwant: %q", canonical, wantCanonical)
	}
	if auth != wantAuth {
		t.Fatalf("Authorization differs from the SDK's\n got: %s\nwant: %s", auth, wantAuth)
	}
	if want := sha256Hex(wantCanonical); signed.CanonicalRequestSHA256 != want {
		t.Fatalf("CanonicalRequestSHA256 %s, want %s", signed.CanonicalRequestSHA256, want)
	}
	return true
}

// TestSigV4MatchesSDK compares Sign with the SDK's signer on thousands of
// random requests: methods, hosts with ports, escaped paths, queries with
// escapes, '+', empty and repeated keys and values, headers in any case
// with runs of spaces, tabs and Unicode spaces, several values, lengths,
// payload hashes, session tokens, client dates, regions and days.
func TestSigV4MatchesSDK(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	signedN := 0
	for i := 0; i < 5000; i++ {
		r, token, at := randomRequest(rng)
		if checkAgainstSDK(t, r, token, at) {
			signedN++
		}
	}
	if signedN < 4000 {
		t.Fatalf("only %d of 5000 random requests were signable: the generator is off", signedN)
	}
}

func pick[T any](rng *rand.Rand, xs ...T) T { return xs[rng.IntN(len(xs))] }

func randomRequest(rng *rand.Rand) (*s3req.Request, string, time.Time) {
	at := time.Date(2026, time.Month(1+rng.IntN(12)), 1+rng.IntN(28), rng.IntN(24), rng.IntN(60), rng.IntN(60), 0, time.UTC)
	r := &s3req.Request{
		Method: pick(rng, "GET", "HEAD", "PUT", "POST", "DELETE"),
		Region: pick(rng, "us-east-1", "eu-west-3", "garage", "ap-southeast-2"),
		Scheme: pick(rng, "http", "https"),
		Host:   pick(rng, "localhost:7070", "lake.s3.us-east-1.amazonaws.com", "s3.example.com:443", "127.0.0.1", "[::1]:9000", "minio:80"),
	}
	segs := []string{"wh", "db", "t%20x", "data", "a%2Bb", "%E6%95%B0", "k~e-y_.", "", "x%3Dy", "!$&'()*,;=:@"}
	var p strings.Builder
	for n := rng.IntN(5); n >= 0; n-- {
		p.WriteByte('/')
		p.WriteString(pick(rng, segs...))
	}
	r.RawPath = pick(rng, p.String(), "", "/")
	params := []string{"uploads", "uploadId=2~abc.def_GHI-0", "partNumber=3", "versionId=null", "x-id=GetObject",
		"prefix=a%2Fb", "delimiter=%2F", "list-type=2", "continuation-token=1%2B2%3D3", "a=b+c", "a=", "=v", "q=%41%42",
		"k=%zz", "tagging", "acl", "b=2", "b=1", "start-after=%E6%95%B0%20x"}
	var q []string
	for n := rng.IntN(4); n > 0; n-- {
		q = append(q, pick(rng, params...))
	}
	r.RawQuery = strings.Join(q, pick(rng, "&", "&&"))
	values := []string{"v", " v ", "a  b   c", "\tx\t", "x \t y", "\u00a0nb\u00a0", "  ", "", "\"etag\"", "bytes=0-99", "a, b", "\u2003em\u2003", "UTF-8 ü"}
	names := []string{"Content-Type", "content-md5", "If-Match", "X-Amz-Meta-Note", "x-amz-checksum-crc32", "Cache-Control",
		"Range", "User-Agent", "amz-sdk-invocation-id", "Expect", "X-Amz-Expected-Bucket-Owner", "x-amz-copy-source"}
	used := map[string]bool{}
	for n := rng.IntN(6); n > 0; n-- {
		name := pick(rng, names...)
		if used[strings.ToLower(name)] {
			continue
		}
		used[strings.ToLower(name)] = true
		h := remotesign.Header{Name: name}
		for m := 1 + rng.IntN(3); m > 0; m-- {
			h.Values = append(h.Values, pick(rng, values...))
		}
		r.Headers = append(r.Headers, h)
	}
	switch rng.IntN(4) {
	case 0:
		r.Headers = append(r.Headers, remotesign.Header{Name: pick(rng, "Content-Length", "content-length"), Values: []string{pick(rng, "0", "1", "1048576", "007")}})
	case 1:
		if rng.IntN(2) == 0 {
			r.Headers = append(r.Headers, remotesign.Header{Name: "X-Amz-Date", Values: []string{at.Add(time.Duration(rng.IntN(200)-100) * time.Second).Format(amzDateLayout)}})
		} else {
			r.Headers = append(r.Headers, remotesign.Header{Name: "Host", Values: []string{canonicalHost(r.Scheme, r.Host)}})
		}
	}
	if rng.IntN(3) == 0 {
		r.ContentSHA256 = pick(rng, "UNSIGNED-PAYLOAD", "STREAMING-UNSIGNED-PAYLOAD-TRAILER", sha256Hex("body"))
		r.Headers = append(r.Headers, remotesign.Header{Name: pick(rng, "x-amz-content-sha256", "X-Amz-Content-Sha256"), Values: []string{r.ContentSHA256}})
	} else {
		r.ContentSHA256 = pick(rng, "UNSIGNED-PAYLOAD", s3req.EmptySHA256)
		r.AddContentSHA256 = true
	}
	token := pick(rng, "", testToken, "tok  with spaces ")
	return r, token, at
}

// FuzzSigV4MatchesSDK: any request Sign accepts is signed exactly as the
// SDK signs it.
func FuzzSigV4MatchesSDK(f *testing.F) {
	f.Add("GET", "localhost:7070", "/lake/a%20b", "uploadId=x&partNumber=1", "Content-Type", " a  b ", "X-Amz-Meta-K", "\tv", "1024", "", int64(0))
	f.Add("PUT", "s3.example.com", "/b//k", "a=b+c&a=&=v&k=%zz", "If-Match", "\"e\"", "x-amz-meta-x", "\u00a0", "0", testToken, int64(86400*400))
	f.Fuzz(func(t *testing.T, method, host, path, query, h1, v1, h2, v2, length, token string, offset int64) {
		r := &s3req.Request{Method: method, Region: "us-east-1", Scheme: "https", Host: host, RawPath: path, RawQuery: query,
			ContentSHA256: "UNSIGNED-PAYLOAD", AddContentSHA256: true}
		for _, h := range [][2]string{{h1, v1}, {h2, v2}} {
			if h[0] != "" && !strings.EqualFold(h[0], "x-amz-content-sha256") && !r.Headers.Has(h[0]) {
				r.Headers = append(r.Headers, remotesign.Header{Name: h[0], Values: []string{h[1]}})
			}
		}
		if _, ok := parseLength(length); ok && length != "" && len(length) < 15 && !r.Headers.Has("content-length") {
			r.Headers = append(r.Headers, remotesign.Header{Name: "Content-Length", Values: []string{length}})
		}
		at := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC).Add(time.Duration(offset%(86400*3650)) * time.Second)
		checkAgainstSDK(t, r, token, at)
	})
}

// opaquePath (as Sign used it with the SDK) makes the SDK use rawPath byte for byte as the canonical URI:
// it prefers URL.Opaque and takes the path from its first '/'. A path that
// does not start with "//" can be used as is; otherwise (a key beginning with
// '/') the "//host/path" form keeps the SDK from reading the leading "//" as a
// scheme separator.
func opaquePath(host, rawPath string) string {
	if rawPath == "" || (rawPath[0] == '/' && (len(rawPath) == 1 || rawPath[1] != '/')) {
		return rawPath // "" makes the SDK use "/"
	}
	return "//" + host + rawPath
}

// TestAppendAmzDate: the hand-written date formats agree with
// time.AppendFormat.
func TestAppendAmzDate(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for i := 0; i < 20000; i++ {
		tm := time.Unix(rng.Int64N(253402300799), 0).UTC() // 1970 .. 9999-12-31
		if got, want := string(appendAmzDate(nil, tm)), tm.Format(amzDateLayout); got != want {
			t.Fatalf("%v: %q, want %q", tm, got, want)
		}
		if got, want := string(appendScope(nil, tm, "eu-west-1")), tm.Format("20060102")+"/eu-west-1/s3/aws4_request"; got != want {
			t.Fatalf("%v: %q, want %q", tm, got, want)
		}
	}
}
