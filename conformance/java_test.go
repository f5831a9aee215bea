package conformance

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/countersign/countersign/conformance/remotesigning"
	"github.com/countersign/countersign/testsupport"
)

// javaClient is an aws-sdk-go-v2 S3 client set up the way Iceberg's
// S3FileIO sets up its Java SDK client for remote signing: anonymous
// credentials, the signer replaced by the remote-signing client.
func javaClient(srv *s3Server, signer *remotesigning.Client, pathStyle bool, apiOptions ...func(*middleware.Stack) error) *s3.Client {
	return s3.New(s3.Options{
		Region:       testRegion,
		BaseEndpoint: aws.String(srv.endpoint()),
		UsePathStyle: pathStyle,
		Credentials:  aws.AnonymousCredentials{},
		HTTPClient:   srv.httpClient(),
		APIOptions:   append([]func(*middleware.Stack) error{signer.AddToStack}, apiOptions...),
	})
}

// withoutPayloadHash makes the Go SDK's requests look like the Java SDK's at
// signing time: no x-amz-content-sha256 (the Java SDK computes it inside
// the signer that the remote signer replaces), so countersign must add one.
func withoutPayloadHash(stack *middleware.Stack) error {
	return stack.Finalize.Insert(middleware.FinalizeMiddlewareFunc("DropPayloadHash",
		func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
			if req, ok := in.Request.(*smithyhttp.Request); ok {
				req.Header.Del("X-Amz-Content-Sha256")
			}
			return next.HandleFinalize(ctx, in)
		}), "Signing", middleware.Before)
}

