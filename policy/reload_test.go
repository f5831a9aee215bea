package policy_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/policy"
)

// testSettle keeps the settle interval of the reload tests short; the
// tests that are about settling inject ManagerOptions.Sleep instead of
// waiting.
const testSettle = time.Millisecond

// unsafeAllow are policies that allow what no rule decided, or whose allow
// is not a boolean: what a file cut short while it is being written, or a
// slip, leaves. Each must be refused, naming why.
var unsafeAllow = []struct{ name, rego, want string }{
	{"cut after default allow", "package countersign.authz\n\ndefault allow", "authz.rego:3) is true: it must be false"},
	{"default allow true", "package countersign.authz\n\ndefault allow := true\n", "authz.rego:3) is true: it must be false"},
	{"default allow non-boolean", "package countersign.authz\n\ndefault allow := \"no\"\n", `authz.rego:3) is "no": it must be false`},
	{"allow := true", "package countersign.authz\n\ndefault allow := false\n\nallow := true\n", "authz.rego:5) is true with no condition"},
	{"allow if true", "package countersign.authz\n\nallow if true\n", "authz.rego:3) is true with no condition"},
	{"allow if constant", "package countersign.authz\n\nallow if { 1; \"x\" }\n", "authz.rego:3) is true with no condition"},
	{"else := true", "package countersign.authz\n\nallow if input.access == \"read\"\n\telse := true\n", "authz.rego:4) is true with no condition"},
	{"string allow", "package countersign.authz\n\nallow := \"yes\" if input.access == \"read\"\n", `authz.rego:3) has the value "yes": allow must be a boolean`},
	{"set allow", "package countersign.authz\n\nallow contains \"read\" if input.access == \"read\"\n", "makes allow a set"},
	{"object allow", "package countersign.authz\n\nallow.read := true if input.access == \"read\"\n", "makes allow an object"},
	{"function allow", "package countersign.authz\n\nallow(x) if x == input.access\n", "makes allow a function"},
	{"cut after allow if input.resource.bucket", "package countersign.authz\n\ndefault allow := false\n\nallow if input.resource.bucket", "allow is true for an input whose fields are all empty"},
	{"cut before the deny rules", "package countersign.authz\n\nimport data.countersign.lib.guardrails\n\ndefault allow := false\n\nallow if not guardrails.denied\n", "allow is true for an empty input {}"},
	{"constant comparison", "package countersign.authz\n\nallow if 1 == 1\n", "allow is true for an empty input {}"},
}

// TestUnsafeAllowRefusedAtStartup: countersign does not start on them.
func TestUnsafeAllowRefusedAtStartup(t *testing.T) {
	for _, tc := range unsafeAllow {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeAtomic(t, filepath.Join(dir, "authz.rego"), tc.rego)
			m, err := policy.NewManager(context.Background(), policy.SourceConfig{Paths: []string{dir}, SettleInterval: testSettle}, policy.ManagerOptions{})
			if err == nil {
				d, _ := m.Authorize(context.Background(), read("any-bucket"))
				t.Fatalf("loaded (allows any-bucket: %v); want an error containing %q", d.Allow, tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q does not contain %q", err, tc.want)
			}
		})
	}
	// The boundary: these are fine.
	for _, ok := range []string{
		"package countersign.authz\n\ndefault allow := false\n\nallow if input.resource.bucket == \"a\"\n",
		"package countersign.authz\n\nallow := input.resource.bucket == \"a\"\n",
		"package countersign.authz\n\nallow := false\n",
	} {
		dir := t.TempDir()
		writeAtomic(t, filepath.Join(dir, "authz.rego"), ok)
		if _, err := policy.NewManager(context.Background(), policy.SourceConfig{Paths: []string{dir}, SettleInterval: testSettle}, policy.ManagerOptions{}); err != nil {
			t.Errorf("refused a safe policy %q: %v", ok, err)
		}
	}
}

// TestUnsafeAllowRefusedAtReload: the last good policy keeps serving, and
// each rejection reaches OnReloadError (the policy_reload_errors metric).
func TestUnsafeAllowRefusedAtReload(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "authz.rego")
	writeAtomic(t, file, allowBucket("a"))
	var h hooks
	m, err := policy.NewManager(context.Background(), policy.SourceConfig{Paths: []string{dir}, SettleInterval: testSettle}, h.options(nil))
	if err != nil {
		t.Fatal(err)
	}
	good := m.Revision()
	for i, tc := range unsafeAllow {
		writeAtomic(t, file, tc.rego)
		err := m.Reload(context.Background())
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Reload = %v, want %q", tc.name, err, tc.want)
		}
		if _, n := h.counts(); n != i+1 {
			t.Errorf("%s: %d rejections reported, want %d", tc.name, n, i+1)
		}
		if m.Revision() != good || !allows(t, m, "a") || allows(t, m, "other") {
			t.Fatalf("%s: the last good policy is no longer in force", tc.name)
		}
	}
}

// The library of deny rules a policy imports, rewritten in place in two
// halves: the first (the package line) leaves a policy that compiles,
// passes the allow checks, and reads every bucket.
const (
	tornAuthz = `package countersign.authz

import data.countersign.lib.guardrails

default allow := false

allow if {
	input.access == "read"
	not guardrails.denied
}
`
	tornFirstHalf  = "package countersign.lib.guardrails\n\n"
	tornSecondHalf = `denied if input.resource.bucket in {"secret", "vault"}

denied if input.resource.bucket == "archive"
`
)

