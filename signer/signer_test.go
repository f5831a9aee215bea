package signer

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/countersign/countersign/remotesign"
	"github.com/countersign/countersign/s3req"
)

const (
	testAKID   = "AKIDEXAMPLE"
	testSecret = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
	testToken  = "IQoJb3JpZ2luX2VjEXAMPLETOKEN"
)

var testNow = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func staticCreds(token string) aws.CredentialsProvider {
	return aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
		return aws.Credentials{AccessKeyID: testAKID, SecretAccessKey: testSecret, SessionToken: token}, nil
	})
}

// newTestSigner returns a signer at testNow that records canonical requests.
func newTestSigner(t testing.TB, creds aws.CredentialsProvider) (*Signer, *[]string) {
	t.Helper()
	s := New(creds, Options{Now: func() time.Time { return testNow }})
	var mu sync.Mutex
	var seen []string
	s.onCanonical = func(c string) {
		mu.Lock()
		seen = append(seen, c)
		mu.Unlock()
	}
	return s, &seen
}

func hdrs(kv ...string) remotesign.Headers {
	var h remotesign.Headers
	for i := 0; i < len(kv); i += 2 {
		h = append(h, remotesign.Header{Name: kv[i], Values: []string{kv[i+1]}})
	}
	return h
}

func cloneHeaders(h remotesign.Headers) remotesign.Headers {
	if h == nil {
		return nil
	}
	out := make(remotesign.Headers, len(h))
	for i := range h {
		out[i] = remotesign.Header{Name: h[i].Name, Values: slices.Clone(h[i].Values)}
	}
	return out
}

func hmacSHA256(key []byte, data string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(data))
	return m.Sum(nil)
}

func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// referenceAuthorization computes the SigV4 Authorization header for a
// canonical request from the specification, independently of the SDK.
func referenceAuthorization(secret, akid, amzDate, region, canonical string) (auth, signature string) {
	day := amzDate[:8]
	scope := day + "/" + region + "/s3/aws4_request"
	stringToSign := "AWS4-HMAC-SHA256\n" + amzDate + "\n" + scope + "\n" + sha256Hex(canonical)
	k := hmacSHA256([]byte("AWS4"+secret), day)
	k = hmacSHA256(k, region)
	k = hmacSHA256(k, "s3")
	k = hmacSHA256(k, "aws4_request")
	signature = hex.EncodeToString(hmacSHA256(k, stringToSign))
	lines := strings.Split(canonical, "\n")
	signedHeaders := lines[len(lines)-2]
	auth = "AWS4-HMAC-SHA256 Credential=" + akid + "/" + scope + ", SignedHeaders=" + signedHeaders + ", Signature=" + signature
	return auth, signature
}