// newJavaSigner is a remote-signing client configured from the catalog
// properties a Spark job would carry.
func newJavaSigner(t testing.TB, cs *signerProc, token string, rec *remotesigning.Recorder, cache *remotesigning.Cache, extra map[string]string) *remotesigning.Client {
	t.Helper()
	props := map[string]string{
		remotesigning.PropRemoteSigningEnabled: "true",
		remotesigning.PropS3SignerURI:          cs.url,
		remotesigning.PropToken:                token,
		"header.X-Iceberg-Access-Delegation":   "remote-signing",
	}
	for k, v := range extra {
		props[k] = v
	}
	cfg, err := remotesigning.FromProperties(props)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Region = testRegion
	cfg.Cache = cache
	if cfg.Cache == nil {
		cfg.Cache = remotesigning.NewCache()
	}
	if rec != nil {
		cfg.OnExchange = rec.Record
	}
	c, err := remotesigning.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// parquetFile is a Parquet-shaped object: "PAR1", column data, a footer,
// the footer's length (4 bytes, little-endian) and "PAR1".
type parquetFile struct {
	data   []byte
	footer []byte
}

func newParquetFile(size int) parquetFile {
	footer := []byte(`{"schema":"id:long,region:string","row_groups":[{"columns":2}]}`)
	body := make([]byte, size-len(footer)-12)
	rand.Read(body)
	var b bytes.Buffer
	b.WriteString("PAR1")
	b.Write(body)
	b.Write(footer)
	binary.Write(&b, binary.LittleEndian, uint32(len(footer)))
	b.WriteString("PAR1")
	return parquetFile{data: b.Bytes(), footer: footer}
}

// parquetWorkload writes and reads objects under prefix the way a Parquet
// writer and reader do, and deletes them the way S3FileIO does (bulk
// DeleteObjects), checking every answer.
func parquetWorkload(t *testing.T, ctx context.Context, c *s3.Client, srv *s3Server, bucket, prefix string) {
	t.Helper()
	small := newParquetFile(256 << 10)
	smallKey := prefix + "data/region=eu/00000-0-small file.parquet"
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(smallKey),
		Body: bytes.NewReader(small.data), ContentType: aws.String("application/octet-stream")}); err != nil {
		t.Fatalf("PutObject: %v", err)
	}

	// Multipart: 5 MiB and a short last part; the upload of an abandoned
	// file is aborted.
	large := newParquetFile(6<<20 + 12345)
	largeKey := prefix + "data/region=us/00001-0-large.parquet"
	created, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String(bucket), Key: aws.String(largeKey)})
	if err != nil {
		t.Fatalf("CreateMultipartUpload: %v", err)
	}
	var parts []s3types.CompletedPart
	for i, chunk := range [][]byte{large.data[:5<<20], large.data[5<<20:]} {
		n := int32(i + 1)
		out, err := c.UploadPart(ctx, &s3.UploadPartInput{Bucket: aws.String(bucket), Key: aws.String(largeKey),
			UploadId: created.UploadId, PartNumber: aws.Int32(n), Body: bytes.NewReader(chunk)})
		if err != nil {
			t.Fatalf("UploadPart %d: %v", n, err)
		}
		parts = append(parts, s3types.CompletedPart{ETag: out.ETag, PartNumber: aws.Int32(n)})
	}
	if _, err := c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: aws.String(bucket), Key: aws.String(largeKey),
		UploadId: created.UploadId, MultipartUpload: &s3types.CompletedMultipartUpload{Parts: parts}}); err != nil {
		t.Fatalf("CompleteMultipartUpload: %v", err)
	}
	aborted, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String(bucket), Key: aws.String(prefix + "data/aborted.parquet")})
	if err != nil {
		t.Fatalf("CreateMultipartUpload: %v", err)
	}
	if _, err := c.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: aws.String(bucket), Key: aws.String(prefix + "data/aborted.parquet"), UploadId: aborted.UploadId}); err != nil {
		t.Fatalf("AbortMultipartUpload: %v", err)
	}

	// Read like a Parquet reader: HEAD for the length, the 8-byte tail,
	// the footer, then column chunks (one crossing the part boundary).
	for _, f := range []struct {
		key string
		pf  parquetFile
	}{{smallKey, small}, {largeKey, large}} {
		head, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String(f.key)})
		if err != nil {
			t.Fatalf("HeadObject %s: %v", f.key, err)
		}
		size := aws.ToInt64(head.ContentLength)
		if size != int64(len(f.pf.data)) {
			t.Fatalf("HeadObject %s: length %d, want %d", f.key, size, len(f.pf.data))
		}
		tail := getRange(t, ctx, c, bucket, f.key, "bytes=-8")
		if string(tail[4:]) != "PAR1" {
			t.Fatalf("footer read of %s: %q", f.key, tail)
		}
		flen := int64(binary.LittleEndian.Uint32(tail[:4]))
		footer := getRange(t, ctx, c, bucket, f.key, fmt.Sprintf("bytes=%d-%d", size-8-flen, size-9))
		if !bytes.Equal(footer, f.pf.footer) {
			t.Fatalf("footer of %s: %q", f.key, footer)
		}
		for _, r := range [][2]int64{{4, 4 + 65535}, {size / 2, size/2 + 100000}, {(5 << 20) - 1000, (5 << 20) + 1000}} {
			if r[1] >= size-8 {
				continue
			}
			got := getRange(t, ctx, c, bucket, f.key, fmt.Sprintf("bytes=%d-%d", r[0], r[1]))
			if !bytes.Equal(got, f.pf.data[r[0]:r[1]+1]) {
				t.Fatalf("ranged read %v of %s differs", r, f.key)
			}
		}
	}

	list, err := c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String(prefix + "data/")})
	if err != nil {
		t.Fatalf("ListObjectsV2: %v", err)
	}
	var keys []string
	for _, o := range list.Contents {
		keys = append(keys, aws.ToString(o.Key))
	}
	slices.Sort(keys)
	if want := []string{smallKey, largeKey}; !slices.Equal(keys, want) {
		t.Fatalf("ListObjectsV2: %v, want %v", keys, want)
	}

	out, err := c.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: aws.String(bucket), Delete: &s3types.Delete{
		Objects: []s3types.ObjectIdentifier{{Key: aws.String(smallKey)}, {Key: aws.String(largeKey)}}, Quiet: aws.Bool(true)}})
	if err != nil {
		t.Fatalf("DeleteObjects: %v", err)
	}
	if len(out.Errors) > 0 {
		t.Fatalf("DeleteObjects errors: %+v", out.Errors)
	}
	if left := srv.adminList(t, bucket, prefix); len(left) != 0 {
		t.Fatalf("objects left after DeleteObjects: %v", left)
	}
}

func getRange(t *testing.T, ctx context.Context, c *s3.Client, bucket, key, rng string) []byte {
	t.Helper()
	out, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Range: aws.String(rng)})
	if err != nil {
		t.Fatalf("GetObject %s %s: %v", key, rng, err)
	}
	defer out.Body.Close()
	data, err := io.ReadAll(out.Body)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// requireJavaShapedRequests checks the request descriptions themselves:
