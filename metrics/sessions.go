package metrics

import "github.com/prometheus/client_golang/prometheus"

// SessionMetrics describe per-principal sessions (credentials.per_principal).
type SessionMetrics struct {
	// Mints counts STS AssumeRole calls by kind ("mint": a request
	// waited for it, "renewal": in the background) and result ("ok",
	// "error").
	Mints *prometheus.CounterVec
}

// WatchSessions registers the per-principal session metrics, with cached
// reporting how many sessions are kept. Call it once; a nil m records
// nothing.
func (m *Metrics) WatchSessions(cached func() int) *SessionMetrics {
	if m == nil {
		return nil
	}
	s := &SessionMetrics{Mints: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "countersign_session_mints_total",
		Help: "STS AssumeRole calls for per-principal sessions, by kind (mint, renewal) and result (ok, error).",
	}, []string{"kind", "result"})}
	m.Registry.MustRegister(s.Mints, prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "countersign_sessions_cached", Help: "Per-principal sessions in the cache.",
	}, func() float64 { return float64(cached()) }))
	return s
}

// Minted records one mint.
func (s *SessionMetrics) Minted(renewal, ok bool) {
	if s == nil {
		return
	}
	kind, result := "mint", "ok"
	if renewal {
		kind = "renewal"
	}
	if !ok {
		result = "error"
	}
	s.Mints.WithLabelValues(kind, result).Inc()
}
