package e2e

// Per-principal sessions (credentials.per_principal) against SeaweedFS's
// STS, which enforces inline session policies (testsupport's
// StartSeaweedFSWith, STS: true).

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/countersign/countersign/testsupport"
)

// testHookTag builds the test-only hook that signs without the policy's
// decision into countersign (server/testhook_on.go).
const (
	testHookTag    = "countersign_testhook_skip_decision"
	testHookHeader = "X-Countersign-Test-Skip-Decision"
)

// perPrincipalConfig is baseConfigAudit's config for a SeaweedFS on port
// with per-principal sessions of testsupport.SeaweedFSRoleARN and the
// sessions policy.
func perPrincipalConfig(t testing.TB, port int, ad *testsupport.AuditDir) string {
	t.Helper()
	policyDir, err := filepath.Abs("testdata/sessions-policy")
	if err != nil {
		t.Fatal(err)
	}
	cfg := baseConfigAudit(t, port, ad)
	static := "credentials:\n  source: static\n  access_key_id: " + testAccessKey + "\n"
	i := strings.Index(cfg, static)
	j := strings.Index(cfg, "policy:\n")
	if i < 0 || j < i {
		t.Fatalf("baseConfig changed shape:\n%s", cfg)
	}
	return cfg[:i] + fmt.Sprintf("credentials:\n  source: assume-role\n  role_arn: %s\n  per_principal: true\n  duration: 15m\n  region: %s\npolicy:\n  paths: [%q]\n",
		testsupport.SeaweedFSRoleARN, testRegion, policyDir)
}

// signWith is signerProc.sign with extra headers on the sign request.
func signWith(t testing.TB, p *signerProc, sr signRequest, header map[string]string) (int, *signResult, string) {
	t.Helper()
	body, _ := json.Marshal(sr)
	req, err := http.NewRequest("POST", p.url+"/v1/aws/s3/sign", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+p.token)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return resp.StatusCode, nil, string(data)
	}
	var res signResult
	if err := json.Unmarshal(data, &res); err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, &res, string(data)
}

// credentialOf is the access key id of a signed request's Authorization.
func credentialOf(t testing.TB, res *signResult) string {
	t.Helper()
	auth := res.Headers["Authorization"][0]
	_, rest, ok := strings.Cut(auth, "Credential=")
	if !ok {
		t.Fatalf("Authorization %q", auth)
	}
	return rest[:strings.IndexByte(rest, '/')]
}

// auditJSONL is every record of dir as `countersign audit query` prints it.
func auditJSONL(t testing.TB, dir string) []map[string]any {
	t.Helper()
	out, err := exec.Command(servers.CountersignBin, "audit", "query", "-dir", dir, "-format", "jsonl").Output()
	if err != nil {
		t.Fatalf("audit query: %v", err)
	}
	var recs []map[string]any
	for _, line := range bytes.Split(bytes.TrimSpace(out), []byte("\n")) {
		var r map[string]any
		if err := json.Unmarshal(line, &r); err != nil {
			t.Fatalf("audit query line %q: %v", line, err)
		}
		recs = append(recs, r)
	}
	return recs
}

