// Package metrics holds countersign's Prometheus metrics. There is no
// global registry: New builds one set, cmd/countersign passes it to the
// stages that record, and the server exposes it on /metrics.
package metrics

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// Metrics is every countersign_ metric. The zero value is not usable; a
// nil *Metrics is, and records nothing (for tests and tools).
type Metrics struct {
	Registry *prometheus.Registry

	// Requests counts sign requests by route ("legacy", "table") and
	// HTTP status.
	Requests *prometheus.CounterVec
	// Decisions counts per-object policy decisions by IAM action and
	// result ("allow", "deny", "error").
	Decisions *prometheus.CounterVec
	// AuthFailures counts refused callers by reason class.
	AuthFailures *prometheus.CounterVec
	// ConnectionsShed counts connections closed or refused by the
	// connection limits, by reason (idle_unauthenticated, 503, 429).
	ConnectionsShed *prometheus.CounterVec
	// RefusalsSuppressed counts refusals past their source's limit,
	// answered 429 and recorded only in a summary.
	RefusalsSuppressed prometheus.Counter
	// StageSeconds times each stage of the signing pipeline.
	StageSeconds *prometheus.HistogramVec
	// CacheLookups counts cache lookups by cache ("token", "policy",
	// "decision") and result ("hit", "miss").
	CacheLookups                           *prometheus.CounterVec
	tokenCache, policyCache, decisionCache hitMiss
	// AuditUploaded and AuditUploadFailures count segment uploads to S3.
	AuditUploaded       prometheus.Counter
	AuditUploadFailures prometheus.Counter
	// AuditBatches, AuditBatchRecords and AuditSyncSeconds describe group
	// commits: how many, how large, how long fdatasync took.
	AuditBatches      prometheus.Counter
	AuditBatchRecords prometheus.Histogram
	AuditSyncSeconds  prometheus.Histogram
	AuditRecords      prometheus.Counter
	AuditDecisions    *prometheus.CounterVec
	auditAllow        lazyChild // AuditDecisions' children for nearly every record
	auditDeny         lazyChild
	// PolicyReloads counts policy reload attempts by result ("ok", "error").
	PolicyReloads *prometheus.CounterVec
	// PolicyRevision is 1 for the revision currently deciding.
	PolicyRevision *prometheus.GaugeVec
	// ScopeFallbacks counts scopes compiled bucket-wide because the
	// policy's residual is not a set of key prefixes (policy.Scope.Wider),
	// by access class ("" for all classes).
	ScopeFallbacks *prometheus.CounterVec
}

// New registers every metric on a fresh registry, with the Go and process
// collectors.
func New() *Metrics {
	m := &Metrics{
		Registry: prometheus.NewRegistry(),
		Requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "countersign_requests_total", Help: "Sign requests by route and HTTP status.",
		}, []string{"route", "status"}),
		Decisions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "countersign_decisions_total", Help: "Per-object policy decisions by IAM action and result.",
		}, []string{"action", "result"}),
		AuthFailures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "countersign_auth_failures_total", Help: "Refused callers by reason class.",
		}, []string{"reason"}),
		ConnectionsShed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "countersign_connections_shed_total", Help: "Connections closed to make room (idle_unauthenticated) or refused at accept (503 at limits.max_connections, 429 at limits.max_connections_per_source).",
		}, []string{"reason"}),
		RefusalsSuppressed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "countersign_refusals_suppressed_total", Help: "Refusals before authentication past the source's limits.refusal_limit: answered 429, counted in a refusals_suppressed audit record.",
		}),
		StageSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "countersign_stage_seconds", Help: "Time spent in each stage of the signing pipeline.",
			// 10 µs to ~80 ms: the stages are microseconds; audit fsync is milliseconds.
			Buckets: prometheus.ExponentialBuckets(10e-6, 2, 14),
		}, []string{"stage"}),
		CacheLookups: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "countersign_cache_lookups_total", Help: "Cache lookups by cache (token; policy: a cached residual; decision: a remembered decision) and result (hit, miss).",
		}, []string{"cache", "result"}),
		AuditUploaded: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "countersign_audit_uploads_total", Help: "Sealed audit segments uploaded and verified in the bucket.",
		}),
		AuditUploadFailures: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "countersign_audit_upload_failures_total", Help: "Failed audit upload passes (retried with backoff; nothing is lost).",
		}),
		AuditBatches: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "countersign_audit_batches_total", Help: "Audit group commits (one write and one fdatasync each).",
		}),
		AuditRecords: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "countersign_audit_records_total", Help: "Audit records made durable.",
		}),
		AuditDecisions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "countersign_audit_records_by_decision_total", Help: "Durable access records by decision.",
		}, []string{"decision"}),
		AuditBatchRecords: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "countersign_audit_batch_records", Help: "Records per audit group commit.",
			Buckets: prometheus.ExponentialBuckets(1, 2, 14),
		}),
		AuditSyncSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "countersign_audit_fsync_seconds", Help: "fdatasync latency of audit group commits.",
			Buckets: prometheus.ExponentialBuckets(50e-6, 2, 14),
		}),
		PolicyReloads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "countersign_policy_reloads_total", Help: "Policy reload attempts by result; a rejected policy keeps the last good one serving.",
		}, []string{"result"}),
		PolicyRevision: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "countersign_policy_revision", Help: "1 for the policy revision currently deciding.",
		}, []string{"revision"}),
		ScopeFallbacks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "countersign_scope_fallbacks_total", Help: "Session-policy scopes granted bucket-wide because the policy is not expressible as key prefixes, by access class.",
		}, []string{"access"}),
	}
	m.Registry.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		m.Requests, m.Decisions, m.AuthFailures, m.ConnectionsShed, m.RefusalsSuppressed, m.StageSeconds, m.PolicyReloads, m.PolicyRevision, m.ScopeFallbacks,
		m.CacheLookups, m.AuditUploaded, m.AuditUploadFailures,
		m.AuditBatches, m.AuditRecords, m.AuditDecisions, m.AuditBatchRecords, m.AuditSyncSeconds,
	)
	// Resolved once: the hot path must not look labels up per call.
	m.tokenCache = m.newHitMiss("token")
	m.policyCache = m.newHitMiss("policy")
	m.decisionCache = m.newHitMiss("decision")
	return m
}

