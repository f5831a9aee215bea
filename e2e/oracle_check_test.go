package e2e

import (
	"net/http"
	"strings"
	"testing"
)

// TestOracleCheckCatches holds the oracle's judge to what it must catch,
// without a server: for each decided operation, an observation that does
// exactly that passes, and one that touches another key, reads another
// object, or stores other content fails with a message naming it.
func TestOracleCheckCatches(t *testing.T) {
	obj := func(content, tags string) objectState {
		return objectState{etag: `"` + content + `"`, size: int64(len(content)), tags: tags, content: []byte(content)}
	}
	base := func() *snapshot {
		return &snapshot{objects: map[string]objectState{
			"lake/ns/a": obj("A", "owner=a"), "lake/ns/b": obj("B", "owner=b"), "lake/ns/src": obj("S", ""),
			"private/secret": obj("SECRET", ""),
		}, uploads: map[string]string{"lake/ns/mp?uploadId=u1": "1:e1", "lake/ns/b?uploadId=u2": ""}}
	}
	with := func(f func(s *snapshot)) *snapshot { s := base(); f(s); return s }
	prefix := "ns/sub/"
	etag := func(v string) http.Header { h := http.Header{}; h.Set("ETag", v); return h }
	cases := []struct {
		name   string
		d      decision
		after  *snapshot
		sent   wireReq
		resp   wireResp
		wantOK bool
		msg    string
	}{
		{"GetObject of the decided object", decision{operation: "GetObject", target: "lake/ns/a"}, base(), wireReq{}, wireResp{header: etag(`"A"`), body: []byte("A")}, true, ""},
		{"GetObject answered by another object", decision{operation: "GetObject", target: "lake/ns/a"}, base(), wireReq{}, wireResp{header: etag(`"B"`), body: []byte("B")}, false, "another object was read"},
		{"GetObject that also deleted", decision{operation: "GetObject", target: "lake/ns/a"}, with(func(s *snapshot) { delete(s.objects, "lake/ns/b") }), wireReq{}, wireResp{header: etag(`"A"`), body: []byte("A")}, false, "changed object lake/ns/b"},
		{"PutObject of the body sent", decision{operation: "PutObject", target: "lake/ns/new"}, with(func(s *snapshot) { s.objects["lake/ns/new"] = obj("N", "") }), wireReq{body: []byte("N")}, wireResp{}, true, ""},
		{"PutObject turned into a copy", decision{operation: "PutObject", target: "lake/ns/new"}, with(func(s *snapshot) { s.objects["lake/ns/new"] = obj("SECRET", "") }), wireReq{body: []byte("N")}, wireResp{}, false, "not the body sent"},
		{"PutObject with undecided tags", decision{operation: "PutObject", target: "lake/ns/new"}, with(func(s *snapshot) { s.objects["lake/ns/new"] = obj("N", "x=1") }), wireReq{body: []byte("N")}, wireResp{}, false, "s3:PutObjectTagging"},
		{"PutObject to another key", decision{operation: "PutObject", target: "lake/ns/new"}, with(func(s *snapshot) { s.objects["lake/ns/other"] = obj("N", "") }), wireReq{body: []byte("N")}, wireResp{}, false, "changed object lake/ns/other"},
		{"CopyObject from the decided source", decision{operation: "CopyObject", target: "lake/ns/c", copyFrom: "lake/ns/src"}, with(func(s *snapshot) { s.objects["lake/ns/c"] = obj("S", "") }), wireReq{}, wireResp{}, true, ""},
		{"CopyObject from another source", decision{operation: "CopyObject", target: "lake/ns/c", copyFrom: "lake/ns/src"}, with(func(s *snapshot) { s.objects["lake/ns/c"] = obj("SECRET", "") }), wireReq{}, wireResp{}, false, "not the decided source"},
		{"DeleteObjects of decided keys", decision{operation: "DeleteObjects", bucket: "lake", deletes: []string{"lake/ns/a", "lake/ns/b"}}, with(func(s *snapshot) { delete(s.objects, "lake/ns/a") }), wireReq{}, wireResp{}, true, ""},
		{"DeleteObjects of another key", decision{operation: "DeleteObjects", bucket: "lake", deletes: []string{"lake/ns/a"}}, with(func(s *snapshot) { delete(s.objects, "lake/ns/src") }), wireReq{}, wireResp{}, false, "changed object lake/ns/src"},
		{"DeleteObject that left the object", decision{operation: "DeleteObject", target: "lake/ns/a"}, base(), wireReq{}, wireResp{}, false, "still there"},
		{"PutObjectTagging that changed content", decision{operation: "PutObjectTagging", target: "lake/ns/a"}, with(func(s *snapshot) { s.objects["lake/ns/a"] = obj("Z", "t=1") }), wireReq{}, wireResp{}, false, "changed lake/ns/a's content"},
		{"GetObjectTagging of another object", decision{operation: "GetObjectTagging", target: "lake/ns/a"}, base(), wireReq{}, wireResp{body: []byte(`<Tagging><TagSet><Tag><Key>owner</Key><Value>b</Value></Tag></TagSet></Tagging>`)}, false, "returned tags"},
		{"ListObjectsV2 of the decided prefix", decision{operation: "ListObjectsV2", target: "lake", bucket: "lake", prefix: &prefix}, base(), wireReq{}, wireResp{body: []byte(`<ListBucketResult><Name>lake</Name><Prefix>ns/sub/</Prefix><Contents><Key>ns/sub/x</Key></Contents></ListBucketResult>`)}, true, ""},
		{"ListObjectsV2 of another prefix", decision{operation: "ListObjectsV2", target: "lake", bucket: "lake", prefix: &prefix}, base(), wireReq{}, wireResp{body: []byte(`<ListBucketResult><Name>lake</Name><Prefix></Prefix><Contents><Key>ns/a</Key></Contents></ListBucketResult>`)}, false, "prefix"},
		{"UploadPart to the decided upload", decision{operation: "UploadPart", target: "lake/ns/mp"}, with(func(s *snapshot) { s.uploads["lake/ns/mp?uploadId=u1"] = "1:e2" }), wireReq{}, wireResp{}, true, ""},
		{"UploadPart to another key's upload", decision{operation: "UploadPart", target: "lake/ns/mp"}, with(func(s *snapshot) { s.uploads["lake/ns/b?uploadId=u2"] = "1:e2" }), wireReq{}, wireResp{}, false, "lake/ns/b?uploadId=u2"},
		{"AbortMultipartUpload of another upload", decision{operation: "AbortMultipartUpload", target: "lake/ns/mp"}, with(func(s *snapshot) { delete(s.uploads, "lake/ns/b?uploadId=u2") }), wireReq{}, wireResp{}, false, "lake/ns/b?uploadId=u2"},
		{"an operation the oracle does not know", decision{operation: "RestoreObject", target: "lake/ns/a"}, base(), wireReq{}, wireResp{}, false, "does not know"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := check(tc.d, base(), tc.after, tc.sent, tc.resp)
			if tc.wantOK {
				if p != nil {
					t.Fatalf("flagged an observation that does what was decided: %v", p)
				}
				return
			}
			if p == nil || !strings.Contains(strings.Join(p, "\n"), tc.msg) {
				t.Fatalf("problems %q, want one containing %q", p, tc.msg)
			}
		})
	}
}

// TestForgeCRC: the forged body has the original's length and CRC, for
// each CRC S3 accepts, and only letters of '@'..'O' where the '@' were.
func TestForgeCRC(t *testing.T) {
	orig := deleteXML("wh/t/obj.parquet", "wh/t/other.parquet", "wh/t/sub/a.parquet")
	alt := deleteXML("wh/t/keep.parquet", "wh/t/"+strings.Repeat("@", 24))
	for _, c := range crcHeaders {
		forged, ok := forgeCRC(alt, orig, c)
		if !ok {
			t.Fatalf("%s: no forgery", c.header)
		}
		if len(forged) != len(orig) || c.sum(forged) != c.sum(orig) || string(forged) == string(orig) {
			t.Fatalf("%s: forged %q (len %d, sum %x) for %d bytes with sum %x", c.header, forged, len(forged), c.sum(forged), len(orig), c.sum(orig))
		}
		if !strings.HasPrefix(string(forged), string(alt[:strings.IndexByte(string(alt), '@')])) {
			t.Fatalf("%s: forgery changed the body outside the placeholders: %q", c.header, forged)
		}
	}
}