// what the Java client sends and what it never sends.
func requireJavaShapedRequests(t *testing.T, exs []remotesigning.Exchange) {
	t.Helper()
	if len(exs) == 0 {
		t.Fatal("nothing was signed")
	}
	for _, ex := range exs {
		r := ex.Request
		for _, never := range []string{"Host", "Authorization", "X-Amz-Security-Token", "X-Amz-Date"} {
			if headerValue(r.Headers, never) != "" {
				t.Fatalf("%s %s: the client sent %s", r.Method, r.URI, never)
			}
		}
		if headerValue(r.Headers, "Amz-Sdk-Invocation-Id") == "" || headerValue(r.Headers, "User-Agent") == "" {
			t.Fatalf("%s %s: the SDK's headers are missing: %v", r.Method, r.URI, r.Headers)
		}
		isDelete := s3Op(r) == "DeleteObjects"
		if isDelete != (r.Body != nil) {
			t.Fatalf("%s %s: body sent %v, want only for DeleteObjects", r.Method, r.URI, r.Body != nil)
		}
		if isDelete && !strings.Contains(*r.Body, "<Key>") {
			t.Fatalf("DeleteObjects body: %q", *r.Body)
		}
		if r.Region != testRegion || r.Provider != "s3" {
			t.Fatalf("%s %s: region %q provider %q", r.Method, r.URI, r.Region, r.Provider)
		}
	}
}

// TestJavaClientWorkload drives a Parquet-shaped workload through the Java
// client's semantics in both addressing styles: every request is signed by
// countersign and verified by versitygw.
func TestJavaClientWorkload(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	srv := startS3(t)
	srv.CreateBucket(t, "lake")
	cs := startCountersign(t, baseConfig(t, srv.Port, ""), secretEnv()...)
	for _, tc := range []struct {
		name          string
		pathStyle     bool
		noPayloadHash bool
	}{{"path-style", true, false}, {"virtual-hosted", false, false}, {"java-sdk-headers", true, true}} {
		name, pathStyle := tc.name, tc.pathStyle
		t.Run(name, func(t *testing.T) {
			rec := &remotesigning.Recorder{}
			var opts []func(*middleware.Stack) error
			if tc.noPayloadHash {
				opts = append(opts, withoutPayloadHash)
			}
			c := javaClient(srv, newJavaSigner(t, cs, defaultToken(), rec, nil, nil), pathStyle, opts...)
			parquetWorkload(t, ctx, c, srv, "lake", "wh/java/"+name+"/")
			exs := rec.Exchanges()
			requireJavaShapedRequests(t, exs)
			requireCleanExchanges(t, exs)
			ops := opCounts(exs)
			t.Logf("signed: %s", opSummary(ops))
			for _, op := range []string{"PutObject", "CreateMultipartUpload", "UploadPart", "CompleteMultipartUpload", "AbortMultipartUpload",
				"HeadObject", "GetObject", "ListObjectsV2", "DeleteObjects"} {
				if ops[op] == 0 {
					t.Fatalf("%s was not signed: %s", op, opSummary(ops))
				}
			}
			for _, ex := range exs {
				if host := strings.SplitN(strings.TrimPrefix(ex.Request.URI, "http://"), "/", 2)[0]; pathStyle == strings.HasPrefix(host, "lake.") {
					t.Fatalf("%s addressing sent %s", name, ex.Request.URI)
				}
				// A client that sends no payload hash gets UNSIGNED-PAYLOAD,
				// except for DeleteObjects, whose body countersign binds by
				// its SHA-256 (its CRC32 or Content-MD5 would not bind it).
				want := "UNSIGNED-PAYLOAD"
				if s3Op(ex.Request) == "DeleteObjects" {
					sum := sha256.Sum256([]byte(*ex.Request.Body))
					want = hex.EncodeToString(sum[:])
				}
				if sha := headerValue(ex.Result.Headers, "x-amz-content-sha256"); tc.noPayloadHash && sha != want {
					t.Fatalf("%s %s: client sent no x-amz-content-sha256, countersign returned %q, want %q", ex.Request.Method, ex.Request.URI, sha, want)
				}
				if ex.CacheControl != "no-cache" || ex.FromCache {
					t.Fatalf("%s %s: Cache-Control %q (cached %v), want no-cache by default", ex.Request.Method, ex.Request.URI, ex.CacheControl, ex.FromCache)
				}
			}
		})
	}
}