// TestDefenseInDepth: with per-principal sessions, a request outside the
// principal's policy scope that reaches the store with that principal's
// session signature is refused by SeaweedFS itself (its own 403), and the
// same request inside the scope is served. The signature outside the scope
// comes from a countersign built with the test-only hook that skips the
// policy's decision (server/testhook_on.go; TestSkipDecisionHookNotInProduction
// shows that binaries built as production is have no such hook).
func TestDefenseInDepth(t *testing.T) {
	sw := servers.StartSeaweedFSWith(t, testsupport.SeaweedFSOptions{STS: true})
	ctx := context.Background()
	sw.CreateBucket(t, "lake")
	sw.CreateBucket(t, "other")
	admin := sw.AdminClient()
	for bucket, keys := range map[string][]string{"lake": {"wh/db/t/in.parquet", "wh/db/u/out.parquet"}, "other": {"wh/db/t/in.parquet"}} {
		for _, k := range keys {
			if _, err := admin.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(k), Body: strings.NewReader("PAR1 " + bucket + "/" + k)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	ad := newAuditDir(t)
	hooked := servers.WithCountersignTags(t, testHookTag)
	env := isolatedAWSEnv(t, servers.AccessKey, servers.SecretKey, fmt.Sprintf("http://127.0.0.1:%d", sw.Port))
	p := hooked.StartCountersign(t, perPrincipalConfig(t, sw.Port, ad), env...)
	cs := &signerProc{url: p.URL, log: p.Log, token: testIdP.Mint("alice", nil, nil), cmd: p.Cmd}
	s3srv := &s3Server{sw}
	url := func(bucket, key string) string { return fmt.Sprintf("http://127.0.0.1:%d/%s/%s", sw.Port, bucket, key) }
	skip := map[string]string{testHookHeader: "skip-the-policy"}

	type step struct {
		name           string
		method, bucket string
		key            string
		hook           bool
		signStatus     int // countersign's answer
		storeStatus    int // SeaweedFS's, when signed
	}
	var sessionKey string
	for _, s := range []step{
		{"read inside the scope", "GET", "lake", "wh/db/t/in.parquet", false, 200, 200},
		{"read outside the scope: the policy refuses", "GET", "lake", "wh/db/u/out.parquet", false, 403, 0},
		{"read outside the scope, decision skipped: the store refuses", "GET", "lake", "wh/db/u/out.parquet", true, 200, 403},
		{"read inside the scope, decision skipped: served", "GET", "lake", "wh/db/t/in.parquet", true, 200, 200},
		{"read in another bucket, decision skipped: the store refuses", "GET", "other", "wh/db/t/in.parquet", true, 200, 403},
		{"write outside the scope, decision skipped: the store refuses", "PUT", "lake", "wh/db/u/new.parquet", true, 200, 403},
		{"write inside the scope, decision skipped: served", "PUT", "lake", "wh/db/t/new.parquet", true, 200, 200},
		{"delete (never granted), decision skipped: the store refuses", "DELETE", "lake", "wh/db/t/in.parquet", true, 200, 403},
	} {
		t.Run(s.name, func(t *testing.T) {
			var hdr map[string]string
			if s.hook {
				hdr = skip
			}
			var body []byte
			headers := javaHeaders()
			if s.method == "PUT" {
				body = []byte("PAR1 new")
				headers = javaHeaders("Content-Length", fmt.Sprint(len(body)))
			}
			status, res, raw := signWith(t, cs, signRequest{Region: testRegion, URI: url(s.bucket, s.key), Method: s.method, Headers: headers}, hdr)
			if status != s.signStatus {
				t.Fatalf("countersign answered %d, want %d: %s", status, s.signStatus, raw)
			}
			if res == nil {
				return
			}
			key := credentialOf(t, res)
			if key == servers.AccessKey || len(res.Headers["X-Amz-Security-Token"]) != 1 {
				t.Fatalf("signed with %s (token %v), want alice's session", key, res.Headers["X-Amz-Security-Token"])
			}
			if s.method == "GET" && s.bucket == "lake" {
				// Reads in lake share alice's read session.
				if sessionKey == "" {
					sessionKey = key
				} else if key != sessionKey {
					t.Fatalf("read signed with %s, want alice's read session %s", key, sessionKey)
				}
			}
			st, got := s3srv.send(t, s.method, res.URI, res.Headers, body)
			if st != s.storeStatus {
				t.Fatalf("SeaweedFS answered %d, want %d\n%s", st, s.storeStatus, got)
			}
			if st == 403 && !bytes.Contains(got, []byte("AccessDenied")) {
				t.Fatalf("SeaweedFS's 403 is not AccessDenied:\n%s", got)
			}
			if s.method == "GET" && st == 200 && string(got) != "PAR1 lake/"+s.key {
				t.Fatalf("read %q", got)
			}
		})
	}
	// Nothing the store refused happened.
	if _, err := admin.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("lake"), Key: aws.String("wh/db/t/in.parquet")}); err != nil {
		t.Fatalf("the refused delete deleted: %v", err)
	}
	if _, err := admin.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("lake"), Key: aws.String("wh/db/u/new.parquet")}); err == nil {
		t.Fatal("the refused write was stored")
	}
	// The audit records name alice's session, so the store's log lines
	// join to her.
	p.Stop()
	var named int
	for _, r := range auditJSONL(t, ad.Dir) {
		sg, ok := r["signing"].(map[string]any)
		if !ok {
			continue
		}
		named++
		if sg["source_identity"] != "alice" || sg["session_name"] != "alice" || !strings.HasPrefix(sg["access_key_id"].(string), "ASIA") {
			t.Fatalf("signed record without alice's session: %v", r)
		}
	}
	if named != 7 {
		t.Fatalf("%d signed records, want 7", named)
	}
}

