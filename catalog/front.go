package catalog

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/sync/semaphore"

	"github.com/countersign/countersign/internal/policyinput"
)

// Options configures a Front.
type Options struct {
	Config Config
	Log    *slog.Logger
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Locations is the operator's word on table locations (tablechange.go):
	// location changes and learned locations it refuses are refused. nil
	// checks none (serve always sets it).
	Locations LocationPolicy
}

// Front forwards the Iceberg REST catalog API to the upstream catalog and
// rewrites its table answers for remote signing.
type Front struct {
	cfg       Config
	upstream  *url.URL
	public    *url.URL // nil: derived from each request
	client    *http.Client
	log       *slog.Logger
	locations *Locations
	// locationPolicy decides which locations a table may have (nil: none
	// checked).
	locationPolicy LocationPolicy
	// known is every table's location as last seen (tablechange.go).
	known    *knownTables
	inflight chan struct{}
	// budget is the bytes of answers being read at once
	// (catalog.answer_budget_bytes; see readAnswer).
	budget *semaphore.Weighted
	// bodies is the bytes of request bodies the front holds at once, to
	// read them (heldBodies × catalog.max_request_bytes; see requestBody).
	bodies *semaphore.Weighted
	// separator is the namespace separator as it appears in paths (the
	// catalog's namespace-separator, "%1F" by default).
	separator atomic.Pointer[string]
}

// DefaultNamespaceSeparator is Iceberg's separator of namespace levels in
// paths when the catalog's /v1/config names none.
const DefaultNamespaceSeparator = "%1F"

// New builds the front. It does not contact the upstream (see Refresh).
func New(o Options) (*Front, error) {
	cfg := o.Config
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.setDefaults()
	up, err := parseBase("catalog.upstream", cfg.Upstream)
	if err != nil {
		return nil, err
	}
	var public *url.URL
	if cfg.PublicURL != "" {
		if public, err = parseBase("catalog.public_url", cfg.PublicURL); err != nil {
			return nil, err
		}
	}
	tlsCfg, err := cfg.TLS.tlsConfig()
	if err != nil {
		return nil, err
	}
	tr := &http.Transport{
		Proxy:                 nil, // the upstream is reached directly, never through the environment's proxy
		DialContext:           upstreamDialer(up, cfg.ConnectTimeout),
		TLSClientConfig:       tlsCfg,
		TLSHandshakeTimeout:   cfg.ConnectTimeout,
		ResponseHeaderTimeout: cfg.ResponseTimeout,
		ExpectContinueTimeout: time.Second,
		MaxIdleConns:          cfg.MaxConcurrency,
		MaxIdleConnsPerHost:   cfg.MaxConcurrency,
		IdleConnTimeout:       90 * time.Second,
		ForceAttemptHTTP2:     true,
	}
	log := o.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	now := o.Now
	if now == nil {
		now = time.Now
	}
	f := &Front{
		cfg:      cfg,
		upstream: up,
		public:   public,
		client: &http.Client{
			Transport: tr,
			// Redirects go back to the client as the catalog sent them.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
		log:            log,
		inflight:       make(chan struct{}, cfg.MaxConcurrency),
		budget:         semaphore.NewWeighted(cfg.AnswerBudgetBytes),
		bodies:         semaphore.NewWeighted(heldBodies * int64(cfg.MaxRequestBytes)),
		locationPolicy: o.Locations,
	}
	sep := DefaultNamespaceSeparator
	if cfg.NamespaceSeparator != "" {
		sep = cfg.NamespaceSeparator
	}
	f.separator.Store(&sep)
	f.locations = newLocations(cfg.LocationCacheSize, cfg.LocationTTL, cfg.LocationStaleGrace, now, f.fetchLocation)
	f.locations.check = f.checkLocation
	f.known = newKnownTables(cfg.LocationCacheSize)
	return f, nil
}

// errDialRefused is the dialer's refusal of any address but the
// upstream's; it names neither.
var errDialRefused = errors.New("countersign connects to the configured catalog upstream only")

// upstreamDialer dials the configured upstream's host and port and
// nothing else, whatever URL a request carries: the front cannot be
// turned into a connection to another host or port.
func upstreamDialer(up *url.URL, timeout time.Duration) func(ctx context.Context, network, addr string) (net.Conn, error) {
	port := up.Port()
	if port == "" {
		port = "80"
		if up.Scheme == "https" {
			port = "443"
		}
	}
	want := net.JoinHostPort(up.Hostname(), port)
	d := &net.Dialer{Timeout: timeout, KeepAlive: 30 * time.Second}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		if addr != want || (network != "tcp" && network != "tcp4" && network != "tcp6") {
			return nil, errDialRefused
		}
		return d.DialContext(ctx, network, want)
	}
}

// Close releases the upstream connections.
func (f *Front) Close() { f.client.CloseIdleConnections() }

// Upstream is the catalog's base URI, for logs.
func (f *Front) Upstream() string { return f.upstream.String() }

// NamespaceSeparator is the separator of namespace levels in a decoded
// path segment ("\x1f" unless the catalog's /v1/config says otherwise).
func (f *Front) NamespaceSeparator() string {
	s := *f.separator.Load()
	if d, err := url.PathUnescape(s); err == nil && d != "" {
		return d
	}
	return s
}

// Locate is the table's location for the caller (see Locations.Locate):
// table is the raw path "/v1/{prefix}/namespaces/{namespace}/tables/{table}".
func (f *Front) Locate(ctx context.Context, token [32]byte, authorization []byte, table string) (string, error) {
	return f.locations.Locate(ctx, token, authorization, table)
}

// parseTable decodes a raw table path into the policy's table.
func (f *Front) parseTable(table string) (policyinput.Table, bool) {
	rest, ok := strings.CutPrefix(table, "/v1/")
	if !ok {
		return policyinput.Table{}, false
	}
	segs := strings.Split(rest, "/")
	var t policyinput.Table
	switch {
	case len(segs) == 4 && segs[0] == "namespaces" && segs[2] == "tables":
	case len(segs) == 5 && segs[1] == "namespaces" && segs[3] == "tables":
		p, err := url.PathUnescape(segs[0])
		if err != nil {
			return t, false
		}
		t.Prefix, segs = p, segs[1:]
	default:
		return t, false
	}
	ns, err1 := url.PathUnescape(segs[1])
	name, err2 := url.PathUnescape(segs[3])
	if err1 != nil || err2 != nil || ns == "" || name == "" {
		return t, false
	}
	t.Namespace = strings.Split(ns, f.NamespaceSeparator())
	t.Name = name
	return t, true
}