// TestJavaClientSessionCredentials: countersign signs with temporary
// credentials (a versitygw IAM role session); the anonymous client never
// has a token, so countersign adds X-Amz-Security-Token and versitygw
// serves the workload as that session.
func TestJavaClientSessionCredentials(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	gw := startS3WithIAM(t)
	gw.CreateBucket(t, "lake")
	role := gw.CreateRole(t, "lake-data", []string{"s3:GetObject", "s3:PutObject", "s3:DeleteObject", "s3:ListBucket",
		"s3:AbortMultipartUpload", "s3:ListMultipartUploadParts"}, "arn:aws:s3:::lake", "arn:aws:s3:::lake/*")
	sess, err := gw.MintSession(role, "conformance-java", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := gw.CallerARN(t, sess), testsupport.AssumedRoleARN("lake-data", "conformance-java"); got != want {
		t.Fatalf("versitygw STS says the session is %s, want %s", got, want)
	}
	cs := startCountersign(t, baseConfig(t, gw.Port, ""),
		"COUNTERSIGN_ACCESS_KEY_ID="+sess.AccessKeyID,
		"COUNTERSIGN_SECRET_ACCESS_KEY="+sess.SecretAccessKey,
		"COUNTERSIGN_SESSION_TOKEN="+sess.SessionToken)
	rec := &remotesigning.Recorder{}
	c := javaClient(gw.s3Server, newJavaSigner(t, cs, defaultToken(), rec, nil, nil), true)
	parquetWorkload(t, ctx, c, gw.s3Server, "lake", "wh/java-session/")
	exs := rec.Exchanges()
	requireJavaShapedRequests(t, exs)
	requireCleanExchanges(t, exs)
	for _, ex := range exs {
		if got := headerValue(ex.Result.Headers, "X-Amz-Security-Token"); got != sess.SessionToken {
			t.Fatalf("%s %s: X-Amz-Security-Token %q, want the session token", ex.Request.Method, ex.Request.URI, got)
		}
		if auth := headerValue(ex.Result.Headers, "Authorization"); !strings.Contains(auth, "Credential="+sess.AccessKeyID+"/") || !strings.Contains(auth, "x-amz-security-token") {
			t.Fatalf("not signed with the session (key and token): %s", auth)
		}
	}
}

// TestJavaClientWrongSecret: the client surfaces versitygw's
// SignatureDoesNotMatch when countersign holds the wrong secret.
func TestJavaClientWrongSecret(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	srv := startS3(t)
	srv.CreateBucket(t, "lake")
	cs := startCountersign(t, baseConfig(t, srv.Port, ""), wrongSecretEnv()...)
	rec := &remotesigning.Recorder{}
	c := javaClient(srv, newJavaSigner(t, cs, defaultToken(), rec, nil, nil), true)
	_, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("lake"), Key: aws.String("wh/x.parquet"), Body: bytes.NewReader([]byte("PAR1"))})
	if err == nil || !strings.Contains(err.Error(), "SignatureDoesNotMatch") {
		t.Fatalf("PutObject signed with a wrong secret: %v, want SignatureDoesNotMatch", err)
	}
	if len(rec.Exchanges()) == 0 || srv.adminExists(t, "lake", "wh/x.parquet") {
		t.Fatal("countersign was not asked, or the object was written")
	}
}

