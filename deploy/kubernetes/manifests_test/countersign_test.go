package manifests

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// The countersign binary built from this repository, once per test run:
// the manifests are checked against the code that will run them.
var (
	binOnce sync.Once
	binPath string
	binErr  error
	binDir  string
)

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

func countersignBinary(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		binDir, binErr = os.MkdirTemp("", "countersign-manifests-")
		if binErr != nil {
			return
		}
		binPath = filepath.Join(binDir, "countersign")
		cmd := exec.Command("go", "build", "-o", binPath, "./cmd/countersign")
		cmd.Dir = repoDir
		if out, err := cmd.CombinedOutput(); err != nil {
			binErr = fmt.Errorf("go build ./cmd/countersign: %v\n%s", err, out)
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

// runCountersign runs the binary without the machine's COUNTERSIGN_* and
// AWS_* environment, so only the file under test decides.
func runCountersign(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	cmd := exec.Command(countersignBinary(t), args...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "COUNTERSIGN_") && !strings.HasPrefix(kv, "AWS_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	none := filepath.Join(t.TempDir(), "none")
	cmd.Env = append(cmd.Env, "AWS_CONFIG_FILE="+none, "AWS_SHARED_CREDENTIALS_FILE="+none, "AWS_EC2_METADATA_DISABLED=true")
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	if err != nil {
		if _, ok := err.(*exec.ExitError); !ok {
			t.Fatalf("countersign %s: %v", strings.Join(args, " "), err)
		}
	}
	return cmd.ProcessState.ExitCode(), o.String(), e.String()
}

// configCheck runs "countersign config check" on a configuration as a
// ConfigMap carries it.
func configCheck(t *testing.T, text string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "countersign.yaml")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCountersign(t, "config", "check", path)
	if strings.Contains(errOut, `unknown command "config"`) {
		t.Fatalf("countersign has no \"config check\" command yet: cmd/countersign/main.go must dispatch \"config\" to runConfigCmd")
	}
	if code != 0 || strings.TrimSpace(out) != "ok" {
		t.Errorf("countersign config check on the ConfigMap's configuration: exit %d\n%s%s", code, out, errOut)
	}
}

// policyEval compiles the policy directory as mounted and decides two
// requests: a group grant of the example data (allowed) and an admin
// operation (denied by the guardrails).
func policyEval(t *testing.T, dir string) {
	t.Helper()
	input := func(groups []string, op, action, access string) string {
		in := map[string]any{
			"version":   1,
			"principal": map[string]any{"id": "ann", "issuer": "https://idp.example.com/", "groups": groups, "claims": map[string]any{}},
			"operation": op, "action": action, "access": access,
			"resource":    map[string]any{"bucket": "lake", "key": "wh/db/t/data/f.parquet", "prefix": nil, "arn": "arn:aws:s3:::lake/wh/db/t/data/f.parquet"},
			"copy_source": nil,
			"table":       nil,
			"request":     map[string]any{"method": "GET", "region": "us-east-1", "host": "lake.s3.us-east-1.amazonaws.com", "headers": map[string]any{}},
			"source":      map[string]any{"ip": "10.0.0.7"},
		}
		b, _ := json.Marshal(in)
		p := filepath.Join(t.TempDir(), "input.json")
		os.WriteFile(p, b, 0o600)
		return p
	}
	for _, tc := range []struct {
		name  string
		input string
		allow bool
	}{
		{"analysts read a granted table", input([]string{"analysts"}, "GetObject", "s3:GetObject", "read"), true},
		{"admin operation", input([]string{"analysts"}, "PutObjectAcl", "s3:PutObjectAcl", "admin"), false},
		{"no group", input(nil, "GetObject", "s3:GetObject", "read"), false},
	} {
		code, out, errOut := runCountersign(t, "policy", "eval", "-policy", dir, "-input", tc.input)
		if code != 0 {
			t.Errorf("policy eval (%s) of the mounted policy: exit %d\n%s", tc.name, code, errOut)
			continue
		}
		var d struct {
			Allow bool `json:"allow"`
		}
		if err := json.Unmarshal([]byte(out), &d); err != nil || d.Allow != tc.allow {
			t.Errorf("policy eval (%s): %s, want allow=%v", tc.name, out, tc.allow)
		}
	}
}
