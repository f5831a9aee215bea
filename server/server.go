// Package server is countersign's HTTP front: fasthttp routes for Iceberg's
// remote-signing protocol, health endpoints, and the wiring of the signing
// pipeline's stages.
package server

import (
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
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
	// MaxConcurrency caps sign requests served at once (default 1024);
	// beyond it a request is answered 503 with Retry-After, and recorded.
	MaxConcurrency int
	// MaxConnections caps open connections (default 4096). At the cap a
	// connection that never carried an authenticated request and is
	// waiting for one is closed to make room; with none, the new
	// connection is answered 503 with Retry-After.
	MaxConnections int
	// MaxConnectionsPerSource caps one source address's open connections
	// (default 512; 429 beyond it). Behind a load balancer that hides
	// client addresses, raise it to MaxConnections.
	MaxConnectionsPerSource int
	// PreAuthIdleTimeout is how long a connection that never carried an
	// authenticated request may wait for one (default 10 s); IdleTimeout
	// applies once it did.
	PreAuthIdleTimeout time.Duration
	// TLS, when set, serves HTTPS. The server wraps the listener itself so
	// that its connection handling sits beneath TLS, on the socket.
	TLS *tls.Config
	// StreamBodies, set with a catalog front, hands request bodies to the
	// routes unread: every route countersign serves itself reads at most
	// MaxBodyBytes of one, and the front streams a forwarded route's body
	// to the catalog under its own limit (catalog.max_request_bytes). No
	// body is read whole before its route is known.
	StreamBodies bool
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
		c.MaxConcurrency = 1024
	}
	if c.MaxConnections <= 0 {
		c.MaxConnections = 4096
	}
	if c.MaxConnectionsPerSource <= 0 {
		c.MaxConnectionsPerSource = 512
	}
	if c.PreAuthIdleTimeout <= 0 {
		c.PreAuthIdleTimeout = 10 * time.Second
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
	// inflight holds a token per sign request being served.
	inflight chan struct{}
	stop     chan struct{} // closed by Shutdown: ends the summary sweep
	stopOnce sync.Once
	ln       atomic.Pointer[listener] // set by Serve
}

// shutdownDrain is how long Shutdown lets open keep-alive connections
// bring the requests their clients have sent, each answered with
// "Connection: close", before it closes the ones still idle.
const shutdownDrain = time.Second

// New builds a Server around a sign handler.
func New(h *Handler, cfg Config, ready ...ReadinessCheck) *Server {
	cfg.setDefaults()
	s := &Server{handler: h, ready: ready, cfg: cfg, inflight: make(chan struct{}, cfg.MaxConcurrency), stop: make(chan struct{})}
	if m := h.opts.Metrics; m != nil {
		s.metrics = fasthttpadaptor.NewFastHTTPHandler(promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{}))
	}
	s.fast = &fasthttp.Server{
		Name:               "countersign",
		Handler:            s.serve,
		ErrorHandler:       s.serveTransportError,
		MaxRequestBodySize: cfg.MaxBodyBytes,
		StreamRequestBody:  cfg.StreamBodies,
		ReadTimeout:        cfg.ReadTimeout,
		WriteTimeout:       cfg.WriteTimeout,
		IdleTimeout:        cfg.IdleTimeout,
		// The listener enforces MaxConnections; fasthttp's own limit (and
		// its plain-text 503) stays out of reach: a closed connection
		// leaves the listener's count before it leaves fasthttp's.
		Concurrency: cfg.MaxConnections + 1024,
		ConnState: func(c net.Conn, st fasthttp.ConnState) {
			if cc := connOf(c); cc != nil {
				cc.setState(st)
			}
		},
		DisablePreParseMultipartForm:  true,
		NoDefaultServerHeader:         true,
		NoDefaultDate:                 true,
		DisableHeaderNamesNormalizing: false,
		ReadBufferSize:                readBufferSize,
		SecureErrorLogMessage:         true,
		Logger:                        transportLogger{h.log},
	}
	return s
}

