package e2e

import (
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"sort"
	"strings"
	"testing"
)

// TestAuditRecordsThroughHTTP: a DeleteObjects of three keys, one denied,
// leaves three records with their own decisions, and `countersign audit
// query` for the principal returns exactly the objects it touched.
func TestAuditRecordsThroughHTTP(t *testing.T) {
	srv := startS3(t)
	srv.CreateBucket(t, "lake")
	ad := newAuditDir(t)
	cs := startCountersign(t, baseConfigAudit(t, srv.Port, ad), secretEnv()...)
	auditor := cs.as(testIdP.Mint("auditee", []string{"engineers"}, nil))

	body := deleteXML("wh/t/a.parquet", "denied/b.parquet", "wh/t/c.parquet")
	bs := string(body)
	status, res, _, _ := auditor.sign(t, "", signRequest{Region: testRegion, URI: styles(srv.Port)[0].bucket("lake") + "?delete", Method: "POST",
		Headers: javaHeaders("Content-MD5", md5Base64(body)), Body: &bs})
	if status != http.StatusForbidden || res != nil {
		t.Fatalf("DeleteObjects with a denied key: %d", status)
	}
	if status, _, _, _ := auditor.sign(t, "", signRequest{Region: testRegion, URI: styles(srv.Port)[0].object("lake", "wh/t/d.parquet"), Method: "GET", Headers: javaHeaders()}); status != http.StatusOK {
		t.Fatalf("GET: %d", status)
	}

	out, err := exec.Command(servers.CountersignBin, "audit", "query", "-dir", ad.Dir, "-principal", "auditee", "-format", "jsonl").Output()
	if err != nil {
		t.Fatalf("audit query: %v", err)
	}
	var got []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var rec struct {
			Key, Decision, Role, Operation string
			Status                         int
			Principal                      struct {
				ID        string `json:"id"`
				TokenHMAC string `json:"token_hmac"`
			} `json:"principal"`
		}
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("%v: %s", err, line)
		}
		if rec.Principal.ID != "auditee" || len(rec.Principal.TokenHMAC) != 64 {
			t.Fatalf("record principal: %+v", rec.Principal)
		}
		got = append(got, rec.Operation+" "+rec.Key+" "+rec.Decision+" "+itoa(rec.Status))
	}
	sort.Strings(got)
	want := []string{
		"DeleteObjects denied/b.parquet deny 403",
		"DeleteObjects wh/t/a.parquet allow 403",
		"DeleteObjects wh/t/c.parquet allow 403",
		"GetObject wh/t/d.parquet allow 200",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("records for auditee:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// The token itself is nowhere in the log.
	segs, _ := os.ReadDir(ad.Dir)
	for _, e := range segs {
		data, _ := os.ReadFile(ad.Dir + "/" + e.Name())
		if strings.Contains(string(data), auditor.token) || strings.Contains(string(data), testSecretKey) {
			t.Fatalf("%s contains the bearer token or the secret key", e.Name())
		}
	}
	// Who touched wh/t/a.parquet? Exactly auditee.
	out, err = exec.Command(servers.CountersignBin, "audit", "query", "-dir", ad.Dir, "-key", "wh/t/a.parquet", "-distinct", "principal").Output()
	if err != nil || !strings.Contains(string(out), "auditee") || strings.Count(strings.TrimSpace(string(out)), "\n") > 1 {
		t.Fatalf("who touched wh/t/a.parquet: %v\n%s", err, out)
	}
}
