package policy_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/goccy/go-yaml"
	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/bundle"

	"github.com/countersign/countersign/internal/syncbuf"
	"github.com/countersign/countersign/policy"
)

// allowBucket is a policy allowing reads of one bucket.
func allowBucket(b string) string {
	return fmt.Sprintf(`package countersign.authz

default allow := false

allow if input.resource.bucket == %q

reason := "wrong bucket" if not allow
`, b)
}

func read(bucket string) *policy.Input {
	return &policy.Input{
		Version: 1, Operation: "GetObject", Action: "s3:GetObject", Access: "read",
		Resource: policy.Resource{Bucket: bucket, Key: "k", ARN: "arn:aws:s3:::" + bucket + "/k"},
	}
}

// writeAtomic replaces a file the way a deployment tool (or a Kubernetes
// ConfigMap update) does: the poller never sees half a file.
func writeAtomic(t testing.TB, path, content string) {
	t.Helper()
	tmp := filepath.Join(filepath.Dir(path), ".tmp-"+filepath.Base(path))
	if err := os.WriteFile(tmp, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func allows(t testing.TB, m *policy.Manager, bucket string) bool {
	t.Helper()
	d, err := m.Authorize(context.Background(), read(bucket))
	if err != nil {
		t.Fatal(err)
	}
	if d.Revision == "" {
		t.Fatal("decision without revision")
	}
	return d.Allow
}

// hooks records the Manager's callbacks.
type hooks struct {
	mu      sync.Mutex
	reloads []string
	errs    []error
}

func (h *hooks) options(log *slog.Logger) policy.ManagerOptions {
	return policy.ManagerOptions{
		Logger: log,
		OnReload: func(rev string) {
			h.mu.Lock()
			h.reloads = append(h.reloads, rev)
			h.mu.Unlock()
		},
		OnReloadError: func(err error) {
			h.mu.Lock()
			h.errs = append(h.errs, err)
			h.mu.Unlock()
		},
	}
}

func (h *hooks) counts() (reloads, errs int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.reloads), len(h.errs)
}

func (h *hooks) lastErr() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.errs) == 0 {
		return nil
	}
	return h.errs[len(h.errs)-1]
}