// Serve accepts connections on ln (plain TCP; the server adds TLS when
// configured) until Shutdown.
func (s *Server) Serve(ln net.Listener) error {
	var onShed func(string)
	if m := s.handler.opts.Metrics; m != nil {
		onShed = func(reason string) { m.ConnectionsShed.WithLabelValues(reason).Inc() }
	}
	l := newListener(ln, &s.cfg, onShed)
	s.ln.Store(l)
	ln = l
	go s.sweepRefusals()
	if s.cfg.TLS != nil {
		ln = tls.NewListener(ln, s.cfg.TLS)
	}
	return s.fast.Serve(ln)
}

// Shutdown stops accepting, finishes every request that has arrived,
// then returns. Closing an idle keep-alive connection at once would reset
// a request its client has just sent on it (unread bytes make the kernel
// send a reset): so the listener is closed first, every answer from then
// on says "Connection: close" (the client opens no new request on that
// connection), and connections get shutdownDrain to close that way before
// fasthttp closes those still idle and waits for the active ones.
func (s *Server) Shutdown() error {
	s.closing.Store(true)
	if l := s.ln.Load(); l != nil {
		l.Listener.Close()
		for deadline := time.Now().Add(shutdownDrain); l.openConns() > 0 && time.Now().Before(deadline); {
			time.Sleep(10 * time.Millisecond)
		}
	}
	err := s.fast.Shutdown()
	if errors.Is(err, net.ErrClosed) {
		err = nil // the listener, closed above
	}
	s.stopOnce.Do(func() { close(s.stop) })
	s.handler.recordSuppressed(true)
	return err
}

// sweepRefusals records the suppressed-refusal summaries of sources that
// went quiet, once per summary interval, until Shutdown.
func (s *Server) sweepRefusals() {
	t := time.NewTicker(s.handler.refusals.cfg.SummaryInterval)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			s.handler.recordSuppressed(false)
		}
	}
}

// Handler returns the fasthttp handler, for tests and embedding.
func (s *Server) Handler() fasthttp.RequestHandler { return s.serve }