// TestJavaClientCacheControl: by default every read is signed again
// (Cache-Control: no-cache). With cacheable_reads countersign answers reads
// with "Cache-Control: private" and the Java client reuses the signature for
// 30 s, keyed by (method, region, uri) only: in a JVM shared by principals,
// another principal's read of the same object is then served without asking
// countersign (the documented caveat, apache/iceberg#17801), while its read
// of an object nobody read is refused.
func TestJavaClientCacheControl(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	srv := startS3(t)
	srv.CreateBucket(t, "lake")
	srv.adminPut(t, "lake", "wh/t/data/a.parquet", []byte("PAR1 a PAR1"))
	srv.adminPut(t, "lake", "wh/t/data/b.parquet", []byte("PAR1 b PAR1"))
	outsider := testIdP.Mint("mallory", nil, nil)

	read := func(c *s3.Client, key, rng string) ([]byte, error) {
		out, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("lake"), Key: aws.String(key), Range: aws.String(rng)})
		if err != nil {
			return nil, err
		}
		defer out.Body.Close()
		return io.ReadAll(out.Body)
	}

	t.Run("no-cache by default", func(t *testing.T) {
		cs := startCountersign(t, baseConfig(t, srv.Port, ""), secretEnv()...)
		jvm := remotesigning.NewCache()
		rec := &remotesigning.Recorder{}
		c := javaClient(srv, newJavaSigner(t, cs, defaultToken(), rec, jvm, nil), true)
		for i := 0; i < 2; i++ {
			if _, err := read(c, "wh/t/data/a.parquet", "bytes=0-3"); err != nil {
				t.Fatal(err)
			}
		}
		for _, ex := range rec.Exchanges() {
			if ex.FromCache || ex.CacheControl != "no-cache" {
				t.Fatalf("read answered with Cache-Control %q, cached %v", ex.CacheControl, ex.FromCache)
			}
		}
		if jvm.Len() != 0 {
			t.Fatal("a no-cache answer was cached")
		}
		_, err := read(javaClient(srv, newJavaSigner(t, cs, outsider, nil, jvm, nil), true), "wh/t/data/a.parquet", "bytes=0-3")
		if err == nil || !strings.Contains(err.Error(), "Forbidden") {
			t.Fatalf("outsider's read: %v, want Forbidden", err)
		}
	})

	t.Run("private with cacheable_reads", func(t *testing.T) {
		cs := startCountersign(t, baseConfig(t, srv.Port, "cacheable_reads: true\n"), secretEnv()...)
		jvm := remotesigning.NewCache()
		rec := &remotesigning.Recorder{}
		c := javaClient(srv, newJavaSigner(t, cs, defaultToken(), rec, jvm, nil), true)
		// Different ranges of one object: Range is not signed, so the
		// cached signature serves them all.
		for _, rng := range []string{"bytes=0-3", "bytes=5-5", "bytes=-4"} {
			got, err := read(c, "wh/t/data/a.parquet", rng)
			if err != nil {
				t.Fatalf("read %s: %v", rng, err)
			}
			if want := map[string]string{"bytes=0-3": "PAR1", "bytes=5-5": "a", "bytes=-4": "PAR1"}[rng]; string(got) != want {
				t.Fatalf("read %s = %q, want %q", rng, got, want)
			}
		}
		exs := rec.Exchanges()
		if len(exs) != 3 || exs[0].FromCache || exs[0].CacheControl != "private" || !exs[1].FromCache || !exs[2].FromCache {
			t.Fatalf("want one signing with Cache-Control: private and two cache hits, got %+v", exs)
		}
		// Writes are never cacheable.
		if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("lake"), Key: aws.String("wh/t/data/c.parquet"), Body: bytes.NewReader([]byte("PAR1"))}); err != nil {
			t.Fatal(err)
		}
		if last := rec.Exchanges()[3]; last.CacheControl != "no-cache" || last.FromCache {
			t.Fatalf("PutObject answered with Cache-Control %q", last.CacheControl)
		}

		// Another principal in the same JVM: the cached signature is
		// reused without asking countersign.
		orec := &remotesigning.Recorder{}
		oc := javaClient(srv, newJavaSigner(t, cs, outsider, orec, jvm, nil), true)
		if got, err := read(oc, "wh/t/data/a.parquet", "bytes=0-3"); err != nil || string(got) != "PAR1" {
			t.Fatalf("outsider's read of a cached object: %q %v", got, err)
		}
		if oexs := orec.Exchanges(); len(oexs) != 1 || !oexs[0].FromCache {
			t.Fatalf("outsider's read was not served from the shared cache: %+v", oexs)
		}
		_, err := read(oc, "wh/t/data/b.parquet", "bytes=0-3")
		var se *remotesigning.Error
		if !errors.As(err, &se) || se.Status != http.StatusForbidden {
			t.Fatalf("outsider's read of an uncached object: %v, want 403 from countersign", err)
		}
	})
}

// faultProxy sits in front of countersign and answers the first sign
// requests with scripted failures before passing requests through.
type faultProxy struct {
	url string

	mu     sync.Mutex
	script []fault
	seen   int
}

