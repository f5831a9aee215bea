package fastpath_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/countersign/countersign/policy"
	"github.com/countersign/countersign/policy/internal/fastpath"
)

// The fast path as package policy uses it: one cache per Engine, asked
// through Manager, configured by FastPathOptions.

func prefixPolicy(prefix string) string {
	return fmt.Sprintf(`package countersign.authz

default allow := false

allow if startswith(input.resource.key, %q)

reason := sprintf("%%s is not under %s", [input.resource.key]) if not allow
`, prefix, prefix)
}

// TestFastPathCacheInvalidatedOnReload: a reload swaps in an Engine with an
// empty cache; a residual of the old policy never decides again.
func TestFastPathCacheInvalidatedOnReload(t *testing.T) {
	fastpath.BuildAtFirstSighting(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "authz.rego")
	writeFile(t, file, prefixPolicy("wh/a/"))
	var hits, misses atomic.Int64
	ctx := context.Background()
	m, err := policy.NewManager(ctx, policy.SourceConfig{Paths: []string{dir}}, policy.ManagerOptions{OnCache: func(hit bool) {
		if hit {
			hits.Add(1)
		} else {
			misses.Add(1)
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	in := fastpath.ScanInputs(3)
	for i, k := range []string{"wh/a/1.parquet", "wh/a/2.parquet", "wh/a/3.parquet"} {
		in[i].Resource.Key = k
	}
	for _, x := range in {
		d, err := m.Authorize(ctx, x)
		if err != nil || !d.Allow {
			t.Fatalf("old policy: %+v %v", d, err)
		}
	}
	if hits.Load() != 3 || misses.Load() != 1 { // the first decision built the scope
		t.Fatalf("old policy: %d hits, %d misses", hits.Load(), misses.Load())
	}
	oldRev := m.Revision()

	writeFile(t, file, prefixPolicy("wh/b/"))
	if err := m.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	if m.Revision() == oldRev {
		t.Fatal("not reloaded")
	}
	hits.Store(0)
	misses.Store(0)
	for _, x := range in {
		d, err := m.Authorize(ctx, x)
		if err != nil || d.Allow || d.Revision == oldRev || !strings.Contains(d.Reason, "is not under wh/b/") {
			t.Fatalf("new policy: %+v %v", d, err)
		}
	}
	if misses.Load() != 1 || hits.Load() != 3 {
		t.Fatalf("new policy: %d hits, %d misses: the old cache answered", hits.Load(), misses.Load())
	}
}

// TestFastPathNotAskedWhenIneligible: a policy with http.send is fully
// evaluated through the Manager, and OnCache is never called.
func TestFastPathNotAskedWhenIneligible(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "authz.rego"), `package countersign.authz
allow if {
	startswith(input.resource.key, "wh/")
	r := http.send({"method": "GET", "url": "http://127.0.0.1:1/", "raise_error": false, "timeout": "50ms"})
	r.status_code == 0
}
`)
	var calls atomic.Int64
	m, err := policy.NewManager(context.Background(), policy.SourceConfig{Paths: []string{dir}}, policy.ManagerOptions{OnCache: func(bool) { calls.Add(1) }})
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range fastpath.ScanInputs(3) {
		d, err := m.Authorize(context.Background(), in)
		if err != nil || !d.Allow {
			t.Fatalf("%+v %v", d, err)
		}
	}
	if calls.Load() != 0 {
		t.Fatalf("OnCache called %d times", calls.Load())
	}
}

// TestFastPathDisabled: FastPathOptions.Disabled leaves every decision to
// the full evaluation.
func TestFastPathDisabled(t *testing.T) {
	ctx := context.Background()
	paths := []string{filepath.Join(fastpath.ExamplesRoot, "lib"), filepath.Join(fastpath.ExamplesRoot, "grants")}
	off, err := policy.Load(ctx, policy.Options{Paths: paths, FastPath: policy.FastPathOptions{Disabled: true}})
	if err != nil {
		t.Fatal(err)
	}
	if on, why := off.FastPath(); on || why != "disabled" {
		t.Fatalf("fast path %v (%s)", on, why)
	}
	calls := 0
	on, err := policy.Load(ctx, policy.Options{Paths: paths, OnCache: func(bool) { calls++ }})
	if err != nil {
		t.Fatal(err)
	}
	if ok, why := on.FastPath(); !ok {
		t.Fatalf("fast path off by default: %s", why)
	}
	for _, in := range fastpath.GeneratedInputs(t, 5, 20) {
		want, werr := on.Authorize(ctx, in)
		got, gerr := off.Authorize(ctx, in)
		if (werr != nil) != (gerr != nil) || got != want {
			t.Fatalf("disabled: %+v %v, enabled: %+v %v", got, gerr, want, werr)
		}
	}
	if calls != 20 {
		t.Fatalf("OnCache called %d times for 20 decisions", calls)
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}
