package policy

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/bundle"
	"github.com/open-policy-agent/opa/v1/loader"
)

// ErrNoPolicy is Authorize's error while no policy is loaded. The server
// refuses the request (503): nothing is signed without a decision.
var ErrNoPolicy = errors.New("policy: no policy loaded")

// ManagerOptions configures a Manager beyond its source.
type ManagerOptions struct {
	// FS, if set, is loaded once instead of the SourceConfig and never
	// reloaded (the embedded policy of serve -dev).
	FS fs.FS
	// FSPaths are the paths in FS loaded together (default ".").
	FSPaths []string
	// Logger receives reload successes (info) and failures (error, with
	// the file and line of a compile error). Default: discard.
	Logger *slog.Logger
	// OnReload is called after a changed policy was loaded and swapped in,
	// with its revision (not for the initial load: see Revision). Hooks
	// run on the polling goroutine, or on the caller's of Reload.
	OnReload func(revision string)
	// OnReloadError is called when a changed policy was rejected (compile
	// error, bad signature, unreachable bundle server, unreadable file);
	// the previous policy keeps serving. A rejected file or bundle that
	// stays the same is reported once; a failing download, at every poll.
	OnReloadError func(error)
	// Sleep waits out the settle interval between two reads of changed
	// policy files (see SourceConfig.SettleInterval); it returns ctx's
	// error if ctx ends first. Default: a timer. Tests inject it to
	// change files at a known point instead of sleeping.
	Sleep func(ctx context.Context, d time.Duration) error
	// HTTPClient fetches bundle.url. Default: a client with
	// bundle.timeout.
	HTTPClient *http.Client
	// FastPath configures the per-scope cache of partially evaluated
	// policies of every policy the Manager loads (on by default; a reload
	// starts with an empty cache).
	FastPath FastPathOptions
	// OnCache, if set, is called once per decision the fast path was asked
	// for: hit is true when the scope's cached residual policy decided, false
	// when the decision needed a full evaluation (no residual for the scope
	// yet, a residual the fast path cannot evaluate, or an object it could
	// not decide exactly). Not called for policies that are always fully
	// evaluated. It runs on the request's goroutine: keep it to a counter
	// increment.
	OnCache func(hit bool)
	// OnRemembered, if set, is called once per decision a cached residual
	// was there for: hit is true when a remembered decision answered
	// (the object was decided recently, see the package documentation),
	// false when the residual was evaluated. Keep it to a counter
	// increment too.
	OnRemembered func(hit bool)
	// OnScopeFallback, if set, is called when Scope compiled a scope
	// wider in key than the policy (an action granted bucket-wide, see
	// Scope.Wider),
	// with the query's access class ("" for all).
	OnScopeFallback func(access string)
}

// Status describes the Manager's current policy and its last failure, for
// readiness checks and metrics.
type Status struct {
	// Source names where the policy comes from ("paths ...", "bundle ...").
	Source string
	// Revision of the policy in force; empty while none is loaded.
	Revision string
	// LoadedAt is when that policy was loaded.
	LoadedAt time.Time
	// LastError is the most recent failed load, nil once a later load
	// succeeded.
	LastError error
	// LastErrorAt is when LastError happened.
	LastErrorAt time.Time
}

// Manager is the Authorizer the server uses: it delegates every decision
// to the current Engine, and replaces that Engine when the policy source
// changes. A changed policy that fails to load is rejected and the last
// good one keeps serving. The hot path takes no lock: the Engine is read
// from an atomic pointer, and a request that started on the old Engine
// finishes on it.
//
// The zero Manager has no policy: Authorize returns ErrNoPolicy.
type Manager struct {
	engine atomic.Pointer[Engine]

	src    SourceConfig
	source string // src described, for logs and Status
	opts   ManagerOptions
	log    *slog.Logger
	verify *bundle.VerificationConfig
	client *http.Client
	settle time.Duration
	sleep  func(context.Context, time.Duration) error
	// readFile reads one policy file (os.ReadFile; tests substitute it to
	// prove that what is compiled is what was read and hashed).
	readFile func(string) ([]byte, error)

	reloadMu sync.Mutex // serializes loads; guards the change detection below
	seenHash string     // content hash of the last input processed (loaded or rejected)
	etag     string     // bundle.url: ETag of the last response processed

	statusMu sync.Mutex
	status   Status

	lifeMu sync.Mutex
	cancel context.CancelFunc
	done   chan struct{}
	closed bool
}

