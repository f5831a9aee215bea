package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync/atomic"
	"time"

	"github.com/countersign/countersign/audit"
	"github.com/countersign/countersign/audit/upload"
	"github.com/countersign/countersign/auth"
	"github.com/countersign/countersign/catalog"
	"github.com/countersign/countersign/deploy/policies"
	"github.com/countersign/countersign/metrics"
	"github.com/countersign/countersign/policy"
	"github.com/countersign/countersign/remotesign"
	"github.com/countersign/countersign/s3req"
	"github.com/countersign/countersign/server"
	"github.com/countersign/countersign/session"
	"github.com/countersign/countersign/signer"
	"github.com/countersign/countersign/vend"
)

// buildSigningServer builds the signing service: every stage of the
// pipeline wired from configuration, in request order, behind the HTTP
// server. The returned func, called once the server has finished every
// request, stops background work (policy reload, key refresh) and closes
// the audit log, returning the log's close error. On an error, what was
// opened is closed before returning.
func buildSigningServer(ctx context.Context, cfg Config, tlsConfig *tls.Config, dev bool, log *slog.Logger) (_ *server.Server, closeAll func() error, err error) {
	var opened closers
	defer func() {
		if err != nil {
			opened.close()
		}
	}()
	m := metrics.New()
	authn, err := auth.New(ctx, cfg.Auth, auth.Options{Logger: log, OnCache: m.TokenCache})
	if err != nil {
		return nil, nil, fmt.Errorf("config: %w", err)
	}
	opened.add(func() error { authn.Close(); return nil })

	classifier, err := newClassifier(cfg)
	if err != nil {
		return nil, nil, err
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
		return nil, nil, fmt.Errorf("config audit: %w", err)
	}
	// Closing drains, seals the segment and writes a final checkpoint;
	// the uploader then ships what was just sealed.
	opened.add(func() error {
		err := auditLog.Close()
		if err != nil {
			log.Error("closing the audit log", "err", err)
		}
		if u := uploader.Load(); u != nil {
			// Within a bound; what is left is uploaded at the next start.
			fctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			if err := u.Flush(fctx); err != nil {
				log.Error("uploading sealed audit segments at shutdown", "err", err)
			}
			cancel()
			u.Close()
		}
		return err
	})
	if cfg.Audit.Upload.Enabled() {
		u, err := upload.New(ctx, cfg.Audit.Upload, cfg.Audit.Dir, upload.Options{
			NodeID: auditLog.Node(), Logger: log, OnUploaded: m.AuditSegmentUploaded, OnFailure: m.AuditUploadFailed,
		})
		if err != nil {
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

	// Per-principal sessions were compiled from the policy: a reload drops
	// them (the cache is made below, once the manager exists).
	var sessions atomic.Pointer[session.Cache]
	mo := policy.ManagerOptions{
		Logger: log,
		OnReload: func(rev string) {
			if c := sessions.Load(); c != nil {
				c.Purge()
			}
			m.PolicyReloaded(nil)
			m.SetPolicyRevision(rev)
			lifecycle(audit.EventPolicyRevision, map[string]string{"revision": rev})
		},
		OnReloadError:   m.PolicyReloaded,
		FastPath:        cfg.Policy.FastPath,
		OnCache:         m.PolicyCache,
		OnRemembered:    m.DecisionCache,
		OnScopeFallback: m.ScopeFallback,
	}
	if dev && !cfg.Policy.Configured() {
		mo.FS, mo.FSPaths = policies.Dev()
	}
	pm, err := policy.NewManager(ctx, cfg.Policy, mo)
	if err != nil {
		return nil, nil, fmt.Errorf("config policy: %w", err)
	}
	opened.add(func() error { pm.Close(); return nil })
	pm.Start(ctx)
	log.Info("policy loaded", "revision", pm.Revision())
	m.SetPolicyRevision(pm.Revision())
	lifecycle(audit.EventPolicyRevision, map[string]string{"revision": pm.Revision()})

	creds, err := signer.NewCredentials(ctx, cfg.Credentials)
	if err != nil {
		return nil, nil, fmt.Errorf("config credentials: %w", err)
	}
	sc, err := newSessionCache(ctx, cfg.Credentials, pm, m, log, &sessions)
	if err != nil {
		return nil, nil, fmt.Errorf("config %w", err)
	}
	var signOpts signer.Options
	if sc != nil {
		opened.add(func() error { sc.Close(); return nil })
		signOpts.Sessions = sc
	}
	sign := signer.New(creds, signOpts)
	m.WatchCredentialExpiry(func() (time.Time, bool, error) {
		c, err := creds.Retrieve(context.Background()) // cached
		return c.Expires, c.CanExpire, err
	})
	if bi, ok := debug.ReadBuildInfo(); ok {
		m.SetBuildInfo(version, bi.GoVersion)
	}

	opts := server.Options{
		BasePaths:      cfg.BasePaths,
		CacheableReads: cfg.CacheableReads,
		Metrics:        m,
		RateLimit:      cfg.Limits.RateLimit,
		RefusalLimit:   cfg.Limits.RefusalLimit,
		RequestTimeout: cfg.Limits.RequestTimeout,
		Limits:         remotesign.Limits{MaxHeaders: cfg.Limits.MaxHeaders},
		Vending:        cfg.Vending.serverConfig(),
	}
	stages := server.Stages{
		Authenticator: authn,
		Classifier:    classifier,
		Authorizer:    pm,
		Signer:        sign,
		Audit:         auditLog,
	}
	var vendor *vend.Service
	if cfg.Vending.Enabled {
		if vendor, err = buildVending(cfg, creds, pm, auditLog, log); err != nil {
			return nil, nil, err
		}
		stages.Vendor = vendor
	}
	srvCfg := cfg.Limits.serverConfig(tlsConfig)
	if cfg.Catalog.Enabled() {
		// A loadTable answer's vended credentials are admitted, minted and
		// recorded by the server, as its credentials routes' are.
		co := catalog.Options{Config: cfg.Catalog, Log: log, Locations: pm}
		front, err := catalog.New(co)
		if err != nil {
			return nil, nil, fmt.Errorf("config catalog: %w", err)
		}
		opened.add(func() error { front.Close(); return nil })
		if err := front.Refresh(ctx); err != nil {
			// Not fatal: a catalog that requires a token for /v1/config
			// keeps the default, and a client's /v1/config naming another
			// separator is refused, naming catalog.namespace_separator.
			log.Warn("catalog front: could not read the namespace separator at start; using %1F (set catalog.namespace_separator for a catalog that names another)", "err", err)
		}
		log.Info("catalog front", "upstream", front.Upstream(), "namespace_separator", front.NamespaceSeparator())
		opts.Catalog, opts.Tables = front, front
		srvCfg.StreamBodies = true
	}
	h, err := server.NewHandler(stages, opts, log)
	if err != nil {
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
	return server.New(h, srvCfg, credentialsReady, auditReady(auditLog)), opened.close, nil
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

// closers are the close functions of what buildSigningServer opened, in
// the order opened. close runs them in reverse, so each part closes before
// what it depends on (the policy manager, which records revisions, before
// the audit log), and returns the first error.
type closers []func() error

func (c *closers) add(f func() error) { *c = append(*c, f) }

func (c closers) close() error {
	var first error
	for i := len(c) - 1; i >= 0; i-- {
		if err := c[i](); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// newClassifier is the request classifier of cfg, one for the pipeline and
// the canned benchmark server, so that the floor measures the same
// classification.
func newClassifier(cfg Config) (*s3req.Classifier, error) {
	c, err := s3req.New(s3req.Options{
		Endpoints:       cfg.Endpoints,
		AllowUnsafeKeys: cfg.Keys.AllowUnsafe,
		MaxDeleteKeys:   cfg.Limits.MaxDeleteKeys,
	})
	if err != nil {
		return nil, fmt.Errorf("config endpoints: %w", err)
	}
	return c, nil
}