func TestCanonicalRequest(t *testing.T) {
	tests := []struct {
		name      string
		token     string
		req       s3req.Request
		canonical string
		// added headers expected after the client's, name=value.
		added []string
	}{
		{
			name: "ranged GET, virtual-hosted, default port stripped, odd key kept exactly",
			req: s3req.Request{
				Method: "GET", Region: "us-east-1", Scheme: "https",
				Host:    "lake.s3.us-east-1.amazonaws.com:443",
				RawPath: "/wh/db/t/data/a%20b%25c~d%C3%A9+%21.parquet",
				Headers: hdrs(
					"Range", "bytes=0-99",
					"amz-sdk-invocation-id", "0f8e7b0c-3a57-4f3e-9a9e-1b2c3d4e5f60",
					"amz-sdk-request", "attempt=1; max=3",
					"amz-sdk-retry", "0/0/500",
					"User-Agent", "aws-sdk-java/2.29.0 md/io#sync",
					"X-Amzn-Trace-Id", "Root=1-5759e988-bd862e3fe1be46a994272793",
					"If-Match", `"9b2cf535f27731c974343645a3985328"`,
					"x-amz-checksum-mode", "ENABLED",
				),
				ContentSHA256: "UNSIGNED-PAYLOAD", AddContentSHA256: true,
			},
			canonical: "GET\n" +
				"/wh/db/t/data/a%20b%25c~d%C3%A9+%21.parquet\n" +
				"\n" +
				"host:lake.s3.us-east-1.amazonaws.com\n" +
				"if-match:\"9b2cf535f27731c974343645a3985328\"\n" +
				"x-amz-checksum-mode:ENABLED\n" +
				"x-amz-content-sha256:UNSIGNED-PAYLOAD\n" +
				"x-amz-date:20261130T120000Z\n" +
				"\n" +
				"host;if-match;x-amz-checksum-mode;x-amz-content-sha256;x-amz-date\n" +
				"UNSIGNED-PAYLOAD",
			added: []string{"X-Amz-Date=20261130T120000Z", "x-amz-content-sha256=UNSIGNED-PAYLOAD"},
		},
		{
			name: "UploadPart, path-style, non-default port, client streaming trailer, multi-valued header",
			req: s3req.Request{
				Method: "PUT", Region: "us-east-1", Scheme: "http",
				Host:     "localhost:9000",
				RawPath:  "/lake/wh/t/data/f.parquet",
				RawQuery: "uploadId=abc&partNumber=1",
				Headers: append(hdrs(
					"Content-Length", "87",
					"Content-Encoding", "aws-chunked",
					"x-amz-content-sha256", "STREAMING-UNSIGNED-PAYLOAD-TRAILER",
					"x-amz-trailer", "x-amz-checksum-crc32",
					"x-amz-decoded-content-length", "5",
					"Expect", "100-continue",
					"Transfer-Encoding", "chunked",
					"Connection", "keep-alive",
				), remotesign.Header{Name: "X-Amz-Meta-Note", Values: []string{"a", "  b   c "}}),
				ContentSHA256: "STREAMING-UNSIGNED-PAYLOAD-TRAILER",
			},
			canonical: "PUT\n" +
				"/lake/wh/t/data/f.parquet\n" +
				"partNumber=1&uploadId=abc\n" +
				"content-encoding:aws-chunked\n" +
				"content-length:87\n" +
				"host:localhost:9000\n" +
				"x-amz-content-sha256:STREAMING-UNSIGNED-PAYLOAD-TRAILER\n" +
				"x-amz-date:20261130T120000Z\n" +
				"x-amz-decoded-content-length:5\n" +
				"x-amz-meta-note:a,b c\n" +
				"x-amz-trailer:x-amz-checksum-crc32\n" +
				"\n" +
				"content-encoding;content-length;host;x-amz-content-sha256;x-amz-date;x-amz-decoded-content-length;x-amz-meta-note;x-amz-trailer\n" +
				"STREAMING-UNSIGNED-PAYLOAD-TRAILER",
			added: []string{"X-Amz-Date=20261130T120000Z"},
		},
		{
			name: "ListObjectsV2, encoded query sorted after encoding, http default port stripped",
			req: s3req.Request{
				Method: "GET", Region: "eu-central-1", Scheme: "http",
				Host:          "minio.local:80",
				RawPath:       "/lake",
				RawQuery:      "list-type=2&prefix=wh%2Fdb%20x%2F&delimiter=%2F&encoding-type=url&x-id=ListObjectsV2",
				ContentSHA256: "UNSIGNED-PAYLOAD", AddContentSHA256: true,
			},
			canonical: "GET\n" +
				"/lake\n" +
				"delimiter=%2F&encoding-type=url&list-type=2&prefix=wh%2Fdb%20x%2F&x-id=ListObjectsV2\n" +
				"host:minio.local\n" +
				"x-amz-content-sha256:UNSIGNED-PAYLOAD\n" +
				"x-amz-date:20261130T120000Z\n" +
				"\n" +
				"host;x-amz-content-sha256;x-amz-date\n" +
				"UNSIGNED-PAYLOAD",
			added: []string{"X-Amz-Date=20261130T120000Z", "x-amz-content-sha256=UNSIGNED-PAYLOAD"},
		},
		{
			name: "CreateMultipartUpload, key starting with a slash, IPv6 host with port, session token",
			req: s3req.Request{
				Method: "POST", Region: "us-west-2", Scheme: "https",
				Host:          "[fd00::1]:8443",
				RawPath:       "//lead/slash%2Fkey",
				RawQuery:      "uploads",
				Headers:       hdrs("Content-Type", "application/octet-stream", "X-Amz-Storage-Class", "STANDARD"),
				ContentSHA256: "UNSIGNED-PAYLOAD", AddContentSHA256: true,
			},
			token: testToken,
			canonical: "POST\n" +
				"//lead/slash%2Fkey\n" +
				"uploads=\n" +
				"content-type:application/octet-stream\n" +
				"host:[fd00::1]:8443\n" +
				"x-amz-content-sha256:UNSIGNED-PAYLOAD\n" +
				"x-amz-date:20261130T120000Z\n" +
				"x-amz-security-token:" + testToken + "\n" +
				"x-amz-storage-class:STANDARD\n" +
				"\n" +
				"content-type;host;x-amz-content-sha256;x-amz-date;x-amz-security-token;x-amz-storage-class\n" +
				"UNSIGNED-PAYLOAD",
			added: []string{"X-Amz-Date=20261130T120000Z", "X-Amz-Security-Token=" + testToken, "x-amz-content-sha256=UNSIGNED-PAYLOAD"},
		},
		{
			name: "GetBucketLocation, empty path, IPv6 default port stripped with brackets kept",
			req: s3req.Request{
				Method: "GET", Region: "us-east-1", Scheme: "https",
				Host:          "[fd00::1]:443",
				RawQuery:      "location",
				Headers:       hdrs("x-amz-content-sha256", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
				ContentSHA256: "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
			},
			canonical: "GET\n" +
				"/\n" +
				"location=\n" +
				"host:[fd00::1]\n" +
				"x-amz-content-sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855\n" +
				"x-amz-date:20261130T120000Z\n" +
				"\n" +
				"host;x-amz-content-sha256;x-amz-date\n" +
				"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
			added: []string{"X-Amz-Date=20261130T120000Z"},
		},
		{
			name: "client Host header signed in the client's spelling",
			req: s3req.Request{
				Method: "HEAD", Region: "us-east-1", Scheme: "https",
				Host:          "lake.s3.amazonaws.com",
				RawPath:       "/k",
				Headers:       hdrs("Host", "Lake.S3.amazonaws.com"),
				ContentSHA256: "UNSIGNED-PAYLOAD", AddContentSHA256: true,
			},
			canonical: "HEAD\n" +
				"/k\n" +
				"\n" +
				"host:Lake.S3.amazonaws.com\n" +
				"x-amz-content-sha256:UNSIGNED-PAYLOAD\n" +
				"x-amz-date:20261130T120000Z\n" +
				"\n" +
				"host;x-amz-content-sha256;x-amz-date\n" +
				"UNSIGNED-PAYLOAD",
			added: []string{"X-Amz-Date=20261130T120000Z", "x-amz-content-sha256=UNSIGNED-PAYLOAD"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, seen := newTestSigner(t, staticCreds(tc.token))
			before := cloneHeaders(tc.req.Headers)
			out, err := s.Sign(context.Background(), &tc.req)
			if err != nil {
				t.Fatal(err)
			}
			if len(*seen) != 1 || (*seen)[0] != tc.canonical {
				t.Fatalf("canonical request:\n%s\nwant:\n%s", strings.Join(*seen, "\n----\n"), tc.canonical)
			}
			wantAuth, wantSig := referenceAuthorization(testSecret, testAKID, "20261130T120000Z", tc.req.Region, tc.canonical)
			if got := out.Headers.Values("Authorization"); len(got) != 1 || got[0] != wantAuth {
				t.Errorf("Authorization = %q\nwant %q", got, wantAuth)
			}
			if out.SignatureSHA256 != sha256Hex(wantSig) {
				t.Errorf("SignatureSHA256 = %s, want %s", out.SignatureSHA256, sha256Hex(wantSig))
			}
			if out.CanonicalRequestSHA256 != sha256Hex(tc.canonical) {
				t.Errorf("CanonicalRequestSHA256 = %s, want %s", out.CanonicalRequestSHA256, sha256Hex(tc.canonical))
			}
			lines := strings.Split(tc.canonical, "\n")
			if want := strings.Split(lines[len(lines)-2], ";"); !reflect.DeepEqual(out.SignedHeaders, want) {
				t.Errorf("SignedHeaders = %q, want %q", out.SignedHeaders, want)
			}
			if want := "20261130/" + tc.req.Region + "/s3/aws4_request"; out.CredentialScope != want {
				t.Errorf("CredentialScope = %q, want %q", out.CredentialScope, want)
			}
			if out.AccessKeyID != testAKID || out.AmzDate != "20261130T120000Z" {
				t.Errorf("AccessKeyID, AmzDate = %q, %q", out.AccessKeyID, out.AmzDate)
			}

			// Client headers echoed unchanged and in order, additions after.
			n := len(tc.req.Headers)
			if !reflect.DeepEqual(tc.req.Headers, before) {
				t.Errorf("Sign modified the request's headers")
			}
			if len(out.Headers) < n || (n > 0 && !reflect.DeepEqual(out.Headers[:n], before)) {
				t.Fatalf("returned headers do not start with the client's:\n%q\nwant prefix\n%q", out.Headers, before)
			}
			var added []string
			for _, h := range out.Headers[n:] {
				if h.Name == "Authorization" {
					continue
				}
				added = append(added, h.Name+"="+strings.Join(h.Values, ","))
			}
			if out.Headers[n].Name != "Authorization" || !reflect.DeepEqual(added, tc.added) {
				t.Errorf("added headers = %q then %q, want Authorization then %q", out.Headers[n].Name, added, tc.added)
			}
		})
	}
}

func TestClientDate(t *testing.T) {
	// Just before midnight per the client, just after per the signer: the
	// client's date (and day) is what gets signed.
	now := time.Date(2026, 12, 1, 0, 1, 0, 0, time.UTC)
	s := New(staticCreds(""), Options{Now: func() time.Time { return now }})
	var canonical string
	s.onCanonical = func(c string) { canonical = c }

	req := func(date string) *s3req.Request {
		return &s3req.Request{
			Method: "GET", Region: "us-east-1", Scheme: "https", Host: "b.s3.amazonaws.com", RawPath: "/k",
			Headers:       hdrs("X-Amz-Date", date, "Range", "bytes=1-2"),
			ContentSHA256: "UNSIGNED-PAYLOAD", AddContentSHA256: true,
		}
	}

	out, err := s.Sign(context.Background(), req("20261130T235830Z"))
	if err != nil {
		t.Fatal(err)
	}
	if out.AmzDate != "20261130T235830Z" || out.CredentialScope != "20261130/us-east-1/s3/aws4_request" {
		t.Errorf("AmzDate %q, scope %q", out.AmzDate, out.CredentialScope)
	}
	if !strings.Contains(canonical, "\nx-amz-date:20261130T235830Z\n") {
		t.Errorf("canonical request does not sign the client's date:\n%s", canonical)
	}
	if !slices.Contains(out.SignedHeaders, "x-amz-date") {
		t.Errorf("x-amz-date not signed: %q", out.SignedHeaders)
	}
	// The client's header is echoed; no second X-Amz-Date is added.
	var dates int
	for _, h := range out.Headers {
		if strings.EqualFold(h.Name, "x-amz-date") {
			dates++
		}
	}
	if dates != 1 {
		t.Errorf("%d x-amz-date headers returned, want 1: %q", dates, out.Headers)
	}
	wantAuth, _ := referenceAuthorization(testSecret, testAKID, "20261130T235830Z", "us-east-1", canonical)
	if got, _ := out.Headers.Get("Authorization"); got != wantAuth {
		t.Errorf("Authorization = %q, want %q", got, wantAuth)
	}

	for _, bad := range []string{
		"20261130T235459Z",     // 6m01s before the signer's clock
		"20261201T000701Z",     // 6m01s after
		"20261130T235830.5Z",   // fractional seconds: time.Parse would accept them
		"2026-11-30T23:58:30Z", // not the SigV4 format
		"20261131T000000Z",     // no such day
		"",
	} {
		out, err := s.Sign(context.Background(), req(bad))
		if !errors.Is(err, ErrBadDate) || !errors.Is(err, ErrBadRequest) || out != nil {
			t.Errorf("x-amz-date %q: got %v, %v; want ErrBadDate", bad, out, err)
			continue
		}
		if !strings.Contains(err.Error(), `"X-Amz-Date"`) {
			t.Errorf("error does not name the header: %v", err)
		}
	}
	// Multi-valued x-amz-date.
	r := req("20261130T235830Z")
	r.Headers[0].Values = append(r.Headers[0].Values, "20261130T235830Z")
	if _, err := s.Sign(context.Background(), r); !errors.Is(err, ErrBadDate) {
		t.Errorf("two x-amz-date values: %v", err)
	}
}

// TestContentLengthOneSpelling: a Content-Length is signed in decimal and
// echoed as sent, so only its decimal spelling is signed ("010" was signed
// as content-length:10, found by a black-box probe).
func TestContentLengthOneSpelling(t *testing.T) {
	s, _ := newTestSigner(t, staticCreds(""))
	for v, ok := range map[string]bool{"10": true, "0": true, "010": false, "00": false, "+1": false, "-1": false, " 1": false, "1e3": false} {
		r := &s3req.Request{
			Method: "PUT", Region: "us-east-1", Scheme: "https", Host: "b.s3.amazonaws.com", RawPath: "/k",
			Headers:       hdrs("Content-Length", v),
			ContentSHA256: "UNSIGNED-PAYLOAD", AddContentSHA256: true,
		}
		out, err := s.Sign(context.Background(), r)
		if ok != (err == nil) || (!ok && (!errors.Is(err, ErrBadRequest) || out != nil)) {
			t.Errorf("Content-Length %q: %v, %v; want accepted %v", v, out, err, ok)
		}
	}
}

func TestPreSignedRejected(t *testing.T) {
	s, _ := newTestSigner(t, staticCreds(testToken))
	for _, name := range []string{"Authorization", "authorization", "X-Amz-Security-Token", "x-amz-security-token"} {
		secretish := "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/x, Signature=deadbeef"
		r := &s3req.Request{
			Method: "GET", Region: "us-east-1", Scheme: "https", Host: "b.s3.amazonaws.com", RawPath: "/k",
			Headers:       hdrs(name, secretish),
			ContentSHA256: "UNSIGNED-PAYLOAD", AddContentSHA256: true,
		}
		out, err := s.Sign(context.Background(), r)
		if !errors.Is(err, ErrBadRequest) || out != nil {
			t.Fatalf("%s: got %v, %v; want ErrBadRequest", name, out, err)
		}
		if !strings.Contains(err.Error(), `"`+name+`"`) || strings.Contains(err.Error(), secretish) {
			t.Errorf("%s: error must name the header and not echo its value: %v", name, err)
		}
	}
}

func TestPayloadHash(t *testing.T) {
	s, _ := newTestSigner(t, staticCreds(""))
	base := s3req.Request{Method: "PUT", Region: "us-east-1", Scheme: "https", Host: "b.s3.amazonaws.com", RawPath: "/k"}

	// Added when the client sent none.
	r := base
	r.ContentSHA256, r.AddContentSHA256 = "UNSIGNED-PAYLOAD", true
	out, err := s.Sign(context.Background(), &r)
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := out.Headers.Get("x-amz-content-sha256"); v != "UNSIGNED-PAYLOAD" || !slices.Contains(out.SignedHeaders, "x-amz-content-sha256") {
		t.Errorf("added x-amz-content-sha256 = %q, signed %q", v, out.SignedHeaders)
	}

	// The client's value is kept, signed, and not duplicated.
	r = base
	r.Headers = hdrs("X-Amz-Content-Sha256", "STREAMING-UNSIGNED-PAYLOAD-TRAILER")
	r.ContentSHA256 = "STREAMING-UNSIGNED-PAYLOAD-TRAILER"
	out, err = s.Sign(context.Background(), &r)
	if err != nil {
		t.Fatal(err)
	}
	var n int
	for _, h := range out.Headers {
		if strings.EqualFold(h.Name, "x-amz-content-sha256") {
			n++
			if h.Name != "X-Amz-Content-Sha256" || !reflect.DeepEqual(h.Values, []string{"STREAMING-UNSIGNED-PAYLOAD-TRAILER"}) {
				t.Errorf("client header changed: %q", h)
			}
		}
	}
	if n != 1 || !slices.Contains(out.SignedHeaders, "x-amz-content-sha256") {
		t.Errorf("%d x-amz-content-sha256 headers, signed %q", n, out.SignedHeaders)
	}

	// Inconsistent descriptions are internal errors, never signed.
	r.ContentSHA256 = "UNSIGNED-PAYLOAD"
	if _, err := s.Sign(context.Background(), &r); err == nil {
		t.Error("client hash differing from ContentSHA256 was signed")
	}
	r.ContentSHA256, r.AddContentSHA256 = "STREAMING-UNSIGNED-PAYLOAD-TRAILER", true
	if _, err := s.Sign(context.Background(), &r); err == nil {
		t.Error("AddContentSHA256 with a client hash was signed")
	}
	r = base
	r.ContentSHA256 = "UNSIGNED-PAYLOAD" // but no header and not AddContentSHA256
	if _, err := s.Sign(context.Background(), &r); err == nil {
		t.Error("missing x-amz-content-sha256 was signed")
	}
	r = base
	if _, err := s.Sign(context.Background(), &r); err == nil {
		t.Error("empty ContentSHA256 was signed")
	}
}

func TestCredentialErrors(t *testing.T) {
	req := func() *s3req.Request {
		return &s3req.Request{
			Method: "GET", Region: "us-east-1", Scheme: "https", Host: "b.s3.amazonaws.com", RawPath: "/k",
			ContentSHA256: "UNSIGNED-PAYLOAD", AddContentSHA256: true,
		}
	}
	providers := map[string]aws.CredentialsProvider{
		"retrieve fails": aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{}, errors.New("imds: connection refused")
		}),
		"no keys": aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: testAKID}, nil
		}),
		"expired": aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: testAKID, SecretAccessKey: testSecret, SessionToken: testToken,
				CanExpire: true, Expires: testNow.Add(-time.Second)}, nil
		}),
		"anonymous": aws.AnonymousCredentials{},
	}
	for name, p := range providers {
		s, seen := newTestSigner(t, p)
		out, err := s.Sign(context.Background(), req())
		if !errors.Is(err, ErrCredentials) || out != nil {
			t.Errorf("%s: got %v, %v; want ErrCredentials and no result", name, out, err)
			continue
		}
		if len(*seen) != 0 {
			t.Errorf("%s: a request was signed", name)
		}
		if msg := err.Error(); strings.Contains(msg, testSecret) || strings.Contains(msg, testToken) {
			t.Errorf("%s: error leaks a secret: %s", name, msg)
		}
	}
}