func TestZeroManagerFailsClosed(t *testing.T) {
	var m policy.Manager
	d, err := m.Authorize(context.Background(), read("a"))
	if !errors.Is(err, policy.ErrNoPolicy) || d.Allow {
		t.Fatalf("got %+v, %v; want ErrNoPolicy and no allow", d, err)
	}
	if m.Revision() != "" || m.Status().Revision != "" {
		t.Fatal("zero Manager reports a revision")
	}
	if err := m.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	m.Start(context.Background())
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestManagerStartupErrorIsTheCompileError(t *testing.T) {
	dir := t.TempDir()
	writeAtomic(t, filepath.Join(dir, "authz.rego"), "package countersign.authz\n\nallow if input.x == == 1\n\nreason := \"x\"\n")
	_, err := policy.NewManager(context.Background(), policy.SourceConfig{Paths: []string{dir}, SettleInterval: testSettle}, policy.ManagerOptions{})
	if err == nil || !strings.Contains(err.Error(), "authz.rego:3") {
		t.Fatalf("want a parse error naming authz.rego:3, got %v", err)
	}

	writeAtomic(t, filepath.Join(dir, "authz.rego"), "package countersign.authz\n\nreason := \"x\"\n")
	_, err = policy.NewManager(context.Background(), policy.SourceConfig{Paths: []string{dir}, SettleInterval: testSettle}, policy.ManagerOptions{})
	if err == nil || !strings.Contains(err.Error(), "has no rule allow") {
		t.Fatalf("want 'no rule allow', got %v", err)
	}

	_, err = policy.NewManager(context.Background(), policy.SourceConfig{}, policy.ManagerOptions{})
	if err == nil || !strings.Contains(err.Error(), "set exactly one of paths, bundle.url, bundle.file") {
		t.Fatalf("empty source: %v", err)
	}
}

// startWatching starts a manager on a directory whose authz.rego allows
// bucket a, polling it every interval, with hooks and a JSON log to read;
// it is closed when the test ends.
func startWatching(t *testing.T, interval time.Duration) (_ *policy.Manager, dir string, _ *hooks, logs *syncbuf.Buffer) {
	t.Helper()
	dir = t.TempDir()
	writeAtomic(t, filepath.Join(dir, "authz.rego"), allowBucket("a"))
	h, logs := new(hooks), new(syncbuf.Buffer)
	m, err := policy.NewManager(context.Background(), policy.SourceConfig{Paths: []string{dir}, SettleInterval: testSettle, ReloadInterval: interval},
		h.options(slog.New(slog.NewJSONHandler(logs, nil))))
	if err != nil {
		t.Fatal(err)
	}
	m.Start(context.Background())
	t.Cleanup(func() { m.Close() })
	return m, dir, h, logs
}

func TestManagerHotReload(t *testing.T) {
	m, dir, h, logs := startWatching(t, 10*time.Millisecond)
	file := filepath.Join(dir, "authz.rego")
	rev1 := m.Revision()
	if !allows(t, m, "a") || allows(t, m, "b") {
		t.Fatal("initial policy not in force")
	}
	if st := m.Status(); st.Revision != rev1 || st.LoadedAt.IsZero() || st.LastError != nil || !strings.HasPrefix(st.Source, "paths ") {
		t.Fatalf("status %+v", st)
	}

	// A valid new policy takes effect without a restart.
	writeAtomic(t, file, allowBucket("b"))
	eventually(t, "the new policy", func() bool { return allows(t, m, "b") })
	if allows(t, m, "a") {
		t.Fatal("old policy still partly in force")
	}
	rev2 := m.Revision()
	d, _ := m.Authorize(context.Background(), read("b"))
	if rev2 == rev1 || d.Revision != rev2 || m.Status().Revision != rev2 {
		t.Fatalf("revisions: %s -> %s, decision %s", rev1, rev2, d.Revision)
	}
	eventually(t, "the OnReload hook", func() bool { n, _ := h.counts(); return n == 1 })
	if !strings.Contains(logs.String(), `"msg":"policy reloaded"`) {
		t.Errorf("no reload log line: %s", logs.String())
	}

	// A data file change is a policy change too.
	writeAtomic(t, file, `package countersign.authz

default allow := false

allow if input.resource.bucket in data.buckets
`)
	writeAtomic(t, filepath.Join(dir, "data.json"), `{"buckets": ["c"]}`)
	eventually(t, "the data-driven policy", func() bool { return allows(t, m, "c") })
	writeAtomic(t, filepath.Join(dir, "data.json"), `{"buckets": ["d"]}`)
	eventually(t, "the new data", func() bool { return allows(t, m, "d") })
}

func TestManagerKeepsLastGoodPolicy(t *testing.T) {
	m, dir, h, logs := startWatching(t, 10*time.Millisecond)
	file := filepath.Join(dir, "authz.rego")
	good := m.Revision()

	broken := []struct {
		name, rego, want string
	}{
		{"parse error", "package countersign.authz\n\nallow if { input.x = }\n\nreason := \"x\"\n", "authz.rego:3"},
		{"compile error", "package countersign.authz\n\nallow if undefined_function(input.x)\n", "authz.rego:3"},
		{"no allow rule", "package countersign.authz\n\nreason := \"x\"\n", "has no rule allow"},
		{"wrong package", "package something.else\n\nallow := true\n", "no module declares package countersign.authz"},
	}
	for i, tc := range broken {
		writeAtomic(t, file, tc.rego)
		eventually(t, tc.name+" rejected", func() bool { _, n := h.counts(); return n == i+1 })
		if err := h.lastErr(); !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: hook got %v, want %q", tc.name, err, tc.want)
		}
		st := m.Status()
		if st.LastError == nil || !strings.Contains(st.LastError.Error(), tc.want) || st.LastErrorAt.IsZero() {
			t.Errorf("%s: status %+v", tc.name, st)
		}
		// Decisions unchanged: the last good policy keeps serving.
		if !allows(t, m, "a") || allows(t, m, "b") || m.Revision() != good || st.Revision != good {
			t.Fatalf("%s: the last good policy is no longer in force", tc.name)
		}
	}
	if !strings.Contains(logs.String(), "policy reload rejected") || !strings.Contains(logs.String(), `"location":"`) {
		t.Errorf("log lacks the rejection or its location: %s", logs.String())
	}

	// A broken file that stays broken is reported once, not every poll.
	time.Sleep(100 * time.Millisecond)
	if _, n := h.counts(); n != len(broken) {
		t.Errorf("unchanged broken policy reported %d times, want %d", n, len(broken))
	}

	// Fixing it loads it and clears the error.
	writeAtomic(t, file, allowBucket("b"))
	eventually(t, "the fixed policy", func() bool { return allows(t, m, "b") })
	if st := m.Status(); st.LastError != nil {
		t.Errorf("error not cleared: %+v", st)
	}

	// A vanished path is an error too, and the policy keeps serving.
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	eventually(t, "missing path reported", func() bool { _, n := h.counts(); return n > len(broken) })
	if !allows(t, m, "b") {
		t.Fatal("policy dropped when its directory vanished")
	}
}