// TestSkipDecisionHookNotInProduction: the binary the e2e suite builds (as
// production is built: no build tags) has no trace of the test hook, while
// one built with its tag has it, so the check can fail.
func TestSkipDecisionHookNotInProduction(t *testing.T) {
	plain, err := os.ReadFile(servers.CountersignBin)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(plain, []byte(testHookHeader)) {
		t.Fatalf("%s (built without tags) contains the test hook's header %s", servers.CountersignBin, testHookHeader)
	}
	hooked, err := os.ReadFile(servers.WithCountersignTags(t, testHookTag).CountersignBin)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(hooked, []byte(testHookHeader)) {
		t.Fatalf("the binary built with %s lacks %s: this test checks nothing", testHookTag, testHookHeader)
	}
}

// TestPerPrincipalSessionNames: what SeaweedFS's STS accepts but ignores —
// SourceIdentity and session tags — checked at the e2e suite's stand-in
// STS (assumeRoleSTS, sts_test.go: it records every AssumeRole and mints
// the session in versitygw, which then validates the signatures). A
// principal whose id has characters STS does not allow is named by its
// encoding; its groups are a tag; one principal's requests share one
// session; the inline session policy is the scope of what it asked.
func TestPerPrincipalSessionNames(t *testing.T) {
	const baseAccessKey, baseSecretKey = "CSE2ESESSIONBASE", "cse2e-session-base-secret"
	gw := startS3WithIAM(t)
	gw.CreateBucket(t, "lake")
	role := gw.CreateRole(t, "lake-sessions", []string{"s3:GetObject", "s3:PutObject"}, "arn:aws:s3:::lake/*")
	stsFront := startAssumeRoleSTS(t, gw, baseAccessKey, baseSecretKey)
	env := isolatedAWSEnv(t, baseAccessKey, baseSecretKey, stsFront.url)

	cfg := baseConfig(t, gw.Port)
	static := "credentials:\n  source: static\n  access_key_id: " + testAccessKey + "\n"
	if !strings.Contains(cfg, static) {
		t.Fatalf("baseConfig has no static credentials block to replace:\n%s", cfg)
	}
	cfg = strings.Replace(cfg, static, fmt.Sprintf("credentials:\n  source: assume-role\n  role_arn: %s\n  per_principal: true\n  duration: 15m\n", aws.ToString(role.Arn)), 1)
	cs := startCountersign(t, cfg, env...)
	alice := cs.as(testIdP.Mint("alice smith/eu", []string{"engineers", "a:b"}, nil))
	bob := cs.as(testIdP.Mint("bob", []string{"engineers"}, nil))
	h := &harness{s3: gw.s3Server, cs: alice, ctx: context.Background()}
	uri := styles(gw.Port)[1].object("lake", "wh/sessions.parquet")
	data := []byte("PAR1 per principal")
	h.signAndSend(t, op{name: "PutObject", method: "PUT", uri: uri, headers: javaHeaders("Content-Length", fmt.Sprint(len(data))), body: data})
	for i := 0; i < 3; i++ {
		if got := h.signAndSend(t, op{name: "GetObject", method: "GET", uri: uri, headers: javaHeaders()}); !bytes.Equal(got, data) {
			t.Fatalf("GetObject returned %q", got)
		}
	}
	hb := &harness{s3: gw.s3Server, cs: bob, ctx: context.Background()}
	if got := hb.signAndSend(t, op{name: "GetObject", method: "GET", uri: uri, headers: javaHeaders()}); !bytes.Equal(got, data) {
		t.Fatalf("bob's GetObject returned %q", got)
	}

	// alice: one session for her write, one for her three reads; bob: one.
	calls := stsFront.requests()
	if len(calls) != 3 {
		t.Fatalf("%d AssumeRole calls, want 3 (alice's write and read sessions, bob's read): %+v", len(calls), calls)
	}
	want := map[string]struct{ name, tags, action string }{
		"alice-write": {"alice=20smith=2Feu", "countersign:groups=a=3Ab:engineers countersign:issuer=https=3A=2F=2Fidp.e2e.test countersign:principal=alice=20smith=2Feu", "s3:PutObject"},
		"alice-read":  {"alice=20smith=2Feu", "countersign:groups=a=3Ab:engineers countersign:issuer=https=3A=2F=2Fidp.e2e.test countersign:principal=alice=20smith=2Feu", "s3:GetObject"},
		"bob-read":    {"bob", "countersign:groups=engineers countersign:issuer=https=3A=2F=2Fidp.e2e.test countersign:principal=bob", "s3:GetObject"},
	}
	for i, name := range []string{"alice-write", "alice-read", "bob-read"} {
		c, w := calls[i], want[name]
		if c.CallerAccessKey != baseAccessKey || c.RoleArn != aws.ToString(role.Arn) || c.RoleSessionName != w.name || c.SourceIdentity != w.name || c.Tags != w.tags || c.DurationSeconds != "900" || c.Issued == nil {
			t.Errorf("%s: AssumeRole %+v\nwant session name and source identity %q, tags %q", name, c, w.name, w.tags)
		}
		// The e2e policy grants group engineers bucket lake except keys
		// under denied/: not a prefix set, so the class is bucket-wide,
		// narrowed to the one action asked for.
		wantPolicy := `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":["` + w.action + `"],"Resource":["arn:aws:s3:::lake/*"]}]}`
		if c.Policy != wantPolicy {
			t.Errorf("%s: session policy %s\nwant %s", name, c.Policy, wantPolicy)
		}
	}
	// The log names the sessions, never their secrets.
	log := cs.log.String()
	for _, c := range calls {
		if c.Issued != nil && (strings.Contains(log, c.Issued.SecretAccessKey) || strings.Contains(log, c.Issued.SessionToken)) {
			t.Fatal("a session secret is in countersign's log")
		}
		if !strings.Contains(log, `"source_identity":"`+c.SourceIdentity+`"`) {
			t.Fatalf("no log line names session %s:\n%s", c.SourceIdentity, log)
		}
	}
}