// NewManager validates src and loads the policy once. Any error — invalid
// configuration, unreadable key, compile error (naming file and line), bad
// signature, unreachable bundle server — is returned: countersign must not
// start without its policy. Call Start to begin watching for changes.
func NewManager(ctx context.Context, src SourceConfig, opts ManagerOptions) (*Manager, error) {
	m := &Manager{src: src, opts: opts, log: opts.Logger, sleep: opts.Sleep, readFile: os.ReadFile}
	if m.sleep == nil {
		m.sleep = sleepCtx
	}
	m.settle = cmp.Or(src.SettleInterval, DefaultSettleInterval)
	if m.log == nil {
		m.log = slog.New(slog.DiscardHandler)
	}
	if opts.FS != nil {
		m.source = "embedded policy"
		m.status.Source = m.source
		e, err := Load(ctx, Options{FS: opts.FS, Paths: opts.FSPaths, FastPath: opts.FastPath, OnCache: opts.OnCache, OnRemembered: opts.OnRemembered})
		if err != nil {
			return nil, err
		}
		m.swap(e)
		return m, nil
	}
	if err := src.Validate(); err != nil {
		return nil, err
	}
	m.source = src.describe()
	m.status.Source = m.source
	verify, err := verificationConfig(src.Bundle.Verification)
	if err != nil {
		return nil, err
	}
	m.verify = verify
	m.client = opts.HTTPClient
	if m.client == nil {
		timeout := src.Bundle.Timeout
		if timeout == 0 {
			timeout = DefaultBundleTimeout
		}
		m.client = &http.Client{Timeout: timeout}
	}
	if _, err := m.load(ctx); err != nil {
		return nil, err
	}
	return m, nil
}

// Authorize decides one input with the current policy. The Decision
// carries the revision of the Engine that decided.
func (m *Manager) Authorize(ctx context.Context, in *Input) (Decision, error) {
	e := m.engine.Load()
	if e == nil {
		return Decision{}, ErrNoPolicy
	}
	return e.Authorize(ctx, in)
}

// Revision is the revision of the policy in force, empty if none.
func (m *Manager) Revision() string {
	if e := m.engine.Load(); e != nil {
		return e.Revision()
	}
	return ""
}

// Status reports the policy in force and the last failure.
func (m *Manager) Status() Status {
	m.statusMu.Lock()
	defer m.statusMu.Unlock()
	return m.status
}

// Start watches the source in the background until ctx ends or Close:
// paths and bundle.file every reload_interval, bundle.url every
// bundle.poll_interval. It does nothing for an embedded policy or when
// already started.
func (m *Manager) Start(ctx context.Context) {
	m.lifeMu.Lock()
	defer m.lifeMu.Unlock()
	if m.opts.FS != nil || m.source == "" || m.done != nil || m.closed {
		return // embedded, zero Manager, already started, or closed
	}
	interval := m.src.ReloadInterval
	if interval == 0 {
		interval = DefaultReloadInterval
	}
	if m.src.Bundle.URL != "" {
		interval = m.src.Bundle.PollInterval
		if interval == 0 {
			interval = DefaultPollInterval
		}
	}
	ctx, m.cancel = context.WithCancel(ctx)
	m.done = make(chan struct{})
	go m.poll(ctx, interval, m.done)
}

func (m *Manager) poll(ctx context.Context, interval time.Duration, done chan struct{}) {
	defer close(done)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			_ = m.Reload(ctx)
		}
	}
}