func TestManagerUnchangedContentDoesNotReload(t *testing.T) {
	m, dir, h, _ := startWatching(t, 5*time.Millisecond)
	file := filepath.Join(dir, "authz.rego")
	loadedAt := m.Status().LoadedAt

	// Rewritten with the same bytes (new mtime), a test file added, a
	// hidden file and an unrelated file added: none changes the policy.
	writeAtomic(t, file, allowBucket("a"))
	writeAtomic(t, filepath.Join(dir, "authz_test.rego"), "package countersign.authz_test\n\ntest_x if true\n")
	writeAtomic(t, filepath.Join(dir, ".hidden.rego"), "this is not rego")
	writeAtomic(t, filepath.Join(dir, "README.md"), "# notes")
	time.Sleep(150 * time.Millisecond)
	if n, e := h.counts(); n != 0 || e != 0 {
		t.Fatalf("reloads %d, errors %d; want none", n, e)
	}
	if m.Status().LoadedAt != loadedAt {
		t.Fatal("policy was swapped")
	}
}

func TestManagerCloseStopsPolling(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "authz.rego")
	writeAtomic(t, file, allowBucket("a"))
	var h hooks
	m, err := policy.NewManager(context.Background(), policy.SourceConfig{Paths: []string{dir}, SettleInterval: testSettle, ReloadInterval: 5 * time.Millisecond}, h.options(nil))
	if err != nil {
		t.Fatal(err)
	}
	m.Start(context.Background())
	m.Start(context.Background()) // idempotent
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	writeAtomic(t, file, allowBucket("b"))
	time.Sleep(100 * time.Millisecond)
	if !allows(t, m, "a") {
		t.Fatal("reloaded after Close")
	}
	// An explicit Reload still works (SIGHUP).
	if err := m.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !allows(t, m, "b") {
		t.Fatal("Reload did not load the change")
	}
	m.Start(context.Background()) // after Close: no-op
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestManagerSwapUnderLoad: decisions keep flowing, without error, while
// the policy is swapped again and again; each decision carries the
// revision of one of the policies, and agrees with that policy.
func TestManagerSwapUnderLoad(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "authz.rego")
	writeAtomic(t, file, allowBucket("a"))
	m, err := policy.NewManager(context.Background(), policy.SourceConfig{Paths: []string{dir}, SettleInterval: testSettle}, policy.ManagerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	revA := m.Revision()
	writeAtomic(t, file, allowBucket("b"))
	if err := m.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	revB := m.Revision()

	var stop atomic.Bool
	var wg sync.WaitGroup
	var decided atomic.Int64
	errc := make(chan error, 8)
	for range 4 {
		wg.Go(func() {
			for !stop.Load() {
				d, err := m.Authorize(context.Background(), read("a"))
				switch {
				case err != nil:
					errc <- err
					return
				case d.Revision == revA && !d.Allow, d.Revision == revB && d.Allow:
					errc <- fmt.Errorf("decision %+v disagrees with its revision", d)
					return
				case d.Revision != revA && d.Revision != revB:
					errc <- fmt.Errorf("unknown revision %q", d.Revision)
					return
				}
				decided.Add(1)
			}
		})
	}
	for i := range 20 {
		writeAtomic(t, file, allowBucket([]string{"a", "b"}[i%2]))
		if err := m.Reload(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	stop.Store(true)
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Error(err)
	}
	if decided.Load() == 0 {
		t.Fatal("no decisions made")
	}
}

func TestEmbeddedFSNeverReloads(t *testing.T) {
	dir := t.TempDir()
	writeAtomic(t, filepath.Join(dir, "authz.rego"), allowBucket("a"))
	m, err := policy.NewManager(context.Background(), policy.SourceConfig{}, policy.ManagerOptions{FS: os.DirFS(dir)})
	if err != nil {
		t.Fatal(err)
	}
	m.Start(context.Background())
	defer m.Close()
	if !allows(t, m, "a") || m.Status().Source != "embedded policy" {
		t.Fatalf("status %+v", m.Status())
	}
	if err := m.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestSourceValidate(t *testing.T) {
	cases := []struct {
		cfg  policy.SourceConfig
		want string
	}{
		{policy.SourceConfig{}, "policy: set exactly one of paths, bundle.url, bundle.file"},
		{policy.SourceConfig{Paths: []string{"p"}, Bundle: policy.BundleConfig{File: "b.tar.gz"}}, "set exactly one of"},
		{policy.SourceConfig{Bundle: policy.BundleConfig{URL: "https://x/b.tar.gz", File: "b.tar.gz"}}, "set exactly one of"},
		{policy.SourceConfig{Paths: []string{""}}, "policy: paths[0] is empty"},
		{policy.SourceConfig{Paths: []string{"p"}, ReloadInterval: -time.Second}, "policy: reload_interval"},
		{policy.SourceConfig{Paths: []string{"p"}, Bundle: policy.BundleConfig{PollInterval: time.Second}}, "bundle.poll_interval and bundle.timeout apply only to bundle.url"},
		{policy.SourceConfig{Bundle: policy.BundleConfig{URL: "https://x/b", PollInterval: -1}}, "policy: bundle.poll_interval must not be negative"},
		{policy.SourceConfig{Bundle: policy.BundleConfig{URL: "ftp://x/b"}}, "policy: bundle.url must be an http:// or https:// URL"},
		{policy.SourceConfig{Bundle: policy.BundleConfig{URL: "https:///b"}}, "policy: bundle.url has no host"},
		{policy.SourceConfig{Bundle: policy.BundleConfig{URL: "https://u:p@x/b"}}, "policy: bundle.url must not carry credentials"},
		{policy.SourceConfig{Paths: []string{"p"}, Bundle: policy.BundleConfig{Verification: &policy.BundleVerification{PublicKeyFile: "k"}}}, "policy: bundle.verification applies only to bundle.url or bundle.file"},
		{policy.SourceConfig{Bundle: policy.BundleConfig{File: "b", Verification: &policy.BundleVerification{}}}, "policy: bundle.verification.public_key_file is required"},
		{policy.SourceConfig{Bundle: policy.BundleConfig{File: "b", Verification: &policy.BundleVerification{PublicKeyFile: "k", Algorithm: "none"}}}, `policy: bundle.verification.algorithm "none" is not supported`},
		{policy.SourceConfig{Paths: []string{"p"}}, ""},
		{policy.SourceConfig{Bundle: policy.BundleConfig{URL: "https://bundles.example/countersign.tar.gz?X-Amz-Signature=s", PollInterval: time.Minute}}, ""},
		{policy.SourceConfig{Bundle: policy.BundleConfig{File: "b.tar.gz", Verification: &policy.BundleVerification{PublicKeyFile: "k", Algorithm: "ES256"}}}, ""},
	}
	for _, tc := range cases {
		err := tc.cfg.Validate()
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%+v: got %v, want %q", tc.cfg, err, tc.want)
		}
	}
}

// --- bundles ----------------------------------------------------------------

type signingKey struct {
	privPEM, pubFile string
}

func newSigningKey(t testing.TB) signingKey {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	priv := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(k)})
	pubDER, err := x509.MarshalPKIXPublicKey(&k.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	pubFile := filepath.Join(t.TempDir(), "bundle.pub.pem")
	if err := os.WriteFile(pubFile, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	return signingKey{privPEM: string(priv), pubFile: pubFile}
}

// buildBundle writes a bundle tarball holding rego (and a test module,
// which must be ignored), signed with key unless key is nil.
func buildBundle(t testing.TB, revision, rego string, data map[string]any, key *signingKey) []byte {
	t.Helper()
	mods := []bundle.ModuleFile{}
	for name, src := range map[string]string{
		"/policy/authz.rego":      rego,
		"/policy/authz_test.rego": "package countersign.authz_test\n\ntest_x if true\n",
	} {
		parsed, err := ast.ParseModuleWithOpts(name, src, ast.ParserOptions{RegoVersion: ast.RegoV1})
		if err != nil {
			t.Fatal(err)
		}
		mods = append(mods, bundle.ModuleFile{URL: name, Path: name, Raw: []byte(src), Parsed: parsed})
	}
	if data == nil {
		data = map[string]any{}
	}
	b := bundle.Bundle{Manifest: bundle.Manifest{Revision: revision}, Data: data, Modules: mods}
	if key != nil {
		if err := b.GenerateSignature(bundle.NewSigningConfig(key.privPEM, "RS256", ""), "countersign", false); err != nil {
			t.Fatal(err)
		}
	}
	var buf bytes.Buffer
	if err := bundle.NewWriter(&buf).Write(b); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// bundleServer serves one bundle at a time with an ETag, like nginx or an
// object store, counting requests and 304s.
type bundleServer struct {
	mu          sync.Mutex
	body        []byte
	status      int
	requests    int
	notModified int
	*httptest.Server
}

func newBundleServer(t testing.TB, body []byte) *bundleServer {
	s := &bundleServer{body: body, status: http.StatusOK}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.requests++
		if s.status != http.StatusOK {
			http.Error(w, "unavailable", s.status)
			return
		}
		etag := fmt.Sprintf(`"%x"`, len(s.body)) + fmt.Sprintf(`-%x`, s.body[len(s.body)-8:])
		if r.Header.Get("If-None-Match") == etag {
			s.notModified++
			w.WriteHeader(http.StatusNotModified)
			return
		}
		w.Header().Set("ETag", etag)
		w.Header().Set("Content-Type", "application/gzip")
		_, _ = w.Write(s.body)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *bundleServer) set(body []byte, status int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.body, s.status = body, status
}

func (s *bundleServer) counts() (requests, notModified int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests, s.notModified
}

func TestManagerSignedBundleFromHTTP(t *testing.T) {
	ctx := context.Background()
	key := newSigningKey(t)
	srv := newBundleServer(t, buildBundle(t, "v1", allowBucket("a"), nil, &key))
	var h hooks
	var logs syncbuf.Buffer
	src := policy.SourceConfig{Bundle: policy.BundleConfig{
		URL:          srv.URL + "/bundles/countersign.tar.gz?token=secret",
		PollInterval: 10 * time.Millisecond,
		Verification: &policy.BundleVerification{PublicKeyFile: key.pubFile},
	}}
	m, err := policy.NewManager(ctx, src, h.options(slog.New(slog.NewJSONHandler(&logs, nil))))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	d, err := m.Authorize(ctx, read("a"))
	if err != nil || !d.Allow || d.Revision != "v1" {
		t.Fatalf("signed bundle v1: %+v %v", d, err)
	}
	if st := m.Status(); st.Source != "bundle "+srv.URL+"/bundles/countersign.tar.gz?REDACTED" {
		t.Errorf("source %q", st.Source)
	}

	// Unchanged: the server answers 304 to If-None-Match.
	if err := m.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	if _, n304 := srv.counts(); n304 != 1 {
		t.Fatalf("304s: %d, want 1", n304)
	}

	// A new signed bundle is picked up by polling.
	m.Start(ctx)
	srv.set(buildBundle(t, "v2", allowBucket("b"), nil, &key), http.StatusOK)
	eventually(t, "bundle v2", func() bool { return m.Revision() == "v2" })
	if !allows(t, m, "b") || allows(t, m, "a") {
		t.Fatal("v2 not in force")
	}
	m.Close()

	// Rejected, with v2 serving on: a bundle signed by another key, a
	// tampered bundle, an unsigned bundle, a bundle that does not compile,
	// an unavailable server.
	other := newSigningKey(t)
	signed := buildBundle(t, "v3", allowBucket("c"), nil, &key)
	tampered := tamper(t, signed, "policy/authz.rego", allowBucket("evil"))
	rejects := []struct {
		name   string
		body   []byte
		status int
		want   string
	}{
		{"wrong key", buildBundle(t, "v3", allowBucket("c"), nil, &other), 200, "failed to verify JWT signature"},
		{"tampered", tampered, 200, "digest mismatch"},
		{"unsigned", buildBundle(t, "v3", allowBucket("c"), nil, nil), 200, "bundle missing .signatures.json file"},
		{"broken rego", buildBundle(t, "v3", "package countersign.authz\n\nallow if nope(input)\n", nil, &key), 200, "authz.rego:3"},
		{"server error", signed, http.StatusServiceUnavailable, "HTTP 503"},
	}
	for _, tc := range rejects {
		_, before := h.counts()
		srv.set(tc.body, tc.status)
		err := m.Reload(ctx)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want %q", tc.name, err, tc.want)
		}
		if _, after := h.counts(); after != before+1 {
			t.Errorf("%s: OnReloadError not called", tc.name)
		}
		if m.Revision() != "v2" || !allows(t, m, "b") || allows(t, m, "evil") {
			t.Fatalf("%s: v2 no longer in force (revision %s)", tc.name, m.Revision())
		}
		if st := m.Status(); st.LastError == nil || st.Revision != "v2" {
			t.Errorf("%s: status %+v", tc.name, st)
		}
	}
	if strings.Contains(logs.String(), "token=secret") {
		t.Errorf("the bundle URL's query reached the log: %s", logs.String())
	}

	// The rejected bundle is not re-verified on every poll: its ETag is
	// remembered, the server answers 304.
	srv.set(tampered, http.StatusOK)
	_ = m.Reload(ctx)
	_, before := srv.counts()
	if err := m.Reload(ctx); err != nil {
		t.Fatalf("unchanged rejected bundle reported again: %v", err)
	}
	if _, after := srv.counts(); after != before+1 {
		t.Errorf("304s %d -> %d", before, after)
	}

	// Recovery.
	srv.set(signed, http.StatusOK)
	if err := m.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	if m.Revision() != "v3" || !allows(t, m, "c") || m.Status().LastError != nil {
		t.Fatalf("v3: %+v", m.Status())
	}
}

func TestManagerBundleStartup(t *testing.T) {
	ctx := context.Background()
	key := newSigningKey(t)

	// Unreachable server at startup: no Manager.
	srv := newBundleServer(t, buildBundle(t, "v1", allowBucket("a"), nil, &key))
	url := srv.URL
	srv.Close()
	_, err := policy.NewManager(ctx, policy.SourceConfig{Bundle: policy.BundleConfig{URL: url}}, policy.ManagerOptions{})
	if err == nil || !strings.Contains(err.Error(), "fetching bundle") {
		t.Fatalf("unreachable: %v", err)
	}

	// Bad signature at startup: no Manager.
	other := newSigningKey(t)
	srv = newBundleServer(t, buildBundle(t, "v1", allowBucket("a"), nil, &other))
	_, err = policy.NewManager(ctx, policy.SourceConfig{Bundle: policy.BundleConfig{
		URL: srv.URL, Verification: &policy.BundleVerification{PublicKeyFile: key.pubFile},
	}}, policy.ManagerOptions{})
	if err == nil || !strings.Contains(err.Error(), "verify") {
		t.Fatalf("bad signature: %v", err)
	}

	// A signed bundle without a configured key is refused, not trusted.
	srv = newBundleServer(t, buildBundle(t, "v1", allowBucket("a"), nil, &key))
	_, err = policy.NewManager(ctx, policy.SourceConfig{Bundle: policy.BundleConfig{URL: srv.URL}}, policy.ManagerOptions{})
	if err == nil || !strings.Contains(err.Error(), "verification key not provided") {
		t.Fatalf("signed without key: %v", err)
	}

	// Missing key file.
	_, err = policy.NewManager(ctx, policy.SourceConfig{Bundle: policy.BundleConfig{
		URL: srv.URL, Verification: &policy.BundleVerification{PublicKeyFile: filepath.Join(t.TempDir(), "nope.pem")},
	}}, policy.ManagerOptions{})
	if err == nil || !strings.Contains(err.Error(), "bundle.verification.public_key_file") {
		t.Fatalf("missing key file: %v", err)
	}

	// An unsigned bundle, no verification configured, no manifest
	// revision: accepted, revision is a content hash.
	srv = newBundleServer(t, buildBundle(t, "", allowBucket("a"), nil, nil))
	m, err := policy.NewManager(ctx, policy.SourceConfig{Bundle: policy.BundleConfig{URL: srv.URL}}, policy.ManagerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rev := m.Revision(); len(rev) != 16 || !allows(t, m, "a") {
		t.Fatalf("revision %q", rev)
	}
}

func TestManagerBundleFile(t *testing.T) {
	ctx := context.Background()
	key := newSigningKey(t)
	file := filepath.Join(t.TempDir(), "countersign.tar.gz")
	writeAtomic(t, file, string(buildBundle(t, "r1", "package countersign.authz\n\nallow if input.resource.bucket in data.buckets\n", map[string]any{"buckets": []any{"a"}}, &key)))
	var h hooks
	m, err := policy.NewManager(ctx, policy.SourceConfig{
		ReloadInterval: 10 * time.Millisecond,
		SettleInterval: testSettle,
		Bundle:         policy.BundleConfig{File: file, Verification: &policy.BundleVerification{PublicKeyFile: key.pubFile, KeyID: "countersign"}},
	}, h.options(nil))
	if err != nil {
		t.Fatal(err)
	}
	m.Start(ctx)
	defer m.Close()
	if m.Revision() != "r1" || !allows(t, m, "a") {
		t.Fatalf("r1: %+v", m.Status())
	}
	writeAtomic(t, file, string(buildBundle(t, "r2", allowBucket("b"), nil, &key)))
	eventually(t, "bundle file r2", func() bool { return m.Revision() == "r2" })
	writeAtomic(t, file, string(buildBundle(t, "r3", allowBucket("c"), nil, nil)))
	eventually(t, "unsigned bundle file rejected", func() bool { _, n := h.counts(); return n == 1 })
	if m.Revision() != "r2" || !allows(t, m, "b") {
		t.Fatal("r2 not kept")
	}
}

// tamper rewrites one file of a bundle tarball, keeping its signature.
func tamper(t testing.TB, tarball []byte, name, content string) []byte {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(tarball))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	found := false
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		if strings.TrimPrefix(hdr.Name, "/") == name {
			body, found = []byte(content), true
			hdr.Size = int64(len(body))
		}
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(body); err != nil {
			t.Fatal(err)
		}
	}
	if !found {
		t.Fatalf("%s not in bundle", name)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestManagerKubernetesConfigMap: a ConfigMap volume holds the files twice
// (..2024_x/ and the ..data symlink to it) plus top-level symlinks, and an
// update swaps the ..data symlink. The hidden copies must not load twice,
// and the swap must be picked up.
func TestManagerKubernetesConfigMap(t *testing.T) {
	dir := t.TempDir()
	version := func(name, rego string) {
		if err := os.Mkdir(filepath.Join(dir, name), 0o755); err != nil {
			t.Fatal(err)
		}
		writeAtomic(t, filepath.Join(dir, name, "authz.rego"), rego)
		writeAtomic(t, filepath.Join(dir, name, "data.json"), `{"note": "`+name+`"}`)
		tmp := filepath.Join(dir, "..data_tmp")
		if err := os.Symlink(name, tmp); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, filepath.Join(dir, "..data")); err != nil {
			t.Fatal(err)
		}
	}
	version("..2024_01_01_00_00_00.1", allowBucket("a"))
	for _, f := range []string{"authz.rego", "data.json"} {
		if err := os.Symlink(filepath.Join("..data", f), filepath.Join(dir, f)); err != nil {
			t.Fatal(err)
		}
	}
	m, err := policy.NewManager(context.Background(), policy.SourceConfig{Paths: []string{dir}, SettleInterval: testSettle, ReloadInterval: 10 * time.Millisecond}, policy.ManagerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	m.Start(context.Background())
	defer m.Close()
	if !allows(t, m, "a") {
		t.Fatal("initial ConfigMap policy")
	}
	version("..2024_01_01_00_05_00.2", allowBucket("b"))
	eventually(t, "the updated ConfigMap", func() bool { return allows(t, m, "b") })
}

// TestSourceConfigYAML: the keys as operators write them under policy:.
func TestSourceConfigYAML(t *testing.T) {
	var cfg policy.SourceConfig
	doc := `
bundle:
  url: https://bundles.example/countersign.tar.gz
  poll_interval: 1m
  timeout: 10s
  verification:
    public_key_file: /etc/countersign/bundle.pub.pem
    key_id: prod
    algorithm: ES256
    scope: countersign
`
	if err := yaml.NewDecoder(strings.NewReader(doc), yaml.DisallowUnknownField()).Decode(&cfg); err != nil {
		t.Fatal(err)
	}
	v := cfg.Bundle.Verification
	if cfg.Bundle.URL != "https://bundles.example/countersign.tar.gz" || cfg.Bundle.PollInterval != time.Minute || cfg.Bundle.Timeout != 10*time.Second ||
		v == nil || v.PublicKeyFile != "/etc/countersign/bundle.pub.pem" || v.KeyID != "prod" || v.Algorithm != "ES256" || v.Scope != "countersign" {
		t.Fatalf("%+v %+v", cfg, v)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	cfg = policy.SourceConfig{}
	if err := yaml.NewDecoder(strings.NewReader("paths: [/etc/countersign/policy]\nreload_interval: 2s\n"), yaml.DisallowUnknownField()).Decode(&cfg); err != nil {
		t.Fatal(err)
	}
	if len(cfg.Paths) != 1 || cfg.ReloadInterval != 2*time.Second || cfg.Validate() != nil {
		t.Fatalf("%+v", cfg)
	}
}

// TestManagerBundleSameRevisionNewContent: a bundle republished without a
// new manifest revision still takes effect (the revision is the
// publisher's label; the content decides).
func TestManagerBundleSameRevisionNewContent(t *testing.T) {
	ctx := context.Background()
	srv := newBundleServer(t, buildBundle(t, "v1", allowBucket("a"), nil, nil))
	var logs syncbuf.Buffer
	m, err := policy.NewManager(ctx, policy.SourceConfig{Bundle: policy.BundleConfig{URL: srv.URL}},
		policy.ManagerOptions{Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	srv.set(buildBundle(t, "v1", allowBucket("b"), nil, nil), http.StatusOK)
	if err := m.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	if !allows(t, m, "b") || m.Revision() != "v1" {
		t.Fatal("republished bundle ignored")
	}
	if !strings.Contains(logs.String(), "revision did not") {
		t.Errorf("no warning: %s", logs.String())
	}
}