func TestRejectsUnsignable(t *testing.T) {
	s, _ := newTestSigner(t, staticCreds(""))
	ok := func() s3req.Request {
		return s3req.Request{
			Method: "GET", Region: "us-east-1", Scheme: "https", Host: "b.s3.amazonaws.com", RawPath: "/k",
			ContentSHA256: "UNSIGNED-PAYLOAD", AddContentSHA256: true,
		}
	}
	if _, err := s.Sign(context.Background(), &[]s3req.Request{ok()}[0]); err != nil {
		t.Fatal(err)
	}
	cases := map[string]func(r *s3req.Request){
		"raw space in path":       func(r *s3req.Request) { r.RawPath = "/a b" },
		"raw non-ASCII in path":   func(r *s3req.Request) { r.RawPath = "/é" },
		"bad escape in path":      func(r *s3req.Request) { r.RawPath = "/a%2" },
		"question mark in path":   func(r *s3req.Request) { r.RawPath = "/a?b" },
		"relative path":           func(r *s3req.Request) { r.RawPath = "k" },
		"semicolon in query":      func(r *s3req.Request) { r.RawQuery = "a=1;b=2" },
		"bad escape in query":     func(r *s3req.Request) { r.RawQuery = "prefix=%zz" },
		"fragment in query":       func(r *s3req.Request) { r.RawQuery = "a#b" },
		"userinfo in host":        func(r *s3req.Request) { r.Host = "u@b.s3.amazonaws.com" },
		"slash in host":           func(r *s3req.Request) { r.Host = "b/c" },
		"empty port":              func(r *s3req.Request) { r.Host = "b.s3.amazonaws.com:" },
		"empty host":              func(r *s3req.Request) { r.Host = "" },
		"bad scheme":              func(r *s3req.Request) { r.Scheme = "ftp" },
		"slash in region":         func(r *s3req.Request) { r.Region = "us-east-1/s3" },
		"empty region":            func(r *s3req.Request) { r.Region = "" },
		"bad method":              func(r *s3req.Request) { r.Method = "GET /x" },
		"newline in header value": func(r *s3req.Request) { r.Headers = hdrs("X-Amz-Meta-A", "x\nx-amz-date:1") },
		"control in a long value": func(r *s3req.Request) {
			r.Headers = hdrs("X-Amz-Meta-A", "0123456789abcdef01234\x01567")
		},
		"DEL in the last word": func(r *s3req.Request) { r.Headers = hdrs("X-Amz-Meta-A", "0123456789abcde\x7f") },
		"NUL in a second value": func(r *s3req.Request) {
			r.Headers = remotesign.Headers{{Name: "X-Amz-Meta-A", Values: []string{"ok", "a\x00"}}}
		},
		"bad header name":          func(r *s3req.Request) { r.Headers = hdrs("X Amz", "x") },
		"header twice, any case":   func(r *s3req.Request) { r.Headers = hdrs("X-Amz-Meta-A", "1", "x-amz-meta-a", "2") },
		"host header mismatch":     func(r *s3req.Request) { r.Headers = hdrs("Host", "evil.example") },
		"host header default port": func(r *s3req.Request) { r.Headers = hdrs("Host", "b.s3.amazonaws.com:443") },
		"bad content-length":       func(r *s3req.Request) { r.Headers = hdrs("Content-Length", "-1") },
		"two content-lengths": func(r *s3req.Request) {
			r.Headers = remotesign.Headers{{Name: "Content-Length", Values: []string{"1", "1"}}}
		},
	}
	for name, mutate := range cases {
		r := ok()
		mutate(&r)
		out, err := s.Sign(context.Background(), &r)
		if !errors.Is(err, ErrBadRequest) || out != nil {
			t.Errorf("%s: got %v, %v; want ErrBadRequest", name, out, err)
		}
	}
}