// Close stops watching and waits for a reload in progress to end. The
// policy in force keeps answering Authorize.
func (m *Manager) Close() error {
	m.lifeMu.Lock()
	m.closed = true
	cancel, done := m.cancel, m.done
	m.lifeMu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
	return nil
}

// Reload checks the source now and loads it if it changed (Start does this
// periodically; call it directly on SIGHUP, say). A rejected policy is
// logged, recorded in Status and reported to OnReloadError, and returned;
// the previous policy keeps serving.
func (m *Manager) Reload(ctx context.Context) error {
	if m.opts.FS != nil || m.source == "" {
		return nil // embedded policy, or the zero Manager
	}
	changed, err := m.load(ctx)
	switch {
	case err != nil && ctx.Err() != nil:
		return err // shutting down: not a policy failure
	case err != nil:
		m.statusMu.Lock()
		m.status.LastError, m.status.LastErrorAt = err, time.Now()
		m.statusMu.Unlock()
		attrs := []any{"source", m.source, "serving_revision", m.Revision(), "err", err.Error()}
		if loc := errorLocation(err); loc != "" {
			attrs = append(attrs, "location", loc)
		}
		m.log.Error("policy reload rejected; the previous policy keeps serving", attrs...)
		if m.opts.OnReloadError != nil {
			m.opts.OnReloadError(err)
		}
		return err
	case changed != "":
		m.log.Info("policy reloaded", "source", m.source, "revision", changed)
		if m.opts.OnReload != nil {
			m.opts.OnReload(changed)
		}
	}
	return nil
}

// load reads the source and, if its content differs from the last one
// processed, compiles and swaps it in. It returns the new revision, or ""
// when nothing changed.
func (m *Manager) load(ctx context.Context) (string, error) {
	m.reloadMu.Lock()
	defer m.reloadMu.Unlock()

	var (
		e   *Engine
		sum string
		err error
	)
	switch {
	case m.src.Bundle.URL != "":
		var body []byte
		var etag string
		body, etag, err = fetchBundle(ctx, m.client, m.src.Bundle.URL, m.etag)
		if errors.Is(err, errNotModified) {
			return "", nil
		}
		if err != nil {
			return "", err
		}
		sum = contentHash(body)
		if sum == m.seenHash {
			m.etag = etag
			return "", nil
		}
		m.seenHash, m.etag = sum, etag
		e, err = readBundle(ctx, "bundle "+redactURL(m.src.Bundle.URL), body, m.verify, m.engineOptions())
	case m.src.Bundle.File != "":
		var data []byte
		data, sum, err = settled(ctx, m, "bundle.file "+m.src.Bundle.File, func() ([]byte, string, error) {
			data, err := m.readFile(m.src.Bundle.File)
			if err != nil {
				return nil, "", fmt.Errorf("policy: bundle.file: %w", err)
			}
			return data, contentHash(data), nil
		})
		if err != nil || sum == m.seenHash {
			return "", err
		}
		m.seenHash = sum
		e, err = readBundle(ctx, "bundle "+m.src.Bundle.File, data, m.verify, m.engineOptions())
	default:
		var s *snapshot
		s, sum, err = settled(ctx, m, "policy.paths", func() (*snapshot, string, error) {
			s, err := readSnapshot(m.src.Paths, m.readFile)
			if err != nil {
				return nil, "", fmt.Errorf("policy: reading paths: %w", err)
			}
			return s, s.hash, nil
		})
		if err != nil || sum == m.seenHash {
			return "", err
		}
		m.seenHash = sum
		e, err = s.compile(ctx, m.engineOptions())
		if err == nil && s.tests {
			err = s.runTests(ctx)
		}
	}
	if err != nil {
		return "", err
	}
	cur := m.engine.Load()
	if cur != nil && cur.content == e.content {
		// Same policy and data (a file rewritten identically, a data file
		// reformatted, a bundle rebuilt from the same sources).
		m.clearError()
		return "", nil
	}
	if cur != nil && cur.revision == e.revision {
		m.log.Warn("policy content changed but its revision did not; decisions keep naming the old revision",
			"source", m.source, "revision", e.revision)
	}
	m.swap(e)
	return e.Revision(), nil
}

