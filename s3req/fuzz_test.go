package s3req

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/countersign/countersign/remotesign"
)

// FuzzClassify feeds arbitrary method/URI/header/body combinations to the
// classifier. It must never panic, and whatever it accepts must satisfy the
// invariants the policy and signer rely on.
func FuzzClassify(f *testing.F) {
	seeds := []struct{ method, uri, copySrc, body string }{
		{"GET", "http://localhost:7070/lake/wh/db/t/data/f.parquet", "", ""},
		{"GET", "http://lake.localhost:7070/a%20b%3Dc", "", ""},
		{"GET", "https://lake.s3.example.com/other/secret", "", ""},
		{"GET", "http://lake.127.0.0.1:7070/other/secret", "", ""},
		{"PUT", "http://localhost:7070/lake/k?partNumber=1&uploadId=x", "lake/src%20k?versionId=1", ""},
		{"PUT", "http://localhost:7070/lake/k", "lake/wh/secret.parquet ", ""},
		{"PUT", "http://localhost:7070/lake/k", "lake/wh/a.parquet,private/secret", ""},
		{"PUT", "http://localhost:7070/lake/k", "/lake/wh/%7e%2Fa?versionId=a%2Fb", ""},
		{"POST", "http://localhost:7070/lake?delete", "", "<Delete><Object><Key>a</Key></Object></Delete>"},
		{"GET", "http://localhost:7070/lake?list-type=2&prefix=wh%2F", "", ""},
		{"GET", "https://lake.s3.us-east-1.amazonaws.com/k", "", ""},
		{"GET", "http://[::1]:7070/lake/k", "", ""},
		{"GET", "http://u@localhost:7070/lake/%2e%2e/k", "", ""},
		{"DELETE", "http://127.0.0.1:7070/lake/k?versionId=1&x-id=DeleteObject", "", ""},
		{"DELETE", "http://localhost:7070/lake/k?uploadId=", "", ""},
		{"PUT", "http://localhost:7070/lake/k?partNumber=01&uploadId=u", "", ""},
	}
	for _, s := range seeds {
		f.Add(s.method, s.uri, s.copySrc, s.body)
	}
	c := testClassifier(f)
	f.Fuzz(func(t *testing.T, method, uri, copySrc, body string) {
		in := req(method, uri, nil)
		if copySrc != "" {
			in.Headers = hdrs("x-amz-copy-source", copySrc)
		}
		if body != "" {
			in.Body, in.HasBody = body, true
		}
		r, err := c.Classify(in)
		if err != nil {
			ce, ok := err.(*Error)
			if !ok || (ce.Status != 400 && ce.Status != 403) || ce.Msg == "" {
				t.Fatalf("error %T %v", err, err)
			}
			return
		}
		if r.Endpoint == nil || len(r.Targets) == 0 || r.Operation == "" {
			t.Fatalf("accepted without endpoint/targets: %+v", r)
		}
		if !strings.HasPrefix(uri, r.Scheme+"://"+r.Host) || !strings.HasPrefix(r.RawPath, "/") {
			t.Fatalf("raw parts do not come from the uri: %+v", r)
		}
		for _, tg := range r.Targets {
			if tg.Bucket != "" {
				if err := checkBucket(tg.Bucket); err != nil {
					t.Fatalf("invalid bucket accepted: %q", tg.Bucket)
				}
			}
			if !utf8.ValidString(tg.Key) || strings.IndexFunc(tg.Key, unicode.IsControl) >= 0 || strings.IndexByte(tg.Key, '\\') >= 0 {
				t.Fatalf("invalid key accepted: %q", tg.Key)
			}
			for seg := range strings.SplitSeq(tg.Key, "/") {
				if tg.Key != "" && (seg == "" || seg == "." || seg == "..") {
					t.Fatalf("unsafe key accepted: %q", tg.Key)
				}
			}
		}
		// An accepted copy source has exactly one spelling: the canonical
		// encoding of what was decided, nothing SigV4 or HTTP would trim,
		// collapse or split, and every modelled server reads it as decided.
		for _, tg := range r.Targets {
			if tg.Role != "copy-source" {
				continue
			}
			canon := tg.Bucket + "/" + string(appendAWSEscapedPath(nil, tg.Key))
			if tg.VersionID != "" {
				canon += "?versionId=" + string(appendAWSEscapedPath(nil, tg.VersionID))
			}
			if strings.TrimPrefix(copySrc, "/") != canon || strings.ContainsAny(copySrc, " \t,") {
				t.Fatalf("copy source %q accepted as %q", copySrc, canon)
			}
			if err := readersAgree(copySrc, tg.Bucket, tg.Key, tg.VersionID); err != nil {
				t.Fatal(err)
			}
		}
		// A custom endpoint decides a bucket from the host only under the
		// virtual-host domain the server is configured to serve.
		if h, _, _ := strings.Cut(r.Host, ":"); !r.Endpoint.AWS && h != r.Endpoint.Host && r.Bucket != "" &&
			(r.Endpoint.VirtualHostDomain == "" || h != r.Bucket+"."+r.Endpoint.VirtualHostDomain) {
			t.Fatalf("host %q decided as bucket %q at endpoint %+v", r.Host, r.Bucket, r.Endpoint)
		}
		// A DeleteObjects body is bound by its SHA-256, never by a weaker
		// checksum (the fuzzer sends no checksum headers, so the signed
		// payload hash must be the body's).
		if r.Operation == "DeleteObjects" {
			sum := sha256.Sum256([]byte(body))
			if r.ContentSHA256 != hex.EncodeToString(sum[:]) {
				t.Fatalf("DeleteObjects signed with payload hash %q, not the body's SHA-256", r.ContentSHA256)
			}
		}
		// A multipart request names its upload, and a part its number.
		for kv := range strings.SplitSeq(r.RawQuery, "&") {
			k, v, _ := strings.Cut(kv, "=")
			if (k == "uploadId" && v == "") || (k == "partNumber" && (v == "" || v[0] < '1' || v[0] > '9')) {
				t.Fatalf("%s accepted with %q", r.Operation, kv)
			}
		}
		// The request's own key must re-encode to exactly the path sent.
		if r.Key != "" && !strings.HasSuffix(r.RawPath, string(appendAWSEscapedPath(nil, r.Key))) {
			t.Fatalf("key %q does not round-trip to path %q", r.Key, r.RawPath)
		}
	})
}