// lazyChild is one child of a CounterVec, resolved at its first use (so
// that /metrics shows it once it has counted, as with WithLabelValues) and
// then counted without WithLabelValues' hashing and locking: once per
// signed object, that lookup cost more than the count.
type lazyChild struct {
	once sync.Once
	c    prometheus.Counter
}

func (l *lazyChild) inc(v *prometheus.CounterVec, label string) {
	l.once.Do(func() { l.c = v.WithLabelValues(label) })
	l.c.Inc()
}

// hitMiss is one cache's two CacheLookups counters.
type hitMiss struct{ hit, miss prometheus.Counter }

func (m *Metrics) newHitMiss(cache string) hitMiss {
	return hitMiss{m.CacheLookups.WithLabelValues(cache, "hit"), m.CacheLookups.WithLabelValues(cache, "miss")}
}

func (c hitMiss) record(hit bool) {
	if hit {
		c.hit.Inc()
	} else {
		c.miss.Inc()
	}
}

// TokenCache records a verified-token cache lookup (auth.Options.OnCache).
func (m *Metrics) TokenCache(hit bool) {
	if m != nil {
		m.tokenCache.record(hit)
	}
}

// PolicyCache records a policy decision-cache lookup.
func (m *Metrics) PolicyCache(hit bool) {
	if m != nil {
		m.policyCache.record(hit)
	}
}

// DecisionCache records a lookup of the policy's remembered decisions
// (policy.ManagerOptions.OnRemembered).
func (m *Metrics) DecisionCache(hit bool) {
	if m != nil {
		m.decisionCache.record(hit)
	}
}

// SetPolicyRevision makes rev the only revision reported as current.
func (m *Metrics) SetPolicyRevision(rev string) {
	if m == nil {
		return
	}
	m.PolicyRevision.Reset()
	m.PolicyRevision.WithLabelValues(rev).Set(1)
}

// ScopeFallback records a scope granted bucket-wide
// (policy.ManagerOptions.OnScopeFallback).
func (m *Metrics) ScopeFallback(access string) {
	if m != nil {
		m.ScopeFallbacks.WithLabelValues(access).Inc()
	}
}

// PolicyReloaded records a reload attempt.
func (m *Metrics) PolicyReloaded(err error) {
	if m == nil {
		return
	}
	if err != nil {
		m.PolicyReloads.WithLabelValues("error").Inc()
		return
	}
	m.PolicyReloads.WithLabelValues("ok").Inc()
}

