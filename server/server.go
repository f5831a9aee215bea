// Package server is countersign's HTTP front: fasthttp routes for Iceberg's
// remote-signing protocol, health endpoints, and the wiring of the signing
// pipeline's stages.
package server

import (
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttpadaptor"
)

// Config is the HTTP listener's configuration.
type Config struct {
	// MaxBodyBytes caps a sign request body (default 1 MiB + 64 KiB, enough
	// for a maximal DeleteObjects body as JSON).
	MaxBodyBytes int
	// ReadTimeout, WriteTimeout and IdleTimeout bound slow clients.
	ReadTimeout, WriteTimeout, IdleTimeout time.Duration
	// MaxConcurrency caps requests served at once (fasthttp answers 503
	// beyond it).
	MaxConcurrency int
	// TLS, when set, serves HTTPS. The server wraps the listener itself so
	// that its connection handling sits beneath TLS, on the socket.
	TLS *tls.Config
	// LingerTimeout and LingerBytes bound the lingering close after an
	// answer given before the whole request was read (413, 431): how long,
	// and how many bytes, the rest of the request is read and discarded so
	// the client reads the answer instead of a reset (defaults 5 s, 4 MiB).
	LingerTimeout time.Duration
	LingerBytes   int64
}

func (c *Config) setDefaults() {
	if c.MaxBodyBytes <= 0 {
		c.MaxBodyBytes = 1<<20 + 64<<10
	}
	if c.ReadTimeout <= 0 {
		c.ReadTimeout = 10 * time.Second
	}
	if c.WriteTimeout <= 0 {
		c.WriteTimeout = 10 * time.Second
	}
	if c.IdleTimeout <= 0 {
		c.IdleTimeout = 120 * time.Second
	}
	if c.MaxConcurrency <= 0 {
		c.MaxConcurrency = 4096
	}
	if c.LingerTimeout <= 0 {
		c.LingerTimeout = 5 * time.Second
	}
	if c.LingerBytes <= 0 {
		c.LingerBytes = 4 << 20
	}
}

// readBufferSize is fasthttp's read buffer, which bounds the request line
// and headers together.
const readBufferSize = 8 << 10

// ReadinessCheck reports why the server cannot serve, or nil when it can.
type ReadinessCheck func() error

// Server serves the sign routes and /healthz, /readyz.
type Server struct {
	handler *Handler
	ready   []ReadinessCheck
	fast    *fasthttp.Server
	cfg     Config
	metrics fasthttp.RequestHandler // nil when metrics are off
	closing atomic.Bool
}

// New builds a Server around a sign handler.
func New(h *Handler, cfg Config, ready ...ReadinessCheck) *Server {
	cfg.setDefaults()
	s := &Server{handler: h, ready: ready, cfg: cfg}
	if m := h.opts.Metrics; m != nil {
		s.metrics = fasthttpadaptor.NewFastHTTPHandler(promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{}))
	}
	s.fast = &fasthttp.Server{
		Name:                          "countersign",
		Handler:                       s.serve,
		ErrorHandler:                  s.serveTransportError,
		MaxRequestBodySize:            cfg.MaxBodyBytes,
		ReadTimeout:                   cfg.ReadTimeout,
		WriteTimeout:                  cfg.WriteTimeout,
		IdleTimeout:                   cfg.IdleTimeout,
		Concurrency:                   cfg.MaxConcurrency,
		DisablePreParseMultipartForm:  true,
		NoDefaultServerHeader:         true,
		NoDefaultDate:                 true,
		DisableHeaderNamesNormalizing: false,
		ReadBufferSize:                readBufferSize,
	}
	return s
}

// Serve accepts connections on ln (plain TCP; the server adds TLS when
// configured) until Shutdown.
func (s *Server) Serve(ln net.Listener) error {
	ln = &listener{Listener: ln, lingerTimeout: s.cfg.LingerTimeout, lingerBytes: s.cfg.LingerBytes}
	if s.cfg.TLS != nil {
		ln = tls.NewListener(ln, s.cfg.TLS)
	}
	return s.fast.Serve(ln)
}

// Shutdown stops accepting, waits for in-flight requests, then returns.
func (s *Server) Shutdown() error {
	s.closing.Store(true)
	return s.fast.Shutdown()
}

// Handler returns the fasthttp handler, for tests and embedding.
func (s *Server) Handler() fasthttp.RequestHandler { return s.serve }

func (s *Server) serve(ctx *fasthttp.RequestCtx) {
	path := string(ctx.URI().PathOriginal())
	switch path {
	case "/healthz":
		ctx.SetContentType("text/plain; charset=utf-8")
		ctx.SetBodyString("ok\n")
		return
	case "/readyz":
		s.serveReady(ctx)
		return
	case "/metrics":
		if s.metrics != nil {
			s.metrics(ctx)
			return
		}
	}
	rt, ok := matchSignRoute(path, s.handler.opts.BasePaths)
	if !ok {
		writeError(ctx, http.StatusNotFound, "no route for "+truncate(path)+"; sign routes are POST /v1/aws/s3/sign and POST /v1/[{prefix}/]namespaces/{namespace}/tables/{table}/sign", 0)
		return
	}
	if !ctx.IsPost() {
		writeError(ctx, http.StatusMethodNotAllowed, "sign routes accept POST only", 0)
		ctx.Response.Header.Set("Allow", "POST")
		return
	}
	s.handler.serveSign(ctx, rt)
}

func (s *Server) serveReady(ctx *fasthttp.RequestCtx) {
	ctx.SetContentType("text/plain; charset=utf-8")
	if err := s.notReady(); err != nil {
		ctx.SetStatusCode(http.StatusServiceUnavailable)
		ctx.SetBodyString("not ready: " + err.Error() + "\n")
		return
	}
	ctx.SetBodyString("ready\n")
}

// notReady returns the first reason the server should not get traffic.
func (s *Server) notReady() error {
	if s.closing.Load() {
		return errShuttingDown
	}
	for _, check := range s.ready {
		if err := check(); err != nil {
			return err
		}
	}
	return nil
}

var errShuttingDown = errors.New("shutting down")

// serveTransportError answers errors fasthttp detects before routing
// (oversized or unparsable requests) in Iceberg's error model. fasthttp
// closes the connection after this answer, often with the rest of the
// request still on its way: the close lingers, so the client reads it.
func (s *Server) serveTransportError(ctx *fasthttp.RequestCtx, err error) {
	if c := connOf(ctx.Conn()); c != nil {
		c.linger.Store(true)
	}
	var small *fasthttp.ErrSmallBuffer
	switch {
	case errors.As(err, &small):
		writeError(ctx, http.StatusRequestHeaderFieldsTooLarge, "request headers are larger than the "+strconv.Itoa(readBufferSize>>10)+" KiB limit", 0)
	case errors.Is(err, fasthttp.ErrBodyTooLarge):
		writeError(ctx, http.StatusRequestEntityTooLarge, "sign request body is larger than the configured limit", 0)
	case isTimeout(err):
		writeError(ctx, http.StatusRequestTimeout, "sign request was not received in time", 0)
	default:
		writeError(ctx, http.StatusBadRequest, "malformed HTTP request", 0)
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func truncate(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}