// TestPerPrincipalSTSDown: with per-principal sessions and STS unreachable,
// a sign request the policy allows is answered 503 with Retry-After,
// carries no signature, and its audit record has none either.
func TestPerPrincipalSTSDown(t *testing.T) {
	s3srv := startS3(t)
	ad := newAuditDir(t)
	cfg := baseConfigAudit(t, s3srv.Port, ad)
	static := "credentials:\n  source: static\n  access_key_id: " + testAccessKey + "\n"
	cfg = strings.Replace(cfg, static, "credentials:\n  source: assume-role\n  role_arn: arn:aws:iam::"+testsupport.AccountID+":role/lake-sessions\n  per_principal: true\n", 1)
	down := fmt.Sprintf("http://127.0.0.1:%d", testsupport.FreePort(t)) // nothing listens
	p := servers.StartCountersign(t, cfg, isolatedAWSEnv(t, "CSE2EDOWNBASE", "cse2e-down-secret", down)...)
	cs := &signerProc{url: p.URL, log: p.Log, token: defaultToken(), cmd: p.Cmd}
	for i := 0; i < 2; i++ { // a failure is not cached
		status, res, ierr, hdr := cs.sign(t, "", signRequest{Region: testRegion, URI: styles(s3srv.Port)[1].object("lake", "wh/a.parquet"), Method: "GET", Headers: javaHeaders()})
		if status != http.StatusServiceUnavailable || res != nil || hdr.Get("Retry-After") == "" || !strings.Contains(ierr.Error.Message, "nothing was signed") {
			t.Fatalf("STS down: %d %+v %+v Retry-After %q", status, res, ierr, hdr.Get("Retry-After"))
		}
	}
	p.Stop()
	var access int
	for _, r := range auditJSONL(t, ad.Dir) {
		if r["kind"] != "access" {
			continue
		}
		access++
		if r["signing"] != nil || r["status"] != float64(503) {
			t.Fatalf("record of a refused request: %v", r)
		}
	}
	if access != 2 {
		t.Fatalf("%d access records, want 2", access)
	}
}