func TestHeaderClassification(t *testing.T) {
	unsigned := []string{"Range", "RANGE", "User-Agent", "Expect", "X-Amzn-Trace-Id", "Transfer-Encoding",
		"Connection", "Keep-Alive", "TE", "Upgrade", "Proxy-Connection", "Proxy-Authorization",
		"amz-sdk-invocation-id", "Amz-Sdk-Request", "amz-sdk-retry", "amz-sdk-anything"}
	for _, n := range unsigned {
		if classify(n) != kindUnsigned {
			t.Errorf("%s should be unsigned", n)
		}
	}
	signed := []string{"Content-Type", "Content-MD5", "If-Match", "X-Amz-Copy-Source", "x-amz-checksum-crc32",
		"x-amz-meta-a", "x-amz-acl", "amz-sdk", "Accept", "X-Amz-Expected-Bucket-Owner", "x-amz-trailer"}
	for _, n := range signed {
		if classify(n) != kindSigned {
			t.Errorf("%s should be signed", n)
		}
	}
}

// TestConcurrentSigning checks that pooled scratch state never leaks between
// concurrent calls.
func TestConcurrentSigning(t *testing.T) {
	s := New(staticCreds(testToken), Options{Now: func() time.Time { return testNow }})
	reqs := make([]*s3req.Request, 16)
	want := make([]*Signed, len(reqs))
	for i := range reqs {
		reqs[i] = &s3req.Request{
			Method: "GET", Region: "us-east-1", Scheme: "https", Host: "b.s3.amazonaws.com",
			RawPath:       fmt.Sprintf("/data/%d.parquet", i),
			Headers:       hdrs("Range", "bytes=0-1", fmt.Sprintf("X-Amz-Meta-N%d", i), "v"),
			ContentSHA256: "UNSIGNED-PAYLOAD", AddContentSHA256: i%2 == 0,
		}
		if i%2 == 1 {
			reqs[i].Headers = append(reqs[i].Headers, hdrs("x-amz-content-sha256", "UNSIGNED-PAYLOAD")...)
		}
		var err error
		if want[i], err = s.Sign(context.Background(), reqs[i]); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Go(func() {
			for n := 0; n < 200; n++ {
				i := (g*7 + n) % len(reqs)
				got, err := s.Sign(context.Background(), reqs[i])
				if err != nil {
					t.Error(err)
					return
				}
				if !reflect.DeepEqual(got, want[i]) {
					t.Errorf("request %d: concurrent result differs", i)
					return
				}
			}
		})
	}
	wg.Wait()
}

