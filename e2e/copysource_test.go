package e2e

import (
	"bytes"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/countersign/countersign/testsupport"
)

// TestCopySourceWhitespaceBypass is the regression test for a
// non-canonical x-amz-copy-source (SECURITY.md). The policy denies one
// exact key and a suffix. A copy source with a trailing space or tab used
// to be decided as another key ("wh/secret.parquet "), and signed; HTTP
// and SigV4 trim the value, so versitygw copied the denied object. Two
// header lines and a comma-joined line sign alike. countersign now refuses
// every such spelling before the policy is asked.
func TestCopySourceWhitespaceBypass(t *testing.T) {
	srv := startS3(t)
	srv.CreateBucket(t, "lake")
	h := &harness{s3: srv, ctx: t.Context()}
	h.adminPut(t, "lake", "wh/secret.parquet", []byte("secret"))
	h.adminPut(t, "lake", "wh/db.key", []byte("key material"))
	h.adminPut(t, "lake", "wh/open.parquet", []byte("open"))

	h.cs = startCountersignWithPolicy(t, srv.Port, `package countersign.authz

default allow := false

allow if {
	"engineers" in input.principal.groups
	input.resource.bucket == "lake"
	input.resource.key != "wh/secret.parquet"
	not endswith(input.resource.key, ".key")
}
`)

	P := styles(srv.Port)[0]
	copyTo := func(dst string, src []string) (int, *signResult, *icebergError) {
		status, res, ierr, _ := h.cs.sign(t, "", signRequest{Region: testRegion, URI: P.object("lake", dst), Method: "PUT",
			Headers: map[string][]string{"x-amz-copy-source": src, "User-Agent": {"e2e"}}})
		return status, res, ierr
	}

	// The canonical spellings are decided as what they name.
	if status, _, ierr := copyTo("wh/out0", []string{"lake/wh/secret.parquet"}); status != http.StatusForbidden {
		t.Fatalf("copy of the denied key: %d %+v", status, ierr)
	}
	status, res, ierr := copyTo("wh/out1", []string{"lake/wh/open.parquet"})
	if status != http.StatusOK {
		t.Fatalf("copy of an allowed key: %d %+v", status, ierr)
	}
	if code, out := srv.send(t, "PUT", res.URI, res.Headers, nil); code != http.StatusOK {
		t.Fatalf("allowed copy: versitygw %d\n%s", code, out)
	}

	for i, src := range [][]string{
		{"lake/wh/secret.parquet "},
		{"lake/wh/secret.parquet\t"},
		{" lake/wh/secret.parquet"},
		{"lake/wh/db.key "},
		{"lake/wh/open.parquet,lake/wh/secret.parquet"},
		{"lake/wh/open.parquet", "lake/wh/secret.parquet"},
	} {
		dst := fmt.Sprintf("wh/stolen%d", i)
		status, res, ierr := copyTo(dst, src)
		if status == http.StatusOK {
			code, out := srv.send(t, "PUT", res.URI, res.Headers, nil)
			if h.adminExists(t, "lake", dst) {
				t.Errorf("copy source %q signed and executed (versitygw %d): %s now holds %q\n%s", src, code, dst, h.adminGet(t, "lake", dst), out)
			} else {
				t.Errorf("copy source %q signed (versitygw %d)", src, code)
			}
			continue
		}
		if status != http.StatusBadRequest || !strings.Contains(ierr.Error.Message, "x-amz-copy-source") {
			t.Errorf("copy source %q: %d %+v, want 400 naming x-amz-copy-source", src, status, ierr)
		}
	}
}

// copySourceTargets are the decoded keys the generated copy sources name:
// the allowed and the denied object, keys whose decoded form holds what a
// server may read as syntax once decoded, and keys servers normalize.
var copySourceTargets = []string{
	"wh/copy/ok.parquet",
	"wh/copy/pii.parquet",
	"wh/copy/pii.parquet?versionId=",
	"wh/copy/pii.parquet?versionId=null",
	"wh/copy/pii.parquet?x",
	"wh/copy/pii.parquet#",
	"wh/copy/pii.parquet#x",
	"wh/copy/pii.parquet&versionId=null",
	"wh/copy/pii.parquet;x",
	"wh/copy/pii.parquet ",
	"wh/copy/ pii.parquet",
	"wh/copy/pii parquet",
	"wh/copy/pii+parquet",
	"wh/copy/pii%2Eparquet",
	"wh/copy/x/%2E%2E/pii.parquet",
	"wh/copy/x/../pii.parquet",
	"wh/copy//pii.parquet",
	`wh/copy\pii.parquet`,
	"wh/copy/pii.parquet\u0085",
	"wh/copy/€.parquet",
	"wh/copy/ok=v.parquet",
	"wh/copy/ok!$'()*,:@.parquet",
}

