package main

import (
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/countersign/countersign/audit"
)

func TestExampleConfigParses(t *testing.T) {
	cfg, err := loadConfig("../../deploy/countersign.example.yaml", Config{})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Listen == "" || len(cfg.Endpoints) != 2 || !cfg.Endpoints[0].AWS || cfg.Credentials.Source != "default" {
		t.Fatalf("unexpected config: %+v", cfg)
	}
	if err := cfg.validate(false); err != nil {
		t.Fatal(err)
	}
}

func TestConfigErrorsNameTheKey(t *testing.T) {
	cases := map[string]string{
		"listen: x\nendpoint: []\n":                        "endpoint",
		"listen: x\nlimits:\n  max_body: 3\n":              "max_body",
		"listen: x\ncredentials:\n  secret: y\n":           "secret",
		"listen: x\nendpoints:\n  - host: h\n    rgn: [a]": "rgn",
		// serve names the key and line of a bad duration, as config check does.
		"listen: x\npolicy:\n  reload_interval: 5 seconds\n": "[3:20] policy.reload_interval",
		"listen: x\naudit:\n  checkpoint_interval: 5\n":      "[3:24] audit.checkpoint_interval",
		// Found by a black-box probe: a second document was ignored, an
		// empty file said only "EOF".
		"listen: x\n---\nlisten: y\n": "holds more than one YAML document",
		"":                            "is empty: it holds no settings",
		"# nothing\n":                 "is empty: it holds no settings",
	}
	for text, key := range cases {
		path := filepath.Join(t.TempDir(), "c.yaml")
		os.WriteFile(path, []byte(text), 0o600)
		_, err := loadConfig(path, Config{})
		if err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("%q: error %v does not name %q", text, err, key)
		}
	}
}

func TestServeRequiresPolicy(t *testing.T) {
	cfg := devConfig()
	cfg.Auth.HS256Secret = "0123456789abcdef0123456789abcdef"
	cfg.Audit.Dir = "/var/lib/countersign/audit"
	err := cfg.validate(false)
	if err == nil || !strings.Contains(err.Error(), "policy.paths") {
		t.Fatalf("validate without policy: %v", err)
	}
}

func TestServeRequiresAuthentication(t *testing.T) {
	cfg := devConfig()
	cfg.Policy.Paths = []string{"x"}
	err := cfg.validate(false)
	if err == nil || !strings.Contains(err.Error(), "auth") {
		t.Fatalf("validate without auth: %v", err)
	}
}

func TestServeRequiresAudit(t *testing.T) {
	cfg := devConfig()
	cfg.Auth.HS256Secret = "0123456789abcdef0123456789abcdef"
	cfg.Policy.Paths = []string{"x"}
	err := cfg.validate(false)
	if err == nil || !strings.Contains(err.Error(), "audit.dir") {
		t.Fatalf("validate without audit: %v", err)
	}
}

func TestRuntimeConfig(t *testing.T) {
	for _, c := range []RuntimeConfig{{GCPercent: -1}, {MemoryLimitBytes: -5}} {
		if err := c.validate(); err == nil || !strings.Contains(err.Error(), "runtime.") {
			t.Errorf("%+v: error %v does not name the key", c, err)
		}
	}
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))
	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	RuntimeConfig{MemoryLimitBytes: 1 << 30}.apply(slog.New(slog.DiscardHandler), false)
	if got := debug.SetGCPercent(100); got != DefaultGCPercent {
		t.Errorf("gc percent %d, want the default %d", got, DefaultGCPercent)
	}
	if got := debug.SetMemoryLimit(-1); got != 1<<30 {
		t.Errorf("memory limit %d, want 1 GiB", got)
	}
	// The environment wins.
	t.Setenv("GOGC", "50")
	debug.SetGCPercent(50)
	RuntimeConfig{GCPercent: 300}.apply(slog.New(slog.DiscardHandler), false)
	if got := debug.SetGCPercent(100); got != 50 {
		t.Errorf("gc percent %d with GOGC=50 set, want 50", got)
	}
}

// The audit writer's P (audit.sync_mode keep_p) is one more than the
// runtime's own choice, unless GOMAXPROCS is set.
func TestRuntimeWriterP(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	discard := slog.New(slog.DiscardHandler)
	t.Setenv("GOMAXPROCS", "")
	runtime.GOMAXPROCS(3)
	RuntimeConfig{}.apply(discard, false)
	if got := runtime.GOMAXPROCS(0); got != 3 {
		t.Errorf("without the writer's P: GOMAXPROCS %d, want 3", got)
	}
	RuntimeConfig{}.apply(discard, true)
	if got := runtime.GOMAXPROCS(0); got != 4 {
		t.Errorf("with the writer's P: GOMAXPROCS %d, want 4", got)
	}
	t.Setenv("GOMAXPROCS", "3")
	runtime.GOMAXPROCS(3)
	RuntimeConfig{}.apply(discard, true)
	if got := runtime.GOMAXPROCS(0); got != 3 {
		t.Errorf("GOMAXPROCS=3 in the environment: GOMAXPROCS %d, want 3", got)
	}
	// What decides it: keep_p is the default; syscall turns it off.
	if !(audit.Config{}).KeepsP() && runtime.GOOS == "linux" {
		t.Error("the default sync mode does not keep the writer's P on Linux")
	}
	if (audit.Config{SyncMode: audit.SyncSyscall}).KeepsP() {
		t.Error("sync_mode syscall keeps the writer's P")
	}
}

func TestLimitsAreValidated(t *testing.T) {
	for text, want := range map[string]string{
		"max_connections: -1":                                   "limits.max_connections must not be negative",
		"preauth_idle_timeout: -1s":                             "limits.preauth_idle_timeout must not be negative",
		"refusal_limit:\n    per_second: -1":                    "refusal_limit.per_second",
		"max_connections: 10\n  max_connections_per_source: 20": "above limits.max_connections",
		"idle_timeout: 5s\n  preauth_idle_timeout: 10s":         "meant to be the shorter",
		"linger_bytes: -5":                                      "limits.linger_bytes",
		"request_timeout: -1s":                                  "limits.request_timeout must not be negative",
		"request_timeout: 30s":                                  "must be below limits.shutdown_grace_period (30s)",
		"shutdown_grace_period: 5s":                             "limits.request_timeout (10s) must be below",
	} {
		cfg, err := loadConfig(writeTemp(t, "limits:\n  "+text+"\n"), Config{})
		if err != nil {
			t.Fatalf("%q: %v", text, err)
		}
		if err := cfg.Limits.validate(); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", text, err, want)
		}
	}
	if err := (LimitsConfig{}).validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
}

func writeTemp(t *testing.T, text string) string {
	path := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