type fault struct {
	status     int
	retryAfter string
}

func startFaultProxy(t *testing.T, target string) *faultProxy {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	p := &faultProxy{}
	rp := httputil.NewSingleHostReverseProxy(u)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		p.seen++
		var f *fault
		if len(p.script) > 0 {
			f = &p.script[0]
			p.script = p.script[1:]
		}
		p.mu.Unlock()
		if f == nil {
			rp.ServeHTTP(w, r)
			return
		}
		io.Copy(io.Discard, r.Body)
		if f.retryAfter != "" {
			w.Header().Set("Retry-After", f.retryAfter)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(f.status)
		fmt.Fprintf(w, `{"error":{"message":"injected %d","type":"InjectedException","code":%d}}`, f.status, f.status)
	}))
	t.Cleanup(srv.Close)
	p.url = srv.URL
	return p
}

func (p *faultProxy) load(fs ...fault) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.script, p.seen = fs, 0
}

func (p *faultProxy) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.seen
}

// TestJavaClientRetries: like Iceberg's HTTPClient, the client retries a
// sign request answered 429 (with or without Retry-After) or 503 with
// Retry-After, up to rest.client.max-retries, and gives up at once on a 503
// without Retry-After and on 4xx answers; the request it finally sends is
// signed by countersign and served by versitygw.
func TestJavaClientRetries(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	srv := startS3(t)
	srv.CreateBucket(t, "lake")
	srv.adminPut(t, "lake", "wh/t/f.parquet", []byte("PAR1"))
	cs := startCountersign(t, baseConfig(t, srv.Port, ""), secretEnv()...)
	proxy := startFaultProxy(t, cs.url)
	viaProxy := &signerProc{url: proxy.url, log: cs.log}
	rec := &remotesigning.Recorder{}
	c := javaClient(srv, newJavaSigner(t, viaProxy, defaultToken(), rec, nil, map[string]string{remotesigning.PropMaxRetries: "2"}), true)
	head := func() error {
		_, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("lake"), Key: aws.String("wh/t/f.parquet")})
		return err
	}

	proxy.load(fault{429, "1"}, fault{503, "1"})
	if err := head(); err != nil {
		t.Fatalf("after 429 and 503 with Retry-After: %v", err)
	}
	if n := proxy.count(); n != 3 {
		t.Fatalf("%d sign requests, want 3 (two retried)", n)
	}

	proxy.load(fault{429, ""})
	start := time.Now()
	if err := head(); err != nil {
		t.Fatalf("after 429 without Retry-After: %v", err)
	}
	if d := time.Since(start); d < time.Second {
		t.Fatalf("retried after %v, want the 1 s backoff", d)
	}

	proxy.load(fault{503, ""})
	err := head()
	var se *remotesigning.Error
	if !errors.As(err, &se) || se.Status != http.StatusServiceUnavailable || proxy.count() != 1 {
		t.Fatalf("503 without Retry-After: %v after %d requests, want no retry", err, proxy.count())
	}

	proxy.load(fault{429, "1"}, fault{429, "1"}, fault{429, "1"}, fault{429, "1"})
	err = head()
	if !errors.As(err, &se) || se.Status != http.StatusTooManyRequests || proxy.count() != 3 {
		t.Fatalf("persistent 429: %v after %d requests, want giving up after 1 + 2 retries", err, proxy.count())
	}

	// countersign's own 401 is not retried either.
	proxy.load()
	bad := javaClient(srv, newJavaSigner(t, viaProxy, "not-a-jwt", nil, nil, nil), true)
	_, err = bad.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("lake"), Key: aws.String("wh/t/f.parquet")})
	if !errors.As(err, &se) || se.Status != http.StatusUnauthorized || proxy.count() != 1 {
		t.Fatalf("bad token: %v after %d requests, want one 401", err, proxy.count())
	}
	if !strings.Contains(err.Error(), "Not authorized") {
		t.Fatalf("401 not worded as Iceberg does: %v", err)
	}
}

// signRequests records the HTTP requests a signer client sends to its
// signer: path and headers.
type signRequests struct {
	mu   sync.Mutex
	reqs []*http.Request
}

func (s *signRequests) RoundTrip(r *http.Request) (*http.Response, error) {
	s.mu.Lock()
	s.reqs = append(s.reqs, r.Clone(r.Context()))
	s.mu.Unlock()
	return http.DefaultTransport.RoundTrip(r)
}