func (s *Server) serve(ctx *fasthttp.RequestCtx) {
	if s.closing.Load() {
		ctx.SetConnectionClose()
	}
	raw := ctx.URI().PathOriginal()
	if rt, ok := matchLegacyRoute(raw, s.handler.opts.BasePaths); ok {
		// The route of nearly every sign request, matched without a copy
		// of the path: no other route has one of these paths.
		s.serveSignRoute(ctx, rt)
		return
	}
	path := string(raw)
	switch path {
	case "/healthz":
		ctx.Response.Header.Set("Cache-Control", "no-cache")
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
	if s.handler.stages.Vendor != nil {
		if vr, ok := matchVendRoute(path, s.handler.opts.BasePaths, s.handler.namespaceSeparator()); ok {
			s.serveVend(ctx, vr)
			return
		}
	}
	rt, ok := matchSignRoute(path, s.handler.opts.BasePaths, s.handler.namespaceSeparator())
	if !ok && s.serveCatalog(ctx, path) {
		return
	}
	if !ok {
		writeError(ctx, http.StatusNotFound, "no route for "+truncate(path)+"; sign routes are POST /v1/aws/s3/sign and POST /v1/[{prefix}/]namespaces/{namespace}/tables/{table}/sign", 0)
		return
	}
	s.serveSignRoute(ctx, rt)
}

// serveSignRoute serves a request to a sign route.
func (s *Server) serveSignRoute(ctx *fasthttp.RequestCtx, rt route) {
	if !ctx.IsPost() {
		s.handler.serveRefused(ctx, rt, http.StatusMethodNotAllowed, "sign routes accept POST only", 0)
		ctx.Response.Header.Set("Allow", "POST")
		return
	}
	if !s.boundBody(ctx) { // possible only with streamed bodies (a catalog front)
		s.handler.serveRefused(ctx, rt, http.StatusRequestEntityTooLarge, "sign request body is larger than the configured limit of "+strconv.Itoa(s.cfg.MaxBodyBytes)+" bytes", 0)
		return
	}
	select {
	case s.inflight <- struct{}{}:
		defer func() { <-s.inflight }()
	default:
		s.handler.serveRefused(ctx, rt, http.StatusServiceUnavailable,
			"countersign is serving its limit of "+strconv.Itoa(cap(s.inflight))+" sign requests at once (limits.max_concurrency)", 1)
		return
	}
	s.handler.serveSign(ctx, rt)
}

// boundBody reads a streamed request body whole when it is at most
// MaxBodyBytes, for the routes countersign serves itself; false (nothing
// more read, the connection closed after the answer) when it is larger,
// or broke off. Without streaming fasthttp has read it within that limit.
func (s *Server) boundBody(ctx *fasthttp.RequestCtx) bool {
	stream := ctx.RequestBodyStream()
	if stream == nil {
		return len(ctx.PostBody()) <= s.cfg.MaxBodyBytes
	}
	limit := s.cfg.MaxBodyBytes
	n := ctx.Request.Header.ContentLength()
	var body []byte
	switch {
	case n > limit:
	case n >= 0:
		body = make([]byte, n)
		if _, err := io.ReadFull(stream, body); err != nil {
			body = nil
		}
	default: // chunked
		b, err := io.ReadAll(io.LimitReader(stream, int64(limit)+1))
		if err == nil && len(b) <= limit {
			body = b
		}
	}
	if body == nil {
		ctx.SetConnectionClose()
		if c := connOf(ctx.Conn()); c != nil {
			c.linger.Store(true) // the client reads the answer, not a reset
		}
		return false
	}
	ctx.Request.SetBodyRaw(body)
	return true
}

func (s *Server) serveReady(ctx *fasthttp.RequestCtx) {
	ctx.Response.Header.Set("Cache-Control", "no-cache")
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
// (oversized or unparsable requests) in Iceberg's error model, and records
// them: a body over the limit on a sign route is a sign request; a request
// whose headers could not be read may have been one, so it is recorded
// too, without a route. A connection that sent nothing is not a request.
//
// fasthttp closes the connection after this answer, often with the rest of
// the request still on its way: the close lingers, so the client reads it.
func (s *Server) serveTransportError(ctx *fasthttp.RequestCtx, err error) {
	c := connOf(ctx.Conn())
	if c != nil {
		if c.state.Load() == stateShed {
			return // closed to make room while the request arrived
		}
		c.linger.Store(true)
	}
	var (
		status int
		msg    string
		small  *fasthttp.ErrSmallBuffer
	)
	switch {
	case errors.As(err, &small):
		status, msg = http.StatusRequestHeaderFieldsTooLarge, "request headers are larger than the "+strconv.Itoa(readBufferSize>>10)+" KiB limit"
	case errors.Is(err, fasthttp.ErrBodyTooLarge):
		status, msg = http.StatusRequestEntityTooLarge, "sign request body is larger than the configured limit of "+strconv.Itoa(s.cfg.MaxBodyBytes)+" bytes"
	case isTimeout(err):
		status, msg = http.StatusRequestTimeout, "sign request was not received in time"
	default:
		status, msg = http.StatusBadRequest, "malformed HTTP request"
	}
	if errors.Is(err, fasthttp.ErrBodyTooLarge) {
		// The headers were read: the route is known.
		path := string(ctx.URI().PathOriginal())
		if rt, ok := matchSignRoute(path, s.handler.opts.BasePaths, s.handler.namespaceSeparator()); ok {
			s.handler.serveRefused(ctx, rt, status, msg, 0)
			return
		}
		writeError(ctx, status, msg, 0)
		return
	}
	if c != nil && c.requestBytes() == 0 {
		writeError(ctx, status, msg, 0) // nothing arrived: no request to record
		return
	}
	s.handler.serveRefused(ctx, route{name: "unknown"}, status, msg, 0)
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