// AuditBatch records one durable audit batch: its records and its
// fdatasync time (m is the audit log's audit.Reporter).
func (m *Metrics) AuditBatch(records int, sync time.Duration) {
	if m == nil {
		return
	}
	m.AuditBatches.Inc()
	m.AuditRecords.Add(float64(records))
	m.AuditBatchRecords.Observe(float64(records))
	m.AuditSyncSeconds.Observe(sync.Seconds())
}

// AuditState is the part of the audit log's state the gauges show. It is
// declared here so that metrics need not import audit; cmd/countersign
// copies it from the log's Stats.
type AuditState struct {
	Healthy        bool
	QueueDepth     int
	Failures       uint64
	TreeSize       uint64
	LastCheckpoint time.Time
}

// WatchAudit exposes the audit log's state, read at scrape time: queue
// depth, write/sync failures, health, tree size and the time of the newest
// signed checkpoint. Names follow the dashboard in deploy/grafana.
func (m *Metrics) WatchAudit(stats func() AuditState) {
	if m == nil {
		return
	}
	gauge := func(name, help string, f func(AuditState) float64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, func() float64 { return f(stats()) })
	}
	m.Registry.MustRegister(
		gauge("countersign_audit_queue_depth", "Records waiting for the audit writer.", func(s AuditState) float64 { return float64(s.QueueDepth) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "countersign_audit_failures_total", Help: "Audit write/sync failures; each stops signing until recovery."},
			func() float64 { return float64(stats().Failures) }),
		gauge("countersign_audit_healthy", "1 while the audit log can record (and countersign signs).", func(s AuditState) float64 {
			if s.Healthy {
				return 1
			}
			return 0
		}),
		gauge("countersign_audit_tree_size", "Records in this node's audit log.", func(s AuditState) float64 { return float64(s.TreeSize) }),
		gauge("countersign_audit_last_checkpoint_timestamp_seconds", "Unix time of the newest signed checkpoint.", func(s AuditState) float64 {
			if s.LastCheckpoint.IsZero() {
				return 0
			}
			return float64(s.LastCheckpoint.UnixNano()) / 1e9
		}),
	)
}

// CountAuditDecision counts durable access records by decision.
func (m *Metrics) CountAuditDecision(decision string) {
	if m == nil {
		return
	}
	switch decision {
	case "allow":
		m.auditAllow.inc(m.AuditDecisions, decision)
	case "deny":
		m.auditDeny.inc(m.AuditDecisions, decision)
	default:
		m.AuditDecisions.WithLabelValues(decision).Inc()
	}
}

// SetBuildInfo publishes countersign_build_info{version, go_version} 1.
func (m *Metrics) SetBuildInfo(version, goVersion string) {
	if m == nil {
		return
	}
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "countersign_build_info", Help: "Build information; always 1."}, []string{"version", "go_version"})
	g.WithLabelValues(version, goVersion).Set(1)
	m.Registry.MustRegister(g)
}

// WatchCredentialExpiry publishes when the signing credentials expire
// (0 for credentials that do not expire, -1 while they cannot be
// retrieved), read at scrape time from the credentials cache.
func (m *Metrics) WatchCredentialExpiry(expiry func() (time.Time, bool, error)) {
	if m == nil {
		return
	}
	m.Registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "countersign_credentials_expiry_timestamp_seconds",
		Help: "Unix time the signing credentials expire; 0 if they do not, -1 if unavailable.",
	}, func() float64 {
		t, expires, err := expiry()
		switch {
		case err != nil:
			return -1
		case !expires:
			return 0
		}
		return float64(t.UnixNano()) / 1e9
	}))
}

// AuditSegmentUploaded counts a verified segment upload (upload.Options.OnUploaded).
func (m *Metrics) AuditSegmentUploaded(string) {
	if m != nil {
		m.AuditUploaded.Inc()
	}
}

// AuditUploadFailed counts a failed upload pass (upload.Options.OnFailure).
func (m *Metrics) AuditUploadFailed(error) {
	if m != nil {
		m.AuditUploadFailures.Inc()
	}
}

// WatchAuditUpload exposes the segments waiting for upload and whether the
// last pass failed, read at scrape time.
func (m *Metrics) WatchAuditUpload(pending func() int, lastErr func() error) {
	if m == nil {
		return
	}
	m.Registry.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "countersign_audit_segments_pending_upload", Help: "Sealed audit segments not yet uploaded and verified.",
		}, func() float64 { return float64(pending()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "countersign_audit_upload_healthy", Help: "1 when the last audit upload pass succeeded.",
		}, func() float64 {
			if lastErr() != nil {
				return 0
			}
			return 1
		}),
	)
}