// copySourceSpellings generates x-amz-copy-source values: each target in
// several encodings (the SDKs' canonical one, lower-case hex, every byte
// escaped, raw, double-encoded, '/' escaped, '+' for space, Go's
// PathEscape and QueryEscape), with and without a leading '/', with
// version suffixes literal and encoded, bucket spellings and ARN forms.
func copySourceSpellings() []string {
	upper := func(k string) string {
		var b strings.Builder
		for i := 0; i < len(k); i++ {
			fmt.Fprintf(&b, "%%%02X", k[i])
		}
		return b.String()
	}
	encoders := []func(string) string{
		awsEscape,
		func(k string) string { return strings.ToLower(awsEscape(k)) },
		upper,
		func(k string) string { return k },
		func(k string) string { return awsEscape(awsEscape(k)) },
		func(k string) string { return strings.ReplaceAll(awsEscape(k), "/", "%2F") },
		func(k string) string { return strings.ReplaceAll(awsEscape(k), "%20", "+") },
		url.PathEscape,
		url.QueryEscape,
	}
	suffixes := []string{"", "?versionId=null", "?versionId=", "%3FversionId%3Dnull", "?versionid=null",
		"?versionId=null&versionId=x", "#x", "%23x", "?x-id=CopyObject", "?versionId=nu%6Cl"}
	seen := map[string]bool{}
	var out []string
	add := func(v string) {
		if !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	for _, lead := range []string{"", "/"} {
		for _, k := range copySourceTargets {
			for _, enc := range encoders {
				for _, sfx := range suffixes {
					add(lead + "lake/" + enc(k) + sfx)
				}
			}
		}
		for _, bucket := range []string{"la%6Be", "%6Cake", "LAKE", "lake%2Fwh", "lake.", "lake%20"} {
			add(lead + bucket + "/wh/copy/pii.parquet")
			add(lead + bucket + "/wh/copy/ok.parquet")
		}
		add(lead + "/lake/wh/copy/ok.parquet")
		add(lead + "lake//wh/copy/ok.parquet")
	}
	for _, arn := range []string{
		"arn:aws:s3:us-east-1:000000000000:accesspoint/ap/object/wh/copy/pii.parquet",
		"arn:aws:s3:::lake/wh/copy/pii.parquet",
		"arn%3Aaws%3As3%3A%3A%3Alake/wh/copy/pii.parquet",
	} {
		add(arn)
	}
	return out
}

// TestCopySourceDifferential signs generated copy-source spellings
// through the real countersign, with a policy that allows the bucket but
// one object (wh/copy/pii.parquet), and sends every signed one to
// versitygw and to SeaweedFS. For every spelling, either countersign
// refused it, or what the server copied to the destination is exactly the
// object countersign decided (its audit record's copy source); and a
// signed GET of each target reads the decided key's bytes. A copy source
// with an encoded '?' (wh/copy/pii.parquet%3FversionId%3D) used to be
// decided as another key and copied pii.parquet on versitygw, and one
// with '\' (as a GET's key too) read pii.parquet on SeaweedFS.
func TestCopySourceDifferential(t *testing.T) {
	for _, b := range backends {
		t.Run(string(b.name), func(t *testing.T) { copySourceDifferential(t, b) })
	}
}

func copySourceDifferential(t *testing.T, b backend) {
	var srv *s3Server
	if b.name == testsupport.Versitygw {
		srv = &s3Server{servers.StartS3Versioned(t)} // for the versioned bucket below
	} else {
		srv = b.start(t)
	}
	srv.CreateBucket(t, "lake")
	srv.CreateBucket(t, "vlake")
	h := &harness{s3: srv, ctx: t.Context()}
	// Every target is an object of its own, where the server takes the
	// key (some refuse or normalize odd ones): a copy of the decided key
	// then has bytes that say which object was read.
	// The allowed and the denied object are stored last: a server that
	// normalizes a key ('\' to '/', "//" to '/') stores an odd key as one
	// of them, and they must keep their own bytes.
	content := func(key string) []byte { return []byte("object " + key) }
	for _, k := range append(copySourceTargets[2:], copySourceTargets[:2]...) {
		h.s3.AdminClient().PutObject(h.ctx, &s3.PutObjectInput{Bucket: aws.String("lake"), Key: aws.String(k), Body: bytes.NewReader(content(k))})
	}
	if !bytes.Equal(h.adminGet(t, "lake", "wh/copy/pii.parquet"), content("wh/copy/pii.parquet")) || !h.adminExists(t, "lake", "wh/copy/ok.parquet") {
		t.Fatal("the allowed and the denied object were not stored")
	}

	policyDir := t.TempDir()
	policy := `package countersign.authz

default allow := false

allow if {
	"engineers" in input.principal.groups
	input.resource.bucket in {"lake", "vlake"}
	input.resource.key != "wh/copy/pii.parquet"
}
`
	if err := os.WriteFile(filepath.Join(policyDir, "authz.rego"), []byte(policy), 0o644); err != nil {
		t.Fatal(err)
	}
	ad := newAuditDir(t)
	shipped, _ := filepath.Abs("testdata/policy")
	cfg := baseConfigAudit(t, srv.Port, ad)
	if !strings.Contains(cfg, fmt.Sprintf("%q", shipped)) {
		t.Fatal("base configuration's policy path not found; update this test")
	}
	h.cs = startCountersign(t, strings.Replace(cfg, fmt.Sprintf("%q", shipped), fmt.Sprintf("%q", policyDir), 1), secretEnv()...)

	P := styles(srv.Port)[0]
	spellings := copySourceSpellings()
	var refused400, refused403, signedCopied, signedNotCopied int
	for i, src := range spellings {
		dst := fmt.Sprintf("wh/out/%d", i)
		status, res, ierr, hdr := h.cs.sign(t, "", signRequest{Region: testRegion, URI: P.object("lake", dst), Method: "PUT",
			Headers: map[string][]string{"x-amz-copy-source": {src}, "User-Agent": {"e2e"}}})
		switch status {
		case http.StatusBadRequest:
			refused400++
			continue
		case http.StatusForbidden:
			refused403++
			continue
		case http.StatusOK:
		default:
			t.Fatalf("copy source %q: sign answered %d %+v", src, status, ierr)
		}
		recs, err := readAudit(ad.Dir, hdr.Get("X-Request-Id"))
		if err != nil {
			t.Fatal(err)
		}
		d, err := decisionOf(recs)
		if err != nil || d.copyFrom == "" {
			t.Fatalf("copy source %q signed, its decision unreadable: %v %+v", src, err, recs)
		}
		decidedBucket, decidedKey, _ := strings.Cut(d.copyFrom, "/")
		code, out := srv.send(t, "PUT", res.URI, res.Headers, nil)
		if !h.adminExists(t, "lake", dst) {
			signedNotCopied++
			continue
		}
		signedCopied++
		got := h.adminGet(t, "lake", dst)
		if decidedBucket != "lake" || decidedKey == "wh/copy/pii.parquet" {
			t.Errorf("copy source %q: decided %s, which the policy denies, and %s copied it (%d)", src, d.copyFrom, b.name, code)
			continue
		}
		// The bytes stored under exactly the decided key: a server that
		// reads the key otherwise (normalizing it) copies another
		// object's, even where its own GET of the decided key agrees.
		if want := content(decidedKey); !bytes.Equal(got, want) {
			t.Errorf("copy source %q: decided %s (%q), %s copied %q (%d)\n%s", src, d.copyFrom, want, b.name, got, code, out)
		}
	}
	t.Logf("%s: %d copy-source spellings: %d refused 400, %d refused 403, %d signed and copied as decided, %d signed and refused by the server",
		b.name, len(spellings), refused400, refused403, signedCopied, signedNotCopied)
	if signedCopied == 0 || refused400 == 0 || refused403 == 0 {
		t.Fatalf("the differential tested nothing: every spelling had the same fate")
	}

	// The same targets as the request's own key: a signed GET of the
	// canonical path reads the bytes stored under exactly the decided
	// key, or fails. (SeaweedFS reads '\' as '/': wh/copy\pii.parquet
	// was decided as itself and read pii.parquet.)
	read := 0
	for _, k := range copySourceTargets {
		status, res, ierr, hdr := h.cs.sign(t, "", signRequest{Region: testRegion, URI: P.object("lake", awsEscape(k)), Method: "GET",
			Headers: map[string][]string{"User-Agent": {"e2e"}}})
		if status != http.StatusOK {
			if status != http.StatusBadRequest && status != http.StatusForbidden {
				t.Errorf("GET %q: sign answered %d %+v", k, status, ierr)
			}
			continue
		}
		recs, err := readAudit(ad.Dir, hdr.Get("X-Request-Id"))
		if err != nil {
			t.Fatal(err)
		}
		d, err := decisionOf(recs)
		if err != nil {
			t.Fatalf("GET %q signed, its decision unreadable: %v %+v", k, err, recs)
		}
		code, got := srv.send(t, "GET", res.URI, res.Headers, nil)
		if code != http.StatusOK {
			continue
		}
		read++
		if _, key, _ := strings.Cut(d.target, "/"); !bytes.Equal(got, content(key)) {
			t.Errorf("GET %q: decided %s, %s answered %q", k, d.target, b.name, got)
		}
	}
	t.Logf("%s: %d keys read as decided", b.name, read)

	// Versions: in a versioned bucket, the allowed object has two and the
	// denied one a version of its own; copy sources name them literally,
	// encoded into the key, with a second versionId smuggled in, in
	// another case. The destination holds the decided version's bytes.
	admin := h.s3.AdminClient()
	if _, err := admin.PutBucketVersioning(h.ctx, &s3.PutBucketVersioningInput{Bucket: aws.String("vlake"),
		VersioningConfiguration: &types.VersioningConfiguration{Status: types.BucketVersioningStatusEnabled}}); err != nil {
		t.Fatalf("enable versioning: %v", err)
	}
	type version struct{ key, id, data string }
	var versions []version
	latest := map[string]string{}
	for _, v := range []version{{"wh/copy/ok.parquet", "", "ok v1"}, {"wh/copy/ok.parquet", "", "ok v2"}, {"wh/copy/pii.parquet", "", "pii v1"}} {
		out, err := admin.PutObject(h.ctx, &s3.PutObjectInput{Bucket: aws.String("vlake"), Key: aws.String(v.key), Body: strings.NewReader(v.data)})
		if err != nil || aws.ToString(out.VersionId) == "" {
			t.Fatalf("put %s: %v (version %q)", v.data, err, aws.ToString(out.VersionId))
		}
		v.id = aws.ToString(out.VersionId)
		versions = append(versions, v)
		latest[v.key] = v.data
	}
	dataOf := func(key, id string) (string, bool) {
		if id == "" {
			d, ok := latest[key]
			return d, ok
		}
		for _, v := range versions {
			if v.key == key && v.id == id {
				return v.data, true
			}
		}
		return "", false
	}
	var vspellings []string
	for _, lead := range []string{"", "/"} {
		for _, k := range []string{"wh/copy/ok.parquet", "wh/copy/pii.parquet"} {
			for _, v := range versions {
				other := versions[(len(versions)-1)%len(versions)].id
				for _, form := range []string{
					k + "?versionId=" + v.id,
					awsEscape(k+"?versionId=") + v.id,
					awsEscape(k+"?versionId="+v.id) + "?versionId=" + other,
					k + "?versionId=" + v.id + "%26versionId%3D" + other,
					k + "?versionId=" + v.id + "&versionId=" + other,
					k + "?versionId=" + strings.ToLower(v.id),
					k + "?versionId=" + awsEscape(v.id) + "%20",
				} {
					vspellings = append(vspellings, lead+"vlake/"+form)
				}
			}
		}
	}
	vsigned, vcopied := 0, 0
	for i, src := range vspellings {
		dst := fmt.Sprintf("wh/vout/%d", i)
		status, res, ierr, hdr := h.cs.sign(t, "", signRequest{Region: testRegion, URI: P.object("lake", dst), Method: "PUT",
			Headers: map[string][]string{"x-amz-copy-source": {src}, "User-Agent": {"e2e"}}})
		if status != http.StatusOK {
			if status != http.StatusBadRequest && status != http.StatusForbidden {
				t.Fatalf("copy source %q: sign answered %d %+v", src, status, ierr)
			}
			continue
		}
		vsigned++
		recs, err := readAudit(ad.Dir, hdr.Get("X-Request-Id"))
		if err != nil {
			t.Fatal(err)
		}
		var from *auditRecord
		for i := range recs {
			if recs[i].Role == "copy-source" && recs[i].Decision == "allow" {
				from = &recs[i]
			}
		}
		if from == nil {
			t.Fatalf("copy source %q signed without an allowed copy-source record: %+v", src, recs)
		}
		code, out := srv.send(t, "PUT", res.URI, res.Headers, nil)
		if !h.adminExists(t, "lake", dst) {
			continue
		}
		vcopied++
		got := string(h.adminGet(t, "lake", dst))
		want, ok := dataOf(from.Key, from.VersionID)
		if from.Bucket != "vlake" || !ok || got != want {
			t.Errorf("copy source %q: decided %s/%s version %q (%q), %s copied %q (%d)\n%s", src, from.Bucket, from.Key, from.VersionID, want, b.name, got, code, out)
		}
	}
	t.Logf("%s: %d versioned copy-source spellings: %d signed, %d copied as decided", b.name, len(vspellings), vsigned, vcopied)
	if vcopied == 0 {
		t.Fatalf("no versioned copy was made: the versioned part tested nothing")
	}
}
