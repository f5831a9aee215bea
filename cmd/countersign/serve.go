package main

import (
	"context"
	"crypto/tls"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"runtime/debug"
	"sync/atomic"
	"time"

	"github.com/countersign/countersign/audit"
	"github.com/countersign/countersign/audit/upload"
	"github.com/countersign/countersign/auth"
	"github.com/countersign/countersign/deploy/policies"
	"github.com/countersign/countersign/internal/lograte"
	"github.com/countersign/countersign/metrics"
	"github.com/countersign/countersign/policy"
	"github.com/countersign/countersign/remotesign"
	"github.com/countersign/countersign/s3req"
	"github.com/countersign/countersign/server"
	"github.com/countersign/countersign/signer"
)

// logBurst is how many lines of one warning or error message serve logs
// per second; three, so the canned mode's triple warning shows whole.
const logBurst = 3

func runServe(ctx context.Context, args []string, stdout, stderr io.Writer) (code int) {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	configPath := fs.String("config", "", "YAML configuration file")
	dev := fs.Bool("dev", false, "development mode: embedded defaults, example policy, generated credentials; NOT for production")
	canned := cannedFlag(fs)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	// Warnings and errors repeat per request while a dependency is down
	// (a full audit disk refuses every request): at most logBurst lines a
	// second of each message, the rest counted (lograte).
	logs := lograte.New(slog.NewJSONHandler(stderr, nil), lograte.Options{Interval: time.Second, Burst: logBurst})
	defer logs.Flush(context.Background()) // runs last: the counts of the shutdown too
	log := slog.New(logs)

	if *configPath == "" && !*dev {
		fmt.Fprintln(stderr, "countersign serve: -config FILE is required (or -dev for a local development setup)")
		return 2
	}
	var base Config
	if *dev {
		base = devConfig()
	}
	cfg, err := loadConfig(*configPath, base)
	if err != nil {
		fmt.Fprintln(stderr, "countersign:", err)
		return 1
	}
	if *dev {
		if err := fillDevSecrets(&cfg); err != nil {
			fmt.Fprintln(stderr, "countersign: dev setup:", err)
			return 1
		}
	}
	if err := cfg.validate(*dev); err != nil {
		fmt.Fprintln(stderr, "countersign:", err)
		return 1
	}

	tlsConfig, err := cfg.TLS.build()
	if err != nil {
		fmt.Fprintln(stderr, "countersign:", err)
		return 1
	}
	cfg.Runtime.apply(log)
	srv, closeStages, err := buildServer(ctx, cfg, tlsConfig, *dev, *canned, log)
	if err != nil {
		fmt.Fprintln(stderr, "countersign:", err)
		return 1
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		fmt.Fprintf(stderr, "countersign: listen: %v\n", err)
		return 1
	}
	defer func() {
		// A log that could not be sealed (a full disk) is a failed stop:
		// the exit code says so, as the log line does.
		if err := closeStages(); err != nil && code == 0 {
			code = 1
		}
	}()
	if *dev {
		if err := printDevBanner(stdout, cfg, ln.Addr().String()); err != nil {
			fmt.Fprintln(stderr, "countersign:", err)
			return 1
		}
	}
	log.Info("countersign serving", "addr", ln.Addr().String(), "tls", tlsConfig != nil, "version", version, "dev", *dev)

	errc := make(chan error, 2)
	go func() { errc <- srv.Serve(ln) }()
	if cfg.AdminListen != "" {
		srv.DisableMetricsOnSignListener()
		adminLn, err := net.Listen("tcp", cfg.AdminListen)
		if err != nil {
			fmt.Fprintf(stderr, "countersign: admin_listen: %v\n", err)
			return 1
		}
		admin := &http.Server{Handler: srv.AdminHandler(), ReadHeaderTimeout: 10 * time.Second}
		defer admin.Close()
		go func() { errc <- admin.Serve(adminLn) }()
		log.Info("admin endpoints serving", "addr", adminLn.Addr().String())
	}
	select {
	case err := <-errc:
		log.Error("server stopped", "err", err)
		return 1
	case <-ctx.Done():
	}
	log.Info("shutting down")
	done := make(chan error, 1)
	go func() { done <- srv.Shutdown() }()
	grace := cfg.Limits.shutdownGrace()
	select {
	case err := <-done:
		if err != nil {
			log.Error("shutdown", "err", err)
			return 1
		}
	case <-time.After(grace):
		log.Error("shutdown grace period expired with requests in flight")
		return 1
	}
	return 0
}