func (m *Manager) engineOptions() engineOptions {
	return engineOptions{fast: m.opts.FastPath, onCache: m.opts.OnCache, onRemembered: m.opts.OnRemembered}
}

func (m *Manager) swap(e *Engine) {
	if on, why := e.FastPath(); !on && !m.opts.FastPath.Disabled {
		m.log.Warn("policy fast path off: every decision is a full evaluation", "revision", e.Revision(), "why", why)
	}
	m.engine.Store(e)
	m.statusMu.Lock()
	m.status.Revision, m.status.LoadedAt = e.Revision(), time.Now()
	m.status.LastError, m.status.LastErrorAt = nil, time.Time{}
	m.statusMu.Unlock()
}

func (m *Manager) clearError() {
	m.statusMu.Lock()
	m.status.LastError, m.status.LastErrorAt = nil, time.Time{}
	m.statusMu.Unlock()
}

// errorLocation is "file:line" of the first compile or parse error in err.
func errorLocation(err error) string {
	var errs ast.Errors
	if errors.As(err, &errs) {
		for _, e := range errs {
			if e.Location != nil {
				return fmt.Sprintf("%s:%d", e.Location.File, e.Location.Row)
			}
		}
	}
	var le loader.Errors
	if errors.As(err, &le) {
		for _, e := range le {
			if loc := errorLocation(e); loc != "" {
				return loc
			}
		}
	}
	var ae *ast.Error
	if errors.As(err, &ae) && ae.Location != nil {
		return fmt.Sprintf("%s:%d", ae.Location.File, ae.Location.Row)
	}
	return ""
}

// maxSettleRounds bounds how long settled waits for files that keep
// changing: the change is reported, and tried again at the next poll.
const maxSettleRounds = 10

// settled reads the source with read and, when it differs from the last
// input processed, reads it again after the settle interval until two
// reads agree: a file being written (truncated, then filled in) is not
// loaded half-way. It returns the last read, whose bytes are the ones
// hashed; the caller compiles exactly those.
func settled[T any](ctx context.Context, m *Manager, what string, read func() (T, string, error)) (T, string, error) {
	v, sum, err := read()
	if err != nil || sum == m.seenHash {
		return v, sum, err
	}
	for range maxSettleRounds {
		if err := m.sleep(ctx, m.settle); err != nil {
			var zero T
			return zero, "", err
		}
		next, nextSum, err := read()
		if err != nil {
			return next, nextSum, err
		}
		if nextSum == sum {
			return next, nextSum, nil
		}
		v, sum = next, nextSum
	}
	var zero T
	return zero, "", fmt.Errorf("policy: %s kept changing for %d settle intervals of %s; it is loaded once it stays unchanged for one (write a new file and rename it into place, or use a bundle)", what, maxSettleRounds, m.settle)
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Scope compiles what q.Principal may reach with the policy in force (see
// Engine.Scope). A scope wider in key than the policy (an action granted
// bucket-wide, Scope.Wider) is logged and reported to
// ManagerOptions.OnScopeFallback.
func (m *Manager) Scope(ctx context.Context, q ScopeQuery) (Scope, error) {
	e := m.engine.Load()
	if e == nil {
		return Scope{}, ErrNoPolicy
	}
	s, err := e.Scope(ctx, q)
	if err != nil {
		return s, err
	}
	if s.Wider() && !q.Exact {
		m.log.Warn("policy scope not expressible as key prefixes: granted bucket-wide, every request still decided per object",
			"principal", q.Principal.ID, "access", q.Access, "bucket", q.Bucket, "prefix", q.Prefix, "why", s.Why, "revision", s.Revision)
		if m.opts.OnScopeFallback != nil {
			m.opts.OnScopeFallback(q.Access)
		}
	}
	return s, nil
}