// FuzzParseDeleteBody: the DeleteObjects XML parser never panics, never
// returns more than the limit, and never returns zero keys without error.
func FuzzParseDeleteBody(f *testing.F) {
	f.Add([]byte(`<?xml version="1.0" encoding="UTF-8"?><Delete xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Object><Key>a</Key><VersionId>v</VersionId></Object><Quiet>true</Quiet></Delete>`))
	f.Add([]byte(`<Delete><Object><Key>a&amp;b</Key></Object><Object><Key><![CDATA[c]]></Key></Object></Delete>`))
	f.Add([]byte(`<!DOCTYPE x [<!ENTITY a "b">]><Delete><Object><Key>&a;</Key></Object></Delete>`))
	f.Add([]byte(`<Delete><Object><Key>a</Key><ETag>"x"</ETag></Object></Delete>`))
	f.Add([]byte(`<Delete><!-- c --><Object><Key>a</Key></Object></Delete>`))
	f.Fuzz(func(t *testing.T, body []byte) {
		keys, err := ParseDeleteBody(body, 5)
		if err != nil {
			return
		}
		if len(keys) == 0 || len(keys) > 5 {
			t.Fatalf("%d keys", len(keys))
		}
		if !utf8.Valid(body) && len(keys) > 0 {
			for _, k := range keys {
				if !utf8.ValidString(k.Key) {
					t.Fatalf("invalid UTF-8 key %q", k.Key)
				}
			}
		}
	})
}

// keep the import used when remotesign changes shape.
var _ remotesign.Headers

// FuzzIsAWSEscapedPath: the streaming comparison the classifier uses says
// exactly what building the canonical encoding and comparing would.
func FuzzIsAWSEscapedPath(f *testing.F) {
	f.Add("wh/db/t/data/day%3D2026-11-30/a.parquet", "wh/db/t/data/day=2026-11-30/a.parquet")
	f.Add("a%2fb", "a/b")
	f.Add("a%2Fb", "a/b")
	f.Add("a%2", "a/")
	f.Add("a", "a/")
	f.Add("a/b", "a")
	f.Add("%E2%82%AC", "€")
	f.Fuzz(func(t *testing.T, raw, s string) {
		want := string(appendAWSEscapedPath(nil, s)) == raw
		if got := isAWSEscapedPath(raw, s); got != want {
			t.Fatalf("isAWSEscapedPath(%q, %q) = %v, want %v", raw, s, got, want)
		}
		if !isAWSEscapedPath(string(appendAWSEscapedPath(nil, s)), s) {
			t.Fatalf("the encoding of %q is not accepted", s)
		}
	})
}