// build wires the stages of the signing pipeline from configuration, in
// request order. The returned func releases background work (key refresh)
// and closes the audit log, returning the log's close error.
func build(ctx context.Context, cfg Config, tlsConfig *tls.Config, dev bool, log *slog.Logger) (*server.Server, func() error, error) {
	m := metrics.New()
	authn, err := auth.New(ctx, cfg.Auth, auth.Options{Logger: log, OnCache: m.TokenCache})
	if err != nil {
		return nil, nil, fmt.Errorf("config: %w", err)
	}

	classifier, err := s3req.New(s3req.Options{
		Endpoints:       cfg.Endpoints,
		AllowUnsafeKeys: cfg.Keys.AllowUnsafe,
		MaxDeleteKeys:   cfg.Limits.MaxDeleteKeys,
	})
	if err != nil {
		authn.Close()
		return nil, nil, fmt.Errorf("config endpoints: %w", err)
	}

	// The audit log opens first: everything after it is on record,
	// including the policy revisions the manager loads.
	// The uploader needs the log's node id, so it is made after Open; seals
	// reported before it exists are found by its first pass.
	var uploader atomic.Pointer[upload.Uploader]
	auditLog, err := audit.Open(cfg.Audit.Config, audit.Options{
		Logger: log, HMACKey: cfg.Audit.hmacKey(), Reporter: m,
		OnSeal: func(s audit.SegmentInfo) {
			if u := uploader.Load(); u != nil {
				u.Notify(s)
			}
		},
	})
	if err != nil {
		authn.Close()
		return nil, nil, fmt.Errorf("config audit: %w", err)
	}
	if cfg.Audit.Upload.Enabled() {
		u, err := upload.New(ctx, cfg.Audit.Upload, cfg.Audit.Dir, upload.Options{
			NodeID: auditLog.Node(), Logger: log, OnUploaded: m.AuditSegmentUploaded, OnFailure: m.AuditUploadFailed,
		})
		if err != nil {
			auditLog.Close()
			authn.Close()
			return nil, nil, fmt.Errorf("config audit.upload: %w", err)
		}
		uploader.Store(u)
		m.WatchAuditUpload(u.Pending, u.LastError)
		u.Start(ctx)
	}
	m.WatchAudit(func() metrics.AuditState {
		s := auditLog.Stats()
		return metrics.AuditState{Healthy: s.Healthy, QueueDepth: s.QueueDepth, Failures: s.Failures, TreeSize: s.TreeSize, LastCheckpoint: s.LastCheckpoint}
	})
	lifecycle := func(ev audit.Event, detail map[string]string) {
		rec := &audit.Record{Kind: audit.KindLifecycle, Event: ev, Detail: detail}
		if err := auditLog.Append(context.Background(), rec); err != nil {
			log.Error("recording a lifecycle event", "event", ev, "err", err)
		}
	}
	lifecycle(audit.EventConfig, map[string]string{"version": version, "config_sha256": cfg.digest(), "dev": fmt.Sprint(dev)})

	mo := policy.ManagerOptions{
		Logger: log,
		OnReload: func(rev string) {
			m.PolicyReloaded(nil)
			m.SetPolicyRevision(rev)
			lifecycle(audit.EventPolicyRevision, map[string]string{"revision": rev})
		},
		OnReloadError: m.PolicyReloaded,
		FastPath:      cfg.Policy.FastPath,
		OnCache:       m.PolicyCache,
		OnRemembered:  m.DecisionCache,
	}
	if dev && !cfg.Policy.Configured() {
		mo.FS = policies.Dev()
	}
	pm, err := policy.NewManager(ctx, cfg.Policy, mo)
	if err != nil {
		auditLog.Close()
		authn.Close()
		return nil, nil, fmt.Errorf("config policy: %w", err)
	}
	pm.Start(ctx)
	log.Info("policy loaded", "revision", pm.Revision())
	m.SetPolicyRevision(pm.Revision())
	lifecycle(audit.EventPolicyRevision, map[string]string{"revision": pm.Revision()})
	// Closing drains, seals the segment and writes a final checkpoint; it
	// runs after the listener has finished every in-flight request.
	closeAll := func() error {
		err := auditLog.Close()
		if err != nil {
			log.Error("closing the audit log", "err", err)
		}
		if u := uploader.Load(); u != nil {
			// Ship what was just sealed, within a bound; what is left is
			// uploaded at the next start.
			fctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			if err := u.Flush(fctx); err != nil {
				log.Error("uploading sealed audit segments at shutdown", "err", err)
			}
			cancel()
			u.Close()
		}
		pm.Close()
		authn.Close()
		return err
	}

	creds, err := signer.NewCredentials(ctx, cfg.Credentials)
	if err != nil {
		closeAll()
		return nil, nil, fmt.Errorf("config credentials: %w", err)
	}
	sign := signer.New(creds, signer.Options{})
	m.WatchCredentialExpiry(func() (time.Time, bool, error) {
		c, err := creds.Retrieve(context.Background()) // cached
		return c.Expires, c.CanExpire, err
	})
	if bi, ok := debug.ReadBuildInfo(); ok {
		m.SetBuildInfo(version, bi.GoVersion)
	}

	h, err := server.NewHandler(server.Stages{
		Authenticator: authn,
		Classifier:    classifier,
		Authorizer:    pm,
		Signer:        sign,
		Audit:         auditLog,
	}, server.Options{
		BasePaths:      cfg.BasePaths,
		CacheableReads: cfg.CacheableReads,
		Metrics:        m,
		RateLimit:      cfg.Limits.RateLimit,
		RefusalLimit:   cfg.Limits.RefusalLimit,
		RequestTimeout: cfg.Limits.RequestTimeout,
		Limits:         remotesign.Limits{MaxHeaders: cfg.Limits.MaxHeaders},
	}, log)
	if err != nil {
		closeAll()
		return nil, nil, err
	}
	credentialsReady := func() error {
		// Cached: this only reaches the credential source when the cached
		// credentials are about to expire.
		if _, err := creds.Retrieve(context.Background()); err != nil {
			return fmt.Errorf("signing credentials unavailable: %w", err)
		}
		return nil
	}
	return server.New(h, cfg.Limits.serverConfig(tlsConfig), credentialsReady, auditReady(auditLog)), closeAll, nil
}

// auditReady makes /readyz fail while the audit log cannot record: such a
// node signs nothing, so it should get no traffic.
func auditReady(l *audit.Log) server.ReadinessCheck {
	return func() error {
		if err := l.Healthy(); err != nil {
			return fmt.Errorf("audit log unavailable: %w", err)
		}
		return nil
	}
}
