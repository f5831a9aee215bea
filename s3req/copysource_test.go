package s3req

import (
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/countersign/countersign/remotesign"
)

// copySourceReaders model how S3 servers read x-amz-copy-source, from
// their sources: each returns the bucket, key and version it would copy.
// An accepted copy source must be read as the decided object by all.
var copySourceReaders = []struct {
	name string
	read func(v string) (bucket, key, version string)
}{
	// versitygw (backend.ParseCopySource): decode the whole value, then
	// cut at "?versionId=".
	{"versitygw", func(v string) (string, string, string) {
		v = strings.TrimPrefix(v, "/")
		d, err := url.QueryUnescape(v)
		if err != nil {
			return "", "", ""
		}
		src, version, _ := strings.Cut(d, "?versionId=")
		b, k, _ := strings.Cut(src, "/")
		return b, k, version
	}},
	// SeaweedFS (pathToBucketObjectAndVersion): split at the raw '?' when
	// what follows parses as a query with versionId, PathUnescape the
	// rest, then normalize the key ('\' to '/', runs of '/', leading '/').
	{"seaweedfs", func(v string) (string, string, string) {
		decoded, err := url.PathUnescape(v)
		if err != nil {
			decoded = v
		}
		path, version := decoded, ""
		if i := strings.IndexByte(v, '?'); i >= 0 {
			if q, err := url.ParseQuery(v[i+1:]); err == nil && q.Has("versionId") {
				version = q.Get("versionId")
				path = v[:i]
				if u, err := url.PathUnescape(path); err == nil {
					path = u
				}
			}
		}
		b, k, _ := strings.Cut(strings.TrimPrefix(path, "/"), "/")
		k = strings.ReplaceAll(k, `\`, "/")
		for strings.Contains(k, "//") {
			k = strings.ReplaceAll(k, "//", "/")
		}
		return b, strings.TrimPrefix(k, "/"), version
	}},
	// Earlier SeaweedFS and its forks: QueryUnescape the whole value, then
	// split the decoded string at '?'.
	{"seaweedfs-queryunescape", func(v string) (string, string, string) {
		d, err := url.QueryUnescape(v)
		if err != nil {
			d = v
		}
		path, query, _ := strings.Cut(d, "?")
		q, _ := url.ParseQuery(query)
		b, k, _ := strings.Cut(strings.TrimPrefix(path, "/"), "/")
		return b, k, q.Get("versionId")
	}},
	// MinIO (CopyObjectHandler): QueryUnescape, then url.Parse the result
	// (which decodes the path a second time and cuts '?' and '#').
	{"minio", func(v string) (string, string, string) {
		d, err := url.QueryUnescape(v)
		if err != nil {
			d = v
		}
		version := ""
		if u, err := url.Parse(d); err == nil {
			version = u.Query().Get("versionId")
			d = u.Path
		}
		b, k, _ := strings.Cut(strings.TrimPrefix(d, "/"), "/")
		return b, k, version
	}},
	// Ceph RGW (parse_copy_location): split at the raw '?' first, then
	// decode the name ('+' stays '+') and parse the parameters.
	{"ceph", func(v string) (string, string, string) {
		name, params, _ := strings.Cut(v, "?")
		d, err := url.PathUnescape(strings.TrimPrefix(name, "/"))
		if err != nil {
			return "", "", ""
		}
		q, _ := url.ParseQuery(params)
		b, k, _ := strings.Cut(d, "/")
		return b, k, q.Get("versionId")
	}},
}

// readersAgree checks that every server model reads copy source v as
// the decided bucket, key and version.
func readersAgree(v, bucket, key, version string) error {
	for _, r := range copySourceReaders {
		if b, k, ver := r.read(v); b != bucket || k != key || ver != version {
			return fmt.Errorf("copy source %q was decided as %s/%s (version %q), %s reads %s/%s (version %q)",
				v, bucket, key, version, r.name, b, k, ver)
		}
	}
	return nil
}

// copySourceSpellings are the spellings the classifier must refuse or
// decide as exactly what every server reads.
func copySourceSpellings() []string {
	var out []string
	keys := []string{
		"wh/copy/pii.parquet%3FversionId%3D", // the reported one: versitygw copies pii.parquet
		"wh/copy/pii.parquet%3FversionId%3Dv1",
		"wh/copy/pii.parquet%3Fx",
		"wh/copy/pii.parquet%23frag",
		"wh/copy/pii.parquet%23",
		"wh/copy/ok%253F.parquet", // a literal "%3F": decoded twice, '?'
		"wh/copy/%252E%252E/pii.parquet",
		"wh/copy/ok%2525.parquet",
		"wh/copy/pii%252Eparquet",
		"wh/copy/pii.parquet%20",
		"wh/copy/pii.parquet%09",
		"wh/copy/%20pii.parquet",
		"wh/copy/pii%2Bparquet",
		"wh/copy/pii.parquet%26versionId%3Dv1",
		"wh/copy/pii.parquet%3Bx",
		"wh/copy%5Cpii.parquet",
		"wh/copy/pii.parquet%C2%85",
		"wh/copy/pii.parquet%E2%80%A8",
		"wh/copy/ok.parquet",
		"wh/copy/ok%3Dv.parquet",
		"wh/copy/%21%24%27%28%29%2A%2C%3A%3D%40.parquet",
		"wh/copy/%E2%82%AC.parquet",
		"wh/copy/%3Cx%3E",
		"wh/copy/%7Cx%7D",
	}
	for _, k := range keys {
		for _, lead := range []string{"", "/"} {
			for _, ver := range []string{"", "?versionId=v1", "?versionId=v%2B1", "?versionId=v1/%3D", "?versionId=v%26x%3Dy", "?versionId=v%23x", "?versionId=v%3Fx", "?versionId=v%2520"} {
				out = append(out, lead+"lake/"+k+ver)
			}
		}
	}
	return append(out,
		"lake%2Fwh/copy/pii.parquet",
		"lake/wh/copy/pii.parquet?versionId",
		"lake/wh/copy/pii.parquet?versionid=v1",
		"lake/wh/copy/pii.parquet?versionId=v1&versionId=v2",
		"lake/wh/copy/ok.parquet?versionId=v1#x",
		"lake/wh/copy/ok.parquet#?versionId=v1",
		"lake/wh/copy/ok.parquet%3F?versionId=v1",
		"//lake/wh/copy/ok.parquet",
		"arn:aws:s3:us-east-1:123456789012:accesspoint/ap/object/wh/copy/ok.parquet",
	)
}

// TestCopySourceDecodedSyntax is the regression test for a copy source
// whose decoded key holds syntax: "/lake/wh/copy/pii.parquet%3FversionId%3D"
// was decided as the key "wh/copy/pii.parquet?versionId=", while
// versitygw decodes the whole value before cutting at "?versionId=" and
// copied pii.parquet. Every spelling is refused with a 400 naming the copy
// source, or decided as what each modelled server reads.
func TestCopySourceDecodedSyntax(t *testing.T) {
	c := testClassifier(t)
	r, err := c.Classify(req("PUT", "http://localhost:7070/lake/wh/out", hdrs("x-amz-copy-source", "/lake/wh/copy/pii.parquet%3FversionId%3D")))
	ce, ok := err.(*Error)
	if !ok || ce.Status != 400 || !strings.Contains(ce.Msg, `x-amz-copy-source "/lake/wh/copy/pii.parquet%3FversionId%3D"`) || !strings.Contains(ce.Msg, `'?'`) {
		t.Fatalf("the reported copy source: %+v, %v; want 400 naming it and its '?'", r, err)
	}
	accepted := 0
	for _, v := range copySourceSpellings() {
		r, err := c.Classify(req("PUT", "http://localhost:7070/lake/wh/out", hdrs("x-amz-copy-source", v)))
		if err != nil {
			if ce, ok := err.(*Error); !ok || ce.Status != 400 || !strings.Contains(ce.Msg, "copy") {
				t.Errorf("%q: %v, want 400 naming the copy source", v, err)
			}
			continue
		}
		accepted++
		src := r.Targets[1]
		if err := readersAgree(v, src.Bucket, src.Key, src.VersionID); err != nil {
			t.Error(err)
		}
	}
	// The canonical spellings of plain keys are still accepted: the
	// refusals are of syntax, not of copies.
	if accepted < 8 {
		t.Fatalf("only %d spellings accepted", accepted)
	}
	for _, v := range []string{"lake/wh/copy/ok.parquet", "/lake/wh/copy/ok%3Dv.parquet?versionId=v1/%3D", "lake/wh/copy/%E2%82%AC.parquet"} {
		if _, err := c.Classify(req("PUT", "http://localhost:7070/lake/wh/out", hdrs("x-amz-copy-source", v))); err != nil {
			t.Errorf("%q refused: %v", v, err)
		}
	}
}

// TestC1ControlsRefused is the regression test for keys with C1 control
// characters (U+0080 to U+009F, NEL among them): they were signed, though
// control characters are refused. They are refused like C0 wherever a key
// or prefix is read; U+00A0, just past C1, is not a control.
func TestC1ControlsRefused(t *testing.T) {
	c := testClassifier(t)
	for _, ctl := range []string{"%C2%80", "%C2%85", "%C2%9F"} {
		for _, tc := range []struct {
			name string
			in   func() error
		}{
			{"object key", func() error {
				_, err := c.Classify(req("GET", "http://localhost:7070/lake/wh/a"+ctl+"b", nil))
				return err
			}},
			{"copy source key", func() error {
				_, err := c.Classify(req("PUT", "http://localhost:7070/lake/wh/out", hdrs("x-amz-copy-source", "lake/wh/a"+ctl+"b")))
				return err
			}},
			{"list prefix", func() error {
				_, err := c.Classify(req("GET", "http://localhost:7070/lake?list-type=2&prefix=wh%2Fa"+ctl, nil))
				return err
			}},
			{"DeleteObjects key", func() error {
				k, _ := url.PathUnescape("wh/a" + ctl + "b")
				body := deleteBody(k)
				in := req("POST", "http://localhost:7070/lake?delete", nil)
				in.Body, in.HasBody = body, true
				_, err := c.Classify(in)
				return err
			}},
		} {
			err := tc.in()
			ce, ok := err.(*Error)
			if !ok || ce.Status != 400 || !strings.Contains(ce.Msg, "control character (U+00") {
				t.Errorf("%s with %s: %v, want 400 naming the control character", tc.name, ctl, err)
			}
		}
	}
	if _, err := c.Classify(req("GET", "http://localhost:7070/lake/wh/a%C2%A0b", nil)); err != nil {
		t.Errorf("U+00A0 refused: %v", err)
	}
}

// TestDeleteBodyCharRefs is the regression test for an XML character
// reference to what is not an XML character: encoding/xml decodes
// "&#xD800;" to U+FFFD, so the key decided was not the body's. Such a
// body is refused as malformed XML; references to XML characters are
// decoded as before.
func TestDeleteBodyCharRefs(t *testing.T) {
	for _, ref := range []string{"&#xD800;", "&#xDFFF;", "&#55296;", "&#x110000;", "&#1114112;", "&#0;", "&#x0;", "&#xFFFE;", "&#xFFFF;", "&#x1;",
		"&#xFFFFFFFFF;", "&#;", "&#x;", "&#X41;", "&#-65;", "&#+65;", "&#x4 1;", "&#65"} {
		body := "<Delete><Object><Key>wh/a" + ref + "b</Key></Object></Delete>"
		keys, err := ParseDeleteBody([]byte(body), 10)
		ce, ok := err.(*Error)
		if !ok || ce.Status != 400 || !strings.Contains(ce.Msg, "not valid XML") {
			t.Errorf("%s: %q, %v; want 400 malformed XML", ref, keys, err)
		}
	}
	for ref, want := range map[string]string{"&#x41;": "A", "&#65;": "A", "&#x20AC;": "€", "&#x1F600;": "😀", "&#xFFFD;": "\uFFFD", "&#xE000;": "\uE000", "&#x10FFFF;": "\U0010FFFF"} {
		keys, err := ParseDeleteBody([]byte("<Delete><Object><Key>wh/"+ref+"</Key></Object></Delete>"), 10)
		if err != nil || len(keys) != 1 || keys[0].Key != "wh/"+want {
			t.Errorf("%s: %q, %v; want key %q", ref, keys, err, "wh/"+want)
		}
	}
	// In the classifier too: a surrogate reference is a malformed body,
	// not a decision about "wh/\uFFFD".
	c := testClassifier(t)
	in := req("POST", "http://localhost:7070/lake?delete", nil)
	in.Body, in.HasBody = "<Delete><Object><Key>wh/&#xD800;</Key></Object></Delete>", true
	if _, err := c.Classify(in); err == nil || !strings.Contains(err.Error(), "U+D800") {
		t.Fatalf("surrogate reference in a DeleteObjects key: %v", err)
	}
}

// FuzzParseCopySource: whatever x-amz-copy-source the classifier accepts
// is read as the decided bucket, key and version by every modelled
// server, and re-encodes to exactly the value sent.
func FuzzParseCopySource(f *testing.F) {
	for _, v := range copySourceSpellings() {
		f.Add(v)
	}
	c := testClassifier(f)
	f.Fuzz(func(t *testing.T, v string) {
		h := hdrs("x-amz-copy-source", v)
		if v == "" {
			return // an absent header: not a copy
		}
		ref, ok, err := c.parseCopySource(h)
		if err != nil {
			if ce, isErr := err.(*Error); !isErr || ce.Status != 400 || ce.Msg == "" {
				t.Fatalf("%q: error %T %v", v, err, err)
			}
			return
		}
		if !ok {
			t.Fatalf("%q: a present header read as no copy source", v)
		}
		canon := ref.bucket + "/" + string(appendAWSEscapedPath(nil, ref.key))
		if ref.versionID != "" {
			canon += "?versionId=" + string(appendAWSEscapedPath(nil, ref.versionID))
		}
		if strings.TrimPrefix(v, "/") != canon {
			t.Fatalf("%q accepted, but its canonical spelling is %q", v, canon)
		}
		if err := readersAgree(v, ref.bucket, ref.key, ref.versionID); err != nil {
			t.Fatal(err)
		}
	})
}

// TestBackslashIsUnsafe is the regression test for a key with '\':
// SeaweedFS reads it as '/', so GET wh\pii.parquet, decided as that key
// and allowed by a policy denying wh/pii.parquet, read the denied object.
// It is refused wherever a key or prefix is read, unless unsafe keys are
// allowed; CheckPrefix (vending's) refuses it too.
func TestBackslashIsUnsafe(t *testing.T) {
	c := testClassifier(t)
	del := req("POST", "http://localhost:7070/lake?delete", nil)
	del.Body, del.HasBody = deleteBody(`wh\pii.parquet`), true
	for name, in := range map[string]func() error{
		"object key": func() error {
			_, err := c.Classify(req("GET", "http://localhost:7070/lake/wh%5Cpii.parquet", nil))
			return err
		},
		"list prefix": func() error {
			_, err := c.Classify(req("GET", "http://localhost:7070/lake?list-type=2&prefix=wh%5C", nil))
			return err
		},
		"DeleteObjects key": func() error { _, err := c.Classify(del); return err },
		"vended prefix":     func() error { return CheckPrefix(`wh\db/`, "location") },
	} {
		err := in()
		if ce, ok := err.(*Error); !ok || ce.Status != 400 || !strings.Contains(ce.Msg, `contains '\'`) {
			t.Errorf("%s with '\\': %v, want 400 naming it", name, err)
		}
	}
	unsafe, err := New(Options{AllowUnsafeKeys: true, Endpoints: testClassifier(t).opts.Endpoints})
	if err != nil {
		t.Fatal(err)
	}
	if r, err := unsafe.Classify(req("GET", "http://localhost:7070/lake/wh%5Cpii.parquet", nil)); err != nil || r.Key != `wh\pii.parquet` {
		t.Fatalf("keys.allow_unsafe: %+v %v", r, err)
	}
	for _, p := range []string{"wh/db/", "wh/db/t", "wh/€/"} {
		if err := CheckPrefix(p, "location"); err != nil {
			t.Errorf("CheckPrefix(%q): %v", p, err)
		}
	}
	for _, p := range []string{"wh//db/", "/wh/", "wh/../db/", "wh/./", "wh/a\u0085/", "wh/a\x00/"} {
		if err := CheckPrefix(p, "location"); err == nil {
			t.Errorf("CheckPrefix(%q) accepted", p)
		}
	}
}

// TestRenameSourceRefused: RenameObject's x-amz-rename-source names an
// object that the server reads into the destination and deletes
// (SeaweedFS moved a denied object into an allowed key with one signed
// PUT ?renameObject). The classifier decided only the destination; every
// spelling of the header is now refused, on any operation.
func TestRenameSourceRefused(t *testing.T) {
	c := testClassifier(t)
	for _, tc := range []struct{ method, uri, name string }{
		{"PUT", "http://localhost:7070/lake/wh/ok.parquet?renameObject", "x-amz-rename-source"},
		{"PUT", "http://localhost:7070/lake/wh/ok.parquet?renameObject", "X-Amz-Rename-Source"},
		{"PUT", "http://localhost:7070/lake/wh/ok.parquet?renameObject", "x-amz-rename-source-if-match"},
		{"PUT", "http://localhost:7070/lake/wh/ok.parquet", "x-amz-rename-source"},
		{"GET", "http://localhost:7070/lake/wh/ok.parquet", "x-amz-rename-source"},
	} {
		_, err := c.Classify(req(tc.method, tc.uri, hdrs(tc.name, "/lake/wh/pii.parquet")))
		if err == nil || !strings.Contains(err.Error(), "x-amz-rename-source") {
			t.Errorf("%s %s with %s: %v, want a refusal naming x-amz-rename-source", tc.method, tc.uri, tc.name, err)
		}
	}
	// The negative: a rename destination without the header classifies
	// (the server refuses it; SeaweedFS refuses an unsigned x-amz-* header).
	if r, err := c.Classify(req("PUT", "http://localhost:7070/lake/wh/ok.parquet?renameObject", nil)); err != nil || r.Operation != "RenameObject" || len(r.Targets) != 1 {
		t.Errorf("RenameObject without a source: %+v %v", r, err)
	}
}

// TestSeaweedFSFoldersRefused: SeaweedFS keeps an object's versions as the
// files of "<key>.versions/" and served GET wh/p/pii.parquet.versions/v_<id>
// as a GetObject of that version of wh/p/pii.parquet: a key the policy
// never decided, read without the version action. Keys, copy sources,
// DeleteObjects keys and list prefixes naming that folder, or the
// bucket's ".uploads" (SeaweedFS) or ".sgwtmp" (versitygw, whose GET
// .sgwtmp/multipart/<hash>/<upload>/1 answered another key's in-progress
// part) folders, are refused; keys that only resemble them pass.
func TestSeaweedFSFoldersRefused(t *testing.T) {
	c := testClassifier(t)
	const base = "http://localhost:7070/lake/"
	refused := []*remotesign.Request{
		req("GET", base+"wh/p/pii.parquet.versions/v_0123", nil),
		req("DELETE", base+"wh/p/pii.parquet.versions/v_0123", nil),
		req("DELETE", base+"wh/p/pii.parquet.versions", nil),
		req("GET", base+".uploads/abc/0001_x.part", nil),
		req("GET", base+".sgwtmp/multipart/abc/def/1", nil),
		req("PUT", base+".sgwtmp/multipart/abc/def/1", nil),
		req("PUT", base+"wh/out", hdrs("x-amz-copy-source", "lake/wh/p/pii.parquet.versions/v_0123")),
		req("GET", base+"?list-type=2&prefix=wh%2Fp%2Fpii.parquet.versions%2F", nil),
		req("GET", base+"?list-type=2&prefix=.uploads%2F", nil),
		req("GET", base+"?list-type=2&prefix=.sgwtmp", nil),
	}
	del := `<Delete><Object><Key>wh/p/pii.parquet.versions/v_0123</Key></Object></Delete>`
	d := req("POST", base+"?delete", nil)
	d.Body, d.HasBody = del, true
	refused = append(refused, d)
	for _, in := range refused {
		if _, err := c.Classify(in); err == nil || !strings.Contains(err.Error(), "folder") {
			t.Errorf("%s %s %v: %v, want a refusal naming the server's folder", in.Method, in.URI, in.Headers, err)
		}
	}
	for _, uri := range []string{
		base + "wh/p/versions/a", base + "wh/p/a.versionsx/b", base + "wh/p/x.versions.parquet",
		base + "wh/.uploadsx/a", base + "wh/.uploads/a", base + "wh/.sgwtmp/a", base + ".sgwtmpx/a",
		base + "?list-type=2&prefix=wh%2Fp%2Fpii.parquet.versions",
	} {
		if _, err := c.Classify(req("GET", uri, nil)); err != nil {
			t.Errorf("GET %s: %v", uri, err)
		}
	}
}
