package e2e

import (
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const allowLake = `package countersign.authz

default allow := false

allow if input.resource.bucket == "lake"
`

const denyAll = `package countersign.authz

default allow := false

reason := "closed for maintenance"
`

// TestPolicyHotReload: a valid new policy takes effect without a restart; a
// broken one is rejected while the last good one keeps serving.
func TestPolicyHotReload(t *testing.T) {
	srv := startS3(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "authz.rego")
	if err := os.WriteFile(file, []byte(allowLake), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := baseConfig(t, srv.Port)
	cfg = cfg[:strings.Index(cfg, "policy:\n")] + "policy:\n  paths: [" + quote(dir) + "]\n  reload_interval: 100ms\n"
	cs := startCountersign(t, cfg, secretEnv()...)
	sr := signRequest{Region: testRegion, URI: styles(srv.Port)[0].object("lake", "k"), Method: "GET", Headers: javaHeaders()}

	waitStatus := func(want int) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			status, _, _, _ := cs.sign(t, "", sr)
			if status == want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("status stayed %d, want %d\n%s", status, want, cs.log.String())
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	waitStatus(http.StatusOK)

	if err := os.WriteFile(file, []byte(denyAll), 0o600); err != nil {
		t.Fatal(err)
	}
	waitStatus(http.StatusForbidden)

	// A broken policy: rejected, logged with its location, old one serves.
	if err := os.WriteFile(file, []byte("package countersign.authz\n\nallow if {\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(cs.log.String(), "authz.rego:") {
		if time.Now().After(deadline) {
			t.Fatalf("no reload error logged:\n%s", cs.log.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	for range 5 {
		if status, _, ierr, _ := cs.sign(t, "", sr); status != http.StatusForbidden || !strings.Contains(ierr.Error.Message, "access denied") {
			t.Fatalf("after a broken reload: %d %+v", status, ierr)
		}
	}

	// Fixing it brings the allow policy back.
	if err := os.WriteFile(file, []byte(allowLake), 0o600); err != nil {
		t.Fatal(err)
	}
	waitStatus(http.StatusOK)
}

// TestBrokenPolicyStopsStartup: countersign does not start on a policy
// that does not compile, and says where the error is.
func TestBrokenPolicyStopsStartup(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "authz.rego"), []byte("package countersign.authz\n\nallow if {\n  input.x ==\n}\n"), 0o600)
	cfg := baseConfig(t, 7070)
	cfg = cfg[:strings.Index(cfg, "policy:\n")] + "policy:\n  paths: [" + quote(dir) + "]\n"
	cfgPath := filepath.Join(t.TempDir(), "c.yaml")
	os.WriteFile(cfgPath, []byte(cfg), 0o600)
	cmd := exec.Command(servers.CountersignBin, "serve", "-config", cfgPath)
	cmd.Env = append(os.Environ(), secretEnv()...)
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("countersign started with a broken policy:\n%s", out)
	}
	if !strings.Contains(string(out), "authz.rego:") {
		t.Fatalf("startup error does not name the file and line:\n%s", out)
	}
}

// TestPolicyTestCommand: the shipped example policies' Rego tests pass via
// `countersign policy test`, and a failing test fails the command.
func TestPolicyTestCommand(t *testing.T) {
	out, err := exec.Command(servers.CountersignBin, "policy", "test", "../deploy/policies/...").CombinedOutput()
	if err != nil {
		t.Fatalf("policy test failed: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "PASS") {
		t.Fatalf("no PASS in output:\n%s", out)
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "authz.rego"), []byte(allowLake), 0o600)
	os.WriteFile(filepath.Join(dir, "authz_test.rego"), []byte("package countersign.authz_test\n\nimport data.countersign.authz\n\ntest_other_bucket if authz.allow with input as {\"resource\": {\"bucket\": \"other\"}}\n"), 0o600)
	if out, err := exec.Command(servers.CountersignBin, "policy", "test", dir).CombinedOutput(); err == nil {
		t.Fatalf("a failing Rego test passed:\n%s", out)
	}
}

// TestTruncatedPolicyNeverServes: a policy file cut short after `default
// allow` (which means true) is refused by the real binary, at startup and
// at reload; the last good policy keeps deciding, and the rejection is in
// countersign_policy_reloads_total{result="error"}.
func TestTruncatedPolicyNeverServes(t *testing.T) {
	const truncated = "package countersign.authz\n\ndefault allow"

	// Startup: refused, naming the rule.
	dir := t.TempDir()
	file := filepath.Join(dir, "authz.rego")
	if err := os.WriteFile(file, []byte(truncated), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := baseConfig(t, 7070)
	cfg = cfg[:strings.Index(cfg, "policy:\n")] + "policy:\n  paths: [" + quote(dir) + "]\n"
	cfgPath := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	// A countersign that starts does not exit: the timeout ends it.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, servers.CountersignBin, "serve", "-config", cfgPath)
	cmd.Env = append(os.Environ(), secretEnv()...)
	if out, err := cmd.CombinedOutput(); err == nil || ctx.Err() != nil || !strings.Contains(string(out), "authz.rego:3) is true: it must be false") {
		t.Fatalf("countersign started on a truncated policy, or did not say why (%v):\n%s", err, out)
	}

	// Reload: the truncated rewrite never serves.
	srv := startS3(t)
	if err := os.WriteFile(file, []byte(allowLake), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg = baseConfig(t, srv.Port)
	cfg = cfg[:strings.Index(cfg, "policy:\n")] + "policy:\n  paths: [" + quote(dir) + "]\n  reload_interval: 50ms\n  settle_interval: 100ms\n"
	cs := startCountersign(t, cfg, secretEnv()...)
	other := signRequest{Region: testRegion, URI: styles(srv.Port)[0].object("other", "k"), Method: "GET", Headers: javaHeaders()}
	lake := signRequest{Region: testRegion, URI: styles(srv.Port)[0].object("lake", "k"), Method: "GET", Headers: javaHeaders()}
	if status, _, _, _ := cs.sign(t, "", other); status != http.StatusForbidden {
		t.Fatalf("before: bucket other got %d, want 403", status)
	}
	if err := os.WriteFile(file, []byte(truncated), 0o600); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(cs.log.String(), "it must be false") {
		if status, _, _, _ := cs.sign(t, "", other); status != http.StatusForbidden {
			t.Fatalf("the truncated policy signed for bucket other (%d)\n%s", status, cs.log.String())
		}
		if time.Now().After(deadline) {
			t.Fatalf("no reload rejection logged:\n%s", cs.log.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	for range 5 {
		if status, _, _, _ := cs.sign(t, "", other); status != http.StatusForbidden {
			t.Fatalf("after the rejection: bucket other got %d, want 403", status)
		}
		if status, _, _, _ := cs.sign(t, "", lake); status != http.StatusOK {
			t.Fatalf("after the rejection: bucket lake got %d, want 200 (the last good policy)", status)
		}
	}
	resp, err := http.Get(cs.url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), `countersign_policy_reloads_total{result="error"} 1`) {
		t.Errorf("the rejection is not counted once in countersign_policy_reloads_total:\n%s", grepLines(string(body), "policy_reloads"))
	}
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
