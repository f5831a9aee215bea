package s3req

import (
	"strings"
	"testing"
)

// TestVersionedTargets: a request that names an object version is decided
// as the version action IAM names, with the version on the target, for
// each form a version can take: the query, each <Object> of a
// DeleteObjects body, and the copy source.
func TestVersionedTargets(t *testing.T) {
	c := testClassifier(t)

	r, err := c.Classify(req("DELETE", "http://localhost:7070/lake/wh/t/a.parquet?versionId=3HL4kqtJlcpXroDTDmJ%2Bgq", nil))
	if err != nil {
		t.Fatal(err)
	}
	if tg := r.Targets[0]; tg.Action != "s3:DeleteObjectVersion" || tg.Access != AccessDeleteVersion || tg.VersionID != "3HL4kqtJlcpXroDTDmJ+gq" {
		t.Fatalf("DELETE ?versionId target = %+v", tg)
	}
	r, err = c.Classify(req("DELETE", "http://localhost:7070/lake/wh/t/a.parquet", nil))
	if err != nil {
		t.Fatal(err)
	}
	if tg := r.Targets[0]; tg.Action != "s3:DeleteObject" || tg.Access != AccessDelete || tg.VersionID != "" {
		t.Fatalf("DELETE without a version target = %+v", tg)
	}

	// DeleteObjects: each key is decided by its own <VersionId>.
	body := `<Delete><Object><Key>wh/t/a.parquet</Key></Object>` +
		`<Object><Key>wh/t/b.parquet</Key><VersionId>v2</VersionId></Object></Delete>`
	in := req("POST", "http://localhost:7070/lake?delete", nil)
	in.Body, in.HasBody = body, true
	r, err = c.Classify(in)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Targets) != 2 {
		t.Fatalf("targets = %+v", r.Targets)
	}
	if tg := r.Targets[0]; tg.Action != "s3:DeleteObject" || tg.Access != AccessDelete || tg.VersionID != "" {
		t.Fatalf("unversioned key = %+v", tg)
	}
	if tg := r.Targets[1]; tg.Action != "s3:DeleteObjectVersion" || tg.Access != AccessDeleteVersion || tg.VersionID != "v2" || tg.Operation != "DeleteObjects" {
		t.Fatalf("versioned key = %+v", tg)
	}

	// A copy from a version reads that version.
	for _, tc := range []struct{ src, action, version string }{
		{"/lake/src.parquet?versionId=v7", "s3:GetObjectVersion", "v7"},
		{"/lake/src.parquet", "s3:GetObject", ""},
	} {
		for _, uri := range []string{"http://localhost:7070/lake/dst.parquet", "http://localhost:7070/lake/dst.parquet?partNumber=1&uploadId=u"} {
			r, err := c.Classify(req("PUT", uri, hdrs("x-amz-copy-source", tc.src)))
			if err != nil {
				t.Fatal(err)
			}
			if src := r.Targets[1]; src.Action != tc.action || src.VersionID != tc.version || src.Access != AccessRead {
				t.Fatalf("%s from %s: copy source = %+v", uri, tc.src, src)
			}
			if dst := r.Targets[0]; dst.Action != "s3:PutObject" || dst.VersionID != "" {
				t.Fatalf("%s from %s: destination = %+v", uri, tc.src, dst)
			}
		}
	}
}

// TestEmptyVersionIDRefused: "?versionId=" names no version; a server that
// read it as "no version" would do other than what was decided.
func TestEmptyVersionIDRefused(t *testing.T) {
	c := testClassifier(t)
	for _, uri := range []string{
		"http://localhost:7070/lake/k?versionId=",
		"http://localhost:7070/lake/k?versionId",
		"http://localhost:7070/lake/k?tagging&versionId=",
	} {
		for _, m := range []string{"GET", "DELETE"} {
			_, err := c.Classify(req(m, uri, nil))
			if err == nil || !strings.Contains(err.Error(), "versionId") {
				t.Errorf("%s %s: err = %v, want a refusal naming versionId", m, uri, err)
			}
		}
	}
}

// TestQuerySemicolonRefused: ';' separates parameters for some parsers and
// not for others; it is refused before any operation is decided.
func TestQuerySemicolonRefused(t *testing.T) {
	c := testClassifier(t)
	for _, uri := range []string{"http://localhost:7070/lake/k?x-id=GetObject;acl", "http://localhost:7070/lake/k?versionId=v1;x", "http://localhost:7070/lake?list-type=2;prefix=a"} {
		if _, err := c.Classify(req("GET", uri, nil)); err == nil || !strings.Contains(err.Error(), "';'") {
			t.Errorf("%s: err = %v, want a refusal naming ';'", uri, err)
		}
	}
	if _, err := c.Classify(req("GET", "http://localhost:7070/lake/k?versionId=v%3B1", nil)); err != nil {
		t.Errorf("an encoded ';' is a character of the value: %v", err)
	}
}
