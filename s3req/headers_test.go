package s3req

import (
	"strings"
	"testing"

	"github.com/countersign/countersign/remotesign"
)

// TestCopySourceOneSpelling is the regression test for a non-canonical
// x-amz-copy-source (SECURITY.md): SigV4 signs header values trimmed, with
// runs of spaces collapsed and several lines joined with ',', so a value
// with whitespace or a comma signs the same as another spelling the server
// reads as another object. Only the canonical encoding is accepted.
func TestCopySourceOneSpelling(t *testing.T) {
	c := testClassifier(t)
	const dst = "http://localhost:7070/lake/wh/copy"
	copyOf := func(h remotesign.Headers) (*Request, error) { return c.Classify(req("PUT", dst, h)) }
	for _, good := range []struct{ src, bucket, key, version string }{
		{"lake/wh/a.parquet", "lake", "wh/a.parquet", ""},
		{"/lake/wh/a%21b%3Dc%40d.parquet", "lake", "wh/a!b=c@d.parquet", ""},
		{"lake/wh/%E2%82%AC?versionId=3Lg.x_y", "lake", "wh/€", "3Lg.x_y"},
	} {
		r, err := copyOf(hdrs("x-amz-copy-source", good.src))
		if err != nil {
			t.Fatalf("%q: %v", good.src, err)
		}
		if src := r.Targets[1]; src.Bucket != good.bucket || src.Key != good.key || src.VersionID != good.version {
			t.Fatalf("%q: copy source %+v", good.src, src)
		}
	}
	for _, bad := range []struct{ name, src, msg string }{
		{"trailing space", "lake/wh/secret.parquet ", "spaces or tabs"},
		{"trailing tab", "lake/wh/secret.parquet\t", "spaces or tabs"},
		{"leading space", " lake/wh/secret.parquet", "spaces or tabs"},
		{"inner double space", "lake/wh/a  b", "spaces or tabs"},
		{"raw space", "lake/wh/a b", "spaces or tabs"},
		{"comma-joined second source", "lake/wh/a.parquet,private/secret", "comma"},
		{"encoded comma is fine, raw is not", "lake/wh/a,b", "comma"},
		{"non-breaking space (TrimSpace strips it)", "lake/wh/secret.parquet\u00a0", "printable ASCII"},
		{"lower-case hex", "lake/wh/a%2bb", "canonical"},
		{"over-encoded unreserved", "lake/wh/%61.parquet", "canonical"},
		{"encoded slash", "lake/wh%2Fsecret.parquet", "canonical"},
		{"unencoded reserved", "lake/wh/a!b", "canonical"},
		{"version not canonical", "lake/wh/a?versionId=a%2fb", "canonical"},
		{"empty", "", "empty"},
	} {
		_, err := copyOf(hdrs("x-amz-copy-source", bad.src))
		ce, ok := err.(*Error)
		if !ok || ce.Status != 400 || !strings.Contains(ce.Msg, bad.msg) {
			t.Errorf("%s (%q): %v, want 400 containing %q", bad.name, bad.src, err, bad.msg)
		}
	}
	// Two header lines: one value each is what is signed as "a,b".
	two := remotesign.Headers{{Name: "x-amz-copy-source", Values: []string{"lake/wh/a.parquet", "private/secret"}}}
	if _, err := copyOf(two); err == nil || !strings.Contains(err.Error(), "exactly one value") {
		t.Errorf("two values: %v", err)
	}
}

// TestMeaningHeadersOneSpelling: every header whose value the classifier
// reads is held to the same rule, not only the copy source.
func TestMeaningHeadersOneSpelling(t *testing.T) {
	c := testClassifier(t)
	ok := []remotesign.Headers{
		hdrs("x-amz-copy-source", "lake/wh/a", "x-amz-copy-source-range", "bytes=0-9"),
		hdrs("Content-Length", "0"),
		hdrs("x-amz-content-sha256", "UNSIGNED-PAYLOAD"),
		hdrs("x-amz-checksum-crc32", "AAAAAA=="),
		hdrs("Content-Type", "text/plain; charset=utf-8"), // not read by the classifier
	}
	for _, h := range ok {
		if _, err := c.Classify(req("PUT", "http://localhost:7070/lake/wh/copy?partNumber=1&uploadId=u", h)); err != nil {
			t.Errorf("%v: %v", h, err)
		}
	}
	bad := []remotesign.Headers{
		hdrs("x-amz-copy-source", "lake/wh/a", "x-amz-copy-source-range", "bytes=0-9, 20-29"),
		hdrs("x-amz-copy-source", "lake/wh/a", "x-amz-copy-source-range", "bytes=0-9,20-29"),
		hdrs("Content-Length", "0 "),
		hdrs("x-amz-content-sha256", "UNSIGNED-PAYLOAD "),
		hdrs("X-Amz-Checksum-Crc32", " AAAAAA=="),
		hdrs("Content-MD5", "a,b"),
		{{Name: "x-amz-checksum-sha256", Values: []string{"a", "b"}}},
		{{Name: "Content-Length", Values: []string{"0", "0"}}},
	}
	for _, h := range bad {
		if _, err := c.Classify(req("PUT", "http://localhost:7070/lake/wh/copy?partNumber=1&uploadId=u", h)); err == nil || err.(*Error).Status != 400 {
			t.Errorf("%v: %v, want 400", h, err)
		}
	}
}

// TestAmzHeadersSignedSpelling: an x-amz-* header's value reaches the
// policy as sent, and SigV4 signs it trimmed, collapsed and with lines
// joined by ','. A policy denying x-amz-storage-class GLACIER allowed
// "GLACIER " (another value to it), and the signature then covered
// "GLACIER". Such spellings are refused; the signed spelling passes.
func TestAmzHeadersSignedSpelling(t *testing.T) {
	c := testClassifier(t)
	const uri = "http://localhost:7070/lake/wh/a.parquet"
	for _, h := range []remotesign.Headers{
		hdrs("x-amz-storage-class", "GLACIER "),
		hdrs("x-amz-storage-class", " GLACIER"),
		hdrs("X-Amz-Storage-Class", "GLACIER\t"),
		hdrs("x-amz-server-side-encryption", "AES256\u00a0"),
		hdrs("x-amz-server-side-encryption", "\u2003AES256"),
		hdrs("x-amz-meta-class", "top  secret"),
		{{Name: "x-amz-storage-class", Values: []string{"STANDARD", "GLACIER"}}},
		{{Name: "x-amz-meta-a", Values: []string{"x", "y"}}},
	} {
		if _, err := c.Classify(req("PUT", uri, h)); err == nil || !strings.Contains(err.Error(), h[0].Name) {
			t.Errorf("%q: %v, want a refusal naming the header", h, err)
		}
	}
	for _, h := range []remotesign.Headers{
		hdrs("x-amz-storage-class", "GLACIER"),
		hdrs("x-amz-meta-class", "top secret"),
		hdrs("x-amz-meta-empty", ""),
		hdrs("x-amz-server-side-encryption", "aws:kms"),
		{{Name: "amz-sdk-request", Values: []string{"attempt=1", "max=4"}}},
		hdrs("Content-Type", "text/plain; charset=utf-8"),
	} {
		if _, err := c.Classify(req("PUT", uri, h)); err != nil {
			t.Errorf("%q: %v", h, err)
		}
	}
}