// TestTornWriteNeverServes: a file rewritten in place in two writes, with
// a pause shorter than the settle interval between them, is loaded whole
// or not at all. The Sleep hook stands for the settle interval: the writer
// finishes during it.
func TestTornWriteNeverServes(t *testing.T) {
	dir := t.TempDir()
	writeAtomic(t, filepath.Join(dir, "authz.rego"), tornAuthz)
	file := filepath.Join(dir, "guardrails.rego")
	writeAtomic(t, file, tornFirstHalf+`denied if input.resource.bucket in {"secret", "vault"}`+"\n")
	var sleeps int
	var m *policy.Manager
	m, err := policy.NewManager(context.Background(), policy.SourceConfig{Paths: []string{dir}}, policy.ManagerOptions{
		Sleep: func(ctx context.Context, d time.Duration) error {
			sleeps++
			if d != policy.DefaultSettleInterval {
				t.Errorf("settle interval %s, want the default %s", d, policy.DefaultSettleInterval)
			}
			if m == nil {
				return nil // startup
			}
			if allows(t, m, "secret") || allows(t, m, "vault") {
				t.Error("the first half was served")
			}
			if sleeps == 2 {
				f, err := os.OpenFile(file, os.O_APPEND|os.O_WRONLY, 0)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := f.WriteString(tornSecondHalf); err != nil {
					t.Fatal(err)
				}
				f.Close()
			}
			return nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	// The writer truncates the file and writes its first half.
	if err := os.WriteFile(file, []byte(tornFirstHalf), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := m.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	if sleeps != 3 {
		t.Errorf("%d settle waits, want 3 (startup; first half; whole file)", sleeps)
	}
	if allows(t, m, "secret") || allows(t, m, "vault") || allows(t, m, "archive") || !allows(t, m, "b") {
		t.Fatal("the whole new policy is not the one in force")
	}
}

// TestNeverSettlingFileIsRejected: a file that changes at every read is
// not loaded, and the rejection says why.
func TestNeverSettlingFileIsRejected(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "authz.rego")
	writeAtomic(t, file, allowBucket("a"))
	var m *policy.Manager
	n := 0
	m, err := policy.NewManager(context.Background(), policy.SourceConfig{Paths: []string{dir}}, policy.ManagerOptions{
		Sleep: func(context.Context, time.Duration) error {
			if m != nil {
				n++
				writeAtomic(t, file, allowBucket(strings.Repeat("b", n)))
			}
			return nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	writeAtomic(t, file, allowBucket("c"))
	err = m.Reload(context.Background())
	if err == nil || !strings.Contains(err.Error(), "kept changing") {
		t.Fatalf("Reload = %v, want 'kept changing'", err)
	}
	if !allows(t, m, "a") {
		t.Fatal("the last good policy is no longer in force")
	}
}

const failingRegoTest = `package countersign.authz_test

import data.countersign.authz

test_reads_bucket_a if authz.allow with input as {"access": "read", "resource": {"bucket": "a"}}
`

// TestFailingRegoTestsRefuseThePolicy: a policy directory that ships
// _test.rego files is loaded only when they pass, at startup and reload.
func TestFailingRegoTestsRefuseThePolicy(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "authz.rego")
	writeAtomic(t, file, allowBucket("b"))
	writeAtomic(t, filepath.Join(dir, "authz_test.rego"), failingRegoTest)
	src := policy.SourceConfig{Paths: []string{dir}, SettleInterval: testSettle}
	_, err := policy.NewManager(context.Background(), src, policy.ManagerOptions{})
	if err == nil || !strings.Contains(err.Error(), "1 of 1 Rego tests shipped with the policy failed") ||
		!strings.Contains(err.Error(), "authz_test.rego:5 data.countersign.authz_test.test_reads_bucket_a") {
		t.Fatalf("startup: %v", err)
	}

	// Passing tests: loaded.
	writeAtomic(t, file, allowBucket("a"))
	var h hooks
	m, err := policy.NewManager(context.Background(), src, h.options(nil))
	if err != nil {
		t.Fatal(err)
	}
	good := m.Revision()
	// A change that breaks the tests is refused; the old policy serves.
	writeAtomic(t, file, allowBucket("b"))
	if err := m.Reload(context.Background()); err == nil || !strings.Contains(err.Error(), "test_reads_bucket_a") {
		t.Fatalf("reload: %v", err)
	}
	if _, n := h.counts(); n != 1 || m.Revision() != good || !allows(t, m, "a") || allows(t, m, "b") {
		t.Fatal("the policy that fails its tests was loaded")
	}
	// A test file changed to fail against the policy in force is refused too.
	writeAtomic(t, file, allowBucket("a"))
	writeAtomic(t, filepath.Join(dir, "authz_test.rego"), strings.ReplaceAll(failingRegoTest, `"a"`, `"z"`))
	if err := m.Reload(context.Background()); err == nil {
		t.Fatal("a failing test file was accepted")
	}
}
