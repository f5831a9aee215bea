package e2e

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/base64"
	"encoding/binary"
	"encoding/xml"
	"fmt"
	"hash/crc32"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// awsEscape encodes an object key the way AWS SDKs put it in a path.
func awsEscape(key string) string {
	var b strings.Builder
	for i := 0; i < len(key); i++ {
		c := key[i]
		if c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || strings.IndexByte("-_.~/", c) >= 0 {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

// addressing builds object and bucket URIs for one addressing style.
type addressing struct {
	name   string
	object func(bucket, key string) string // key already escaped
	bucket func(bucket string) string      // ends with "/"
}

func styles(port int) []addressing {
	return []addressing{
		{"path-style",
			func(b, k string) string { return fmt.Sprintf("http://localhost:%d/%s/%s", port, b, k) },
			func(b string) string { return fmt.Sprintf("http://localhost:%d/%s/", port, b) }},
		{"path-style-ip",
			func(b, k string) string { return fmt.Sprintf("http://127.0.0.1:%d/%s/%s", port, b, k) },
			func(b string) string { return fmt.Sprintf("http://127.0.0.1:%d/%s/", port, b) }},
		{"virtual-hosted",
			func(b, k string) string { return fmt.Sprintf("http://%s.localhost:%d/%s", b, port, k) },
			func(b string) string { return fmt.Sprintf("http://%s.localhost:%d/", b, port) }},
	}
}

// javaHeaders are the headers Iceberg's S3V4RestSignerClient forwards from
// the AWS SDK v2 at signing time (no Host, no credentials).
func javaHeaders(extra ...string) map[string][]string {
	h := map[string][]string{
		"amz-sdk-invocation-id": {"7b1c3a44-5d6e-4f10-9a2b-3c4d5e6f7a8b"},
		"amz-sdk-request":       {"attempt=1; max=4"},
		"User-Agent":            {"aws-sdk-java/2.31.1 Linux/6.1 OpenJDK_64-Bit_Server_VM/17 Java/17 vendor/Eclipse_Adoptium io/sync http/Apache cfg/retry-mode/legacy"},
	}
	for i := 0; i+1 < len(extra); i += 2 {
		h[extra[i]] = append(h[extra[i]], extra[i+1])
	}
	return h
}

var signedHeadersRE = regexp.MustCompile(`SignedHeaders=([^,]+)`)

func signedHeaders(t testing.TB, h map[string][]string) []string {
	t.Helper()
	auth := h["Authorization"]
	if len(auth) != 1 {
		t.Fatalf("response has no single Authorization header: %v", h)
	}
	m := signedHeadersRE.FindStringSubmatch(auth[0])
	if m == nil {
		t.Fatalf("Authorization without SignedHeaders: %s", auth[0])
	}
	return strings.Split(m[1], ";")
}

// harness bundles one versitygw and one countersign.
type harness struct {
	s3  *s3Server
	cs  *signerProc
	ctx context.Context
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	return newHarnessOn(t, backends[0])
}

// newHarnessOn is newHarness on backend b.
func newHarnessOn(t *testing.T, b backend) *harness {
	t.Helper()
	srv := b.start(t)
	srv.CreateBucket(t, "lake")
	srv.CreateBucket(t, "private")
	cs := startCountersign(t, baseConfig(t, srv.Port), secretEnv()...)
	return &harness{s3: srv, cs: cs, ctx: context.Background()}
}

// op is one S3 request to sign and send.
type op struct {
	name    string
	method  string
	uri     string
	headers map[string][]string
	body    []byte // sent to S3
	sigBody *string
	want    int // expected S3 status
}

// signAndSend signs o through countersign, checks the response's shape,
// proves that tampering breaks the signature, then sends the real request.
func (h *harness) signAndSend(t *testing.T, o op) []byte {
	t.Helper()
	status, res, ierr, hdr := h.cs.sign(t, "", signRequest{Region: testRegion, URI: o.uri, Method: o.method, Headers: o.headers, Body: o.sigBody})
	if status != http.StatusOK {
		t.Fatalf("%s: sign status %d: %+v", o.name, status, ierr)
	}
	if cc := hdr.Get("Cache-Control"); cc != "no-cache" {
		t.Fatalf("%s: Cache-Control %q, want no-cache", o.name, cc)
	}
	if res.URI != o.uri {
		t.Fatalf("%s: uri changed: %q -> %q", o.name, o.uri, res.URI)
	}
	for name, values := range o.headers {
		if !slices.Equal(res.Headers[name], values) {
			t.Fatalf("%s: client header %s changed: %v -> %v", o.name, name, values, res.Headers[name])
		}
	}
	signed := signedHeaders(t, res.Headers)
	for _, never := range []string{"range", "user-agent", "amz-sdk-invocation-id", "amz-sdk-request", "expect"} {
		if slices.Contains(signed, never) {
			t.Fatalf("%s: %s must never be signed (SignedHeaders %v)", o.name, never, signed)
		}
	}
	if !slices.Contains(signed, "x-amz-content-sha256") || !slices.Contains(signed, "host") {
		t.Fatalf("%s: SignedHeaders %v lack host or x-amz-content-sha256", o.name, signed)
	}

	for _, tamper := range tamperings(res) {
		st, body := h.s3.send(t, o.method, tamper.uri, tamper.headers, o.body)
		if st != http.StatusForbidden {
			t.Fatalf("%s: tampered (%s) request got %d, want 403 from the S3 server\n%s", o.name, tamper.what, st, body)
		}
	}

	st, body := h.s3.send(t, o.method, res.URI, res.Headers, o.body)
	want := o.want
	if want == 0 {
		want = http.StatusOK
	}
	if st != want {
		t.Fatalf("%s: S3 answered %d, want %d\n%s", o.name, st, want, body)
	}
	return body
}

type tampered struct {
	what    string
	uri     string
	headers map[string][]string
}

func cloneHeaders(h map[string][]string) map[string][]string {
	c := make(map[string][]string, len(h))
	for k, v := range h {
		c[k] = slices.Clone(v)
	}
	return c
}

// flip changes one character of s at index i to another legal one.
func flip(s string, i int) string {
	b := []byte(s)
	switch {
	case b[i] >= '0' && b[i] <= '8', b[i] >= 'a' && b[i] <= 'y', b[i] >= 'A' && b[i] <= 'Y':
		b[i]++
	default:
		b[i] = 'a'
	}
	return string(b)
}

// tamperings derives requests that differ from the signed one by one byte
// of the signature, the path, the query, or a signed header.
func tamperings(res *signResult) []tampered {
	var out []tampered
	h := cloneHeaders(res.Headers)
	auth := h["Authorization"][0]
	h["Authorization"] = []string{flip(auth, len(auth)-1)}
	out = append(out, tampered{"signature", res.URI, h})

	path, query, hasQuery := strings.Cut(res.URI, "?")
	// Change the last character of the key, or of the bucket for
	// bucket-level requests; for a virtual-hosted bucket request the bucket
	// is in the host name, so change that (a signed header) instead.
	rest := strings.TrimPrefix(path, "http://")
	slash := strings.IndexByte(rest, '/')
	authority, urlPath := rest[:slash], rest[slash:]
	switch {
	case urlPath == "/":
		out = append(out, tampered{"host", "http://" + flip(authority, 0) + urlPath + "?" + query, res.Headers})
	case strings.HasSuffix(urlPath, "/"):
		out = append(out, tampered{"path", "http://" + authority + flip(urlPath, len(urlPath)-2) + "?" + query, res.Headers})
	default:
		out = append(out, tampered{"path", flip(path, len(path)-1) + map[bool]string{true: "?" + query}[hasQuery], res.Headers})
	}
	lastParam := query[strings.LastIndexByte(query, '&')+1:]
	switch {
	case strings.Contains(lastParam, "=") && !strings.HasSuffix(lastParam, "="):
		out = append(out, tampered{"query", path + "?" + flip(query, len(query)-1), res.Headers})
	case hasQuery && query != "":
		// A flag such as ?uploads selects the operation; give it a value
		// instead of renaming it, so the server still routes it the same.
		out = append(out, tampered{"query", path + "?" + strings.TrimSuffix(query, "=") + "=1", res.Headers})
	default:
		out = append(out, tampered{"query", path + "?x-id=GetObject", res.Headers})
	}
	h = cloneHeaders(res.Headers)
	// One second later: still a well-formed date, so the server can only
	// refuse it for the signature (flipping a digit could make it
	// malformed, which SeaweedFS answers with 400 MalformedDate).
	d, err := time.Parse("20060102T150405Z", h["X-Amz-Date"][0])
	if err != nil {
		panic("countersign returned X-Amz-Date " + h["X-Amz-Date"][0])
	}
	h["X-Amz-Date"] = []string{d.Add(time.Second).Format("20060102T150405Z")}
	out = append(out, tampered{"signed header x-amz-date", res.URI, h})
	if ct, ok := res.Headers["Content-Type"]; ok {
		h = cloneHeaders(res.Headers)
		h["Content-Type"] = []string{ct[0] + "x"}
		out = append(out, tampered{"signed header content-type", res.URI, h})
	}
	return out
}

// TestSignedRequestsAgainstS3 drives every data-path operation through
// countersign into versitygw in each addressing style, with keys that need
// encoding, and shows that any one-byte change breaks the signature.
func TestSignedRequestsAgainstS3(t *testing.T) {
	for _, b := range backends {
		t.Run(string(b.name), func(t *testing.T) { signedRequestsAgainst(t, newHarnessOn(t, b)) })
	}
}

func signedRequestsAgainst(t *testing.T, h *harness) {
	for _, st := range styles(h.s3.Port) {
		t.Run(st.name, func(t *testing.T) {
			key := "wh/db/t/data/" + st.name + " a=b+c%d~e/ü-é 数据.parquet"
			ek := awsEscape(key)
			content := []byte("PAR1 0123456789 footer PAR1")

			h.signAndSend(t, op{name: "PutObject", method: "PUT", uri: st.object("lake", ek) + "?x-id=PutObject",
				headers: javaHeaders("Content-Type", "application/octet-stream", "Content-Length", fmt.Sprint(len(content))), body: content})
			h.signAndSend(t, op{name: "HeadObject", method: "HEAD", uri: st.object("lake", ek), headers: javaHeaders()})
			for _, rg := range []struct{ header, want string }{
				{"bytes=0-3", "PAR1"}, {"bytes=23-", "PAR1"}, {"bytes=-11", "footer PAR1"},
			} {
				body := h.signAndSend(t, op{name: "GetObject " + rg.header, method: "GET", uri: st.object("lake", ek) + "?x-id=GetObject",
					headers: javaHeaders("Range", rg.header), want: http.StatusPartialContent})
				if string(body) != rg.want {
					t.Fatalf("GetObject %s = %q, want %q", rg.header, body, rg.want)
				}
			}

			tagging := []byte(`<Tagging xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><TagSet><Tag><Key>tier</Key><Value>gold</Value></Tag></TagSet></Tagging>`)
			h.signAndSend(t, op{name: "PutObjectTagging", method: "PUT", uri: st.object("lake", ek) + "?tagging",
				headers: javaHeaders("Content-Type", "application/xml"), body: tagging})
			body := h.signAndSend(t, op{name: "GetObjectTagging", method: "GET", uri: st.object("lake", ek) + "?tagging", headers: javaHeaders()})
			if !bytes.Contains(body, []byte("gold")) {
				t.Fatalf("GetObjectTagging: %s", body)
			}

			// Multipart upload of a second object.
			mkey := awsEscape("wh/db/t/data/" + st.name + "-multipart.parquet")
			body = h.signAndSend(t, op{name: "CreateMultipartUpload", method: "POST", uri: st.object("lake", mkey) + "?uploads",
				headers: javaHeaders("Content-Type", "application/octet-stream")})
			var created struct {
				UploadID string `xml:"UploadId"`
			}
			if err := xml.Unmarshal(body, &created); err != nil || created.UploadID == "" {
				t.Fatalf("CreateMultipartUpload: %v %s", err, body)
			}
			part := bytes.Repeat([]byte("p"), 1000)
			h.signAndSend(t, op{name: "UploadPart", method: "PUT",
				uri:     st.object("lake", mkey) + "?partNumber=1&uploadId=" + created.UploadID,
				headers: javaHeaders("Content-Length", fmt.Sprint(len(part))), body: part})
			etag := h.etagOfPart(t, mkey, created.UploadID, st)
			complete := []byte(fmt.Sprintf(`<CompleteMultipartUpload xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Part><ETag>%s</ETag><PartNumber>1</PartNumber></Part></CompleteMultipartUpload>`, etag))
			h.signAndSend(t, op{name: "CompleteMultipartUpload", method: "POST", uri: st.object("lake", mkey) + "?uploadId=" + created.UploadID,
				headers: javaHeaders("Content-Type", "application/xml"), body: complete})
			if got := h.adminGet(t, "lake", "wh/db/t/data/"+st.name+"-multipart.parquet"); !bytes.Equal(got, part) {
				t.Fatalf("multipart object has %d bytes, want %d", len(got), len(part))
			}

			// Abort another upload.
			akey := awsEscape("wh/db/t/data/" + st.name + "-aborted.parquet")
			body = h.signAndSend(t, op{name: "CreateMultipartUpload", method: "POST", uri: st.object("lake", akey) + "?uploads", headers: javaHeaders()})
			created.UploadID = ""
			if err := xml.Unmarshal(body, &created); err != nil || created.UploadID == "" {
				t.Fatalf("CreateMultipartUpload: %v %s", err, body)
			}
			h.signAndSend(t, op{name: "AbortMultipartUpload", method: "DELETE", uri: st.object("lake", akey) + "?uploadId=" + created.UploadID,
				headers: javaHeaders(), want: http.StatusNoContent})

			// List with a prefix.
			body = h.signAndSend(t, op{name: "ListObjectsV2", method: "GET",
				uri:     st.bucket("lake") + "?list-type=2&prefix=" + awsEscape("wh/db/t/data/"+st.name),
				headers: javaHeaders()})
			if !bytes.Contains(body, []byte("multipart.parquet")) {
				t.Fatalf("ListObjectsV2 misses the multipart object: %s", body)
			}

			h.signAndSend(t, op{name: "DeleteObject", method: "DELETE", uri: st.object("lake", mkey) + "?x-id=DeleteObject",
				headers: javaHeaders(), want: http.StatusNoContent})
			if h.adminExists(t, "lake", "wh/db/t/data/"+st.name+"-multipart.parquet") {
				t.Fatal("DeleteObject left the object")
			}

			// DeleteObjects with several keys, one of them needing XML escaping.
			for _, k := range []string{"wh/db/t/data/" + st.name + "-d1", "wh/db/t/data/" + st.name + "-d2 & more"} {
				h.adminPut(t, "lake", k, []byte("x"))
			}
			del := deleteXML(key, "wh/db/t/data/"+st.name+"-d1", "wh/db/t/data/"+st.name+"-d2 & more")
			delStr := string(del)
			// S3 requires Content-MD5 or a checksum header on DeleteObjects;
			// the Java SDK sends one or the other depending on its version.
			binding := javaHeaders("Content-Type", "application/xml", "Content-MD5", md5Base64(del))
			if st.name == "virtual-hosted" {
				binding = javaHeaders("Content-Type", "application/xml", "x-amz-checksum-crc32", crc32Base64(del), "x-amz-sdk-checksum-algorithm", "CRC32")
			}
			h.signAndSend(t, op{name: "DeleteObjects", method: "POST", uri: st.bucket("lake") + "?delete",
				headers: binding, body: del, sigBody: &delStr})
			for _, k := range []string{key, "wh/db/t/data/" + st.name + "-d1", "wh/db/t/data/" + st.name + "-d2 & more"} {
				if h.adminExists(t, "lake", k) {
					t.Fatalf("DeleteObjects left %q", k)
				}
			}
		})
	}
}

func md5Base64(b []byte) string {
	sum := md5.Sum(b)
	return base64.StdEncoding.EncodeToString(sum[:])
}

func crc32Base64(b []byte) string {
	return base64.StdEncoding.EncodeToString(binary.BigEndian.AppendUint32(nil, crc32.ChecksumIEEE(b)))
}

func deleteXML(keys ...string) []byte {
	var b bytes.Buffer
	b.WriteString(`<Delete xmlns="http://s3.amazonaws.com/doc/2006-03-01/">`)
	for _, k := range keys {
		b.WriteString("<Object><Key>")
		xml.EscapeText(&b, []byte(k))
		b.WriteString("</Key></Object>")
	}
	b.WriteString("<Quiet>true</Quiet></Delete>")
	return b.Bytes()
}

// etagOfPart lists the upload's parts through countersign (ListParts) and
// returns part 1's ETag.
func (h *harness) etagOfPart(t *testing.T, ekey, uploadID string, st addressing) string {
	t.Helper()
	body := h.signAndSend(t, op{name: "ListParts", method: "GET", uri: st.object("lake", ekey) + "?uploadId=" + uploadID, headers: javaHeaders()})
	var parts struct {
		Parts []struct {
			ETag string `xml:"ETag"`
		} `xml:"Part"`
	}
	if err := xml.Unmarshal(body, &parts); err != nil || len(parts.Parts) != 1 {
		t.Fatalf("ListParts: %v %s", err, body)
	}
	return parts.Parts[0].ETag
}

func (h *harness) adminGet(t *testing.T, bucket, key string) []byte {
	t.Helper()
	out, err := h.s3.AdminClient().GetObject(h.ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		t.Fatalf("admin get %s: %v", key, err)
	}
	defer out.Body.Close()
	var b bytes.Buffer
	b.ReadFrom(out.Body)
	return b.Bytes()
}

func (h *harness) adminExists(t *testing.T, bucket, key string) bool {
	t.Helper()
	_, err := h.s3.AdminClient().HeadObject(h.ctx, &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	return err == nil
}

func (h *harness) adminPut(t *testing.T, bucket, key string, data []byte) {
	t.Helper()
	_, err := h.s3.AdminClient().PutObject(h.ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: bytes.NewReader(data)})
	if err != nil {
		t.Fatalf("admin put %s: %v", key, err)
	}
}
