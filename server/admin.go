package server

import (
	"net/http"
	"net/http/pprof"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// AdminHandler serves the operator endpoints on a separate listener:
// /metrics, /healthz, /readyz and /debug/pprof/. Keeping profiling off the
// sign listener means engines (and anyone who can reach them) cannot
// trigger it. Handlers are mounted explicitly; the default mux is never
// served.
func (s *Server) AdminHandler() http.Handler {
	mux := http.NewServeMux()
	if m := s.handler.opts.Metrics; m != nil {
		mux.Handle("/metrics", promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{}))
	}
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("ok\n")) })
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if err := s.notReady(); err != nil {
			http.Error(w, "not ready: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
		w.Write([]byte("ready\n"))
	})
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return mux
}

// DisableMetricsOnSignListener moves /metrics to the admin listener only.
func (s *Server) DisableMetricsOnSignListener() { s.metrics = nil }
