package e2e

import (
	"bytes"
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// TestRenameSourceRefused: RenameObject (PUT /key?renameObject) moves the
// object its x-amz-rename-source header names to the key, and
// countersign decided only the key. On SeaweedFS one signed request
// moved an object the policy denies into a key the caller may write:
// read and deleted, with no decision on it. The header is now refused
// on every request; without it nothing is renamed (SeaweedFS refuses the
// header added unsigned).
func TestRenameSourceRefused(t *testing.T) {
	for _, b := range backends {
		t.Run(string(b.name), func(t *testing.T) {
			srv := b.start(t)
			srv.CreateBucket(t, "lake")
			h := &harness{s3: srv, ctx: t.Context()}
			h.adminPut(t, "lake", "wh/r/pii.parquet", []byte("pii"))
			h.cs = startCountersignWithPolicy(t, srv.Port, `package countersign.authz

default allow := false

allow if {
	"engineers" in input.principal.groups
	input.resource.bucket == "lake"
	input.resource.key != "wh/r/pii.parquet"
}
`)
			P := styles(srv.Port)[0]

			for i, hdr := range []map[string][]string{
				{"x-amz-rename-source": {"/lake/wh/r/pii.parquet"}},
				{"x-amz-rename-source": {"lake/wh/r/pii.parquet"}},
				{"X-Amz-Rename-Source": {"/lake/wh/r/pii.parquet"}},
			} {
				dst := fmt.Sprintf("wh/r/out%d", i)
				hdr["User-Agent"] = []string{"e2e"}
				status, res, ierr, _ := h.cs.sign(t, "", signRequest{Region: testRegion, URI: P.object("lake", dst) + "?renameObject", Method: "PUT", Headers: hdr})
				if status == http.StatusOK {
					code, out := srv.send(t, "PUT", res.URI, res.Headers, nil)
					t.Errorf("rename from the denied object signed (%s answered %d %s); destination exists: %v, source exists: %v",
						b.name, code, out, h.adminExists(t, "lake", dst), h.adminExists(t, "lake", "wh/r/pii.parquet"))
					continue
				}
				if status != http.StatusBadRequest || !strings.Contains(ierr.Error.Message, "rename-source") {
					t.Errorf("rename source %v: %d %+v, want 400 naming x-amz-rename-source", hdr, status, ierr)
				}
			}
			if !bytes.Equal(h.adminGet(t, "lake", "wh/r/pii.parquet"), []byte("pii")) {
				t.Fatal("the denied object moved")
			}
			// The negative: the same destination is writable, so the
			// refusal is the source's.
			status, res, ierr, _ := h.cs.sign(t, "", signRequest{Region: testRegion, URI: P.object("lake", "wh/r/out9"), Method: "PUT",
				Headers: map[string][]string{"User-Agent": {"e2e"}, "Content-Length": {"2"}}})
			if status != http.StatusOK {
				t.Fatalf("PUT of the destination: %d %+v", status, ierr)
			}
			if code, out := srv.send(t, "PUT", res.URI, res.Headers, []byte("ok")); code != http.StatusOK {
				t.Fatalf("PUT of the destination: %s %d %s", b.name, code, out)
			}
		})
	}
}