// TestJavaMainSignerShapes: the request shapes of Iceberg main's signer
// (after 1.11, read from its source: S3V4RestSignerClient, RESTSessionCatalog,
// RemoteSignRequestParser, RemoteSigningConfigParser), against a
// standalone countersign. The REST catalog client gives each table's
// FileIO its sign route (rest.remote-signing.endpoint, the catalog uri
// plus ResourcePaths.remoteSign) and the loadTable answer's
// remote-signing-config (rest.remote-signing.config); s3.signer.* is no
// longer read, so the one here must be ignored.
func TestJavaMainSignerShapes(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	srv := startS3(t)
	srv.CreateBucket(t, "lake")
	config, ad := baseConfigWithAudit(t, srv.Port, "")
	cs := startCountersign(t, config, secretEnv()...)
	rec := &remotesigning.Recorder{}
	sent := &signRequests{}
	cfg, err := remotesigning.FromPropertiesMain(map[string]string{
		remotesigning.PropRemoteSigningEnabled:  "true",
		remotesigning.PropURI:                   cs.url, // the catalog uri: here countersign itself (standalone)
		remotesigning.PropToken:                 defaultToken(),
		"header.X-Iceberg-Access-Delegation":    "remote-signing",
		remotesigning.PropS3SignerURI:           "http://127.0.0.1:1", // removed in main: ignored
		remotesigning.PropRemoteSigningEndpoint: "v1/prod/namespaces/db%1Fsub/tables/events/sign",
		remotesigning.PropRemoteSigningConfig:   `{"headers":{"X-Sign-Tenant":["a","b"]},"properties":{"table-uuid":"9c12d441"}}`,
	})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Region, cfg.Cache, cfg.OnExchange = testRegion, remotesigning.NewCache(), rec.Record
	cfg.HTTPClient = &http.Client{Transport: sent, Timeout: 30 * time.Second}
	signer, err := remotesigning.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	parquetWorkload(t, ctx, javaClient(srv, signer, true), srv, "lake", "wh/java/main/")
	exs := rec.Exchanges()
	requireJavaShapedRequests(t, exs)
	requireCleanExchanges(t, exs)
	// Body: the remote signing config's properties, provider s3.
	for _, ex := range exs {
		if ex.Request.Properties["table-uuid"] != "9c12d441" || len(ex.Request.Properties) != 1 || ex.Request.Provider != "s3" {
			t.Fatalf("%s %s: properties %v provider %q", ex.Request.Method, ex.Request.URI, ex.Request.Properties, ex.Request.Provider)
		}
	}
	// Route and headers.
	sent.mu.Lock()
	defer sent.mu.Unlock()
	if len(sent.reqs) == 0 {
		t.Fatal("no sign request sent")
	}
	for _, r := range sent.reqs {
		if r.Method != "POST" || r.URL.Host != strings.TrimPrefix(cs.url, "http://") || r.URL.EscapedPath() != "/v1/prod/namespaces/db%1Fsub/tables/events/sign" {
			t.Fatalf("sign request to %s %s, want the table's route on the catalog uri", r.Method, r.URL)
		}
		if r.Header.Get("Authorization") != "Bearer "+defaultToken() || r.Header.Get("X-Sign-Tenant") != "a, b" ||
			r.Header.Get("X-Iceberg-Access-Delegation") != "remote-signing" || r.Header.Get("Content-Type") != "application/json" {
			t.Fatalf("sign request headers %v", r.Header)
		}
	}
	// countersign decided each on the table's route, the namespace split
	// at %1F.
	cs.stop()
	out, err := exec.Command(servers.CountersignBin, "audit", "query", "-dir", ad.Dir, "-format", "jsonl").Output()
	if err != nil {
		t.Fatalf("audit query: %v", err)
	}
	var lines []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if strings.Contains(line, `"kind":"access"`) {
			lines = append(lines, line)
		}
	}
	if len(lines) < len(sent.reqs) {
		t.Fatalf("%d access records for %d sign requests", len(lines), len(sent.reqs))
	}
	for _, line := range lines {
		if !strings.Contains(line, `"table":{"prefix":"prod","namespace":["db","sub"],"name":"events"}`) {
			t.Fatalf("not decided on the table's route: %s", line)
		}
	}
}