// TestPerPrincipalSessionsDroppedOnReload: a policy reload drops the
// sessions compiled from the old policy; the next request gets a session
// whose policy is the new scope (checked at the stand-in STS).
func TestPerPrincipalSessionsDroppedOnReload(t *testing.T) {
	const baseAccessKey, baseSecretKey = "CSE2ERELOADBASE", "cse2e-reload-base-secret"
	gw := startS3WithIAM(t)
	gw.CreateBucket(t, "lake")
	role := gw.CreateRole(t, "lake-reload", []string{"s3:GetObject"}, "arn:aws:s3:::lake/*")
	stsFront := startAssumeRoleSTS(t, gw, baseAccessKey, baseSecretKey)
	dir := t.TempDir()
	file := filepath.Join(dir, "authz.rego")
	policyFor := func(prefix string) string {
		return "package countersign.authz\n\ndefault allow := false\n\nallow if {\n\tinput.resource.bucket == \"lake\"\n\tinput.access == \"read\"\n\tstartswith(input.resource.key, \"" + prefix + "\")\n}\n"
	}
	if err := os.WriteFile(file, []byte(policyFor("wh/")), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := baseConfig(t, gw.Port)
	static := "credentials:\n  source: static\n  access_key_id: " + testAccessKey + "\n"
	cfg = strings.Replace(cfg, static, fmt.Sprintf("credentials:\n  source: assume-role\n  role_arn: %s\n  per_principal: true\n  duration: 15m\n", aws.ToString(role.Arn)), 1)
	cfg = cfg[:strings.Index(cfg, "policy:\n")] + "policy:\n  paths: [" + quote(dir) + "]\n  reload_interval: 100ms\n"
	cs := startCountersign(t, cfg, isolatedAWSEnv(t, baseAccessKey, baseSecretKey, stsFront.url)...)
	sr := signRequest{Region: testRegion, URI: styles(gw.Port)[1].object("lake", "wh/db/t/a.parquet"), Method: "GET", Headers: javaHeaders()}
	sign := func() {
		t.Helper()
		if status, _, ierr, _ := cs.sign(t, "", sr); status != http.StatusOK {
			t.Fatalf("sign: %d %+v", status, ierr)
		}
	}
	sign()
	sign()
	if calls := stsFront.requests(); len(calls) != 1 || !strings.Contains(calls[0].Policy, `"arn:aws:s3:::lake/wh/*"`) {
		t.Fatalf("before the reload: %+v, want one AssumeRole scoped to lake/wh/*", calls)
	}

	if err := os.WriteFile(file, []byte(policyFor("wh/db/")), 0o600); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(15 * time.Second)
	for strings.Count(cs.log.String(), `"msg":"policy reloaded"`) == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the policy was not reloaded:\n%s", cs.log.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	sign()
	calls := stsFront.requests()
	if len(calls) != 2 || !strings.Contains(calls[1].Policy, `"arn:aws:s3:::lake/wh/db/*"`) {
		t.Fatalf("after the reload: %+v, want a second AssumeRole scoped to lake/wh/db/*", calls)
	}
}