func BenchmarkSign(b *testing.B) {
	s := New(staticCreds(testToken), Options{})
	r := &s3req.Request{
		Method: "GET", Region: "us-east-1", Scheme: "https",
		Host:    "lake.s3.us-east-1.amazonaws.com",
		RawPath: "/warehouse/db/events/data/ts_day=2026-11-30/00042-17-7f3c9a1e-5b2d-4c8e-9f01-23456789abcd-00001.parquet",
		Headers: hdrs(
			"amz-sdk-invocation-id", "0f8e7b0c-3a57-4f3e-9a9e-1b2c3d4e5f60",
			"amz-sdk-request", "attempt=1; max=4",
			"Range", "bytes=4-1048579",
			"User-Agent", "aws-sdk-java/2.29.0 Linux/6.1 OpenJDK_64-Bit_Server_VM/21 Java/21 vendor/Eclipse_Adoptium io/sync http/Apache cfg/retry-mode/standard",
			"x-amz-checksum-mode", "ENABLED",
			"If-Match", `"9b2cf535f27731c974343645a3985328"`,
			"x-amz-expected-bucket-owner", "111122223333",
			"X-Amzn-Trace-Id", "Root=1-5759e988-bd862e3fe1be46a994272793",
		),
		ContentSHA256: "UNSIGNED-PAYLOAD", AddContentSHA256: true,
	}
	ctx := context.Background()
	if _, err := s.Sign(ctx, r); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Sign(ctx, r); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSDKSignHTTP is the SDK's signer alone on an equivalent,
// pre-built request: what Sign cost per call when it used the SDK (see
// sigv4.go).
func BenchmarkSDKSignHTTP(b *testing.B) {
	s := New(staticCreds(testToken), Options{})
	creds, _ := s.creds.Retrieve(context.Background())
	sdk := v4.NewSigner(func(o *v4.SignerOptions) { o.DisableURIPathEscaping = true })
	u := &url.URL{Scheme: "https", Host: "lake.s3.us-east-1.amazonaws.com",
		Opaque: "/warehouse/db/events/data/ts_day=2026-11-30/00042-17-7f3c9a1e-5b2d-4c8e-9f01-23456789abcd-00001.parquet"}
	h := http.Header{
		"X-Amz-Checksum-Mode":         {"ENABLED"},
		"If-Match":                    {`"9b2cf535f27731c974343645a3985328"`},
		"X-Amz-Expected-Bucket-Owner": {"111122223333"},
		"X-Amz-Content-Sha256":        {"UNSIGNED-PAYLOAD"},
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		req := &http.Request{Method: "GET", URL: u, Header: h, Host: u.Host}
		if err := sdk.SignHTTP(ctx, creds, req, "UNSIGNED-PAYLOAD", "s3", "us-east-1", time.Now()); err != nil {
			b.Fatal(err)
		}
	}
}
