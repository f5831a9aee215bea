package bench

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/netip"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"
)

// Target is one countersign to load.
type Target struct {
	// Name labels the target in reports: "full" or "floor".
	Name string `json:"name"`
	// URL is countersign's base URL, scheme://host:port[/base-path]; the
	// sign route is appended.
	URL string `json:"url"`
	// MetricsURL is where its Prometheus metrics are ("" means URL +
	// "/metrics"; "-" means do not scrape).
	MetricsURL string `json:"metrics_url,omitempty"`
}

func (t Target) metricsURL() string {
	switch t.MetricsURL {
	case "-":
		return ""
	case "":
		return strings.TrimRight(t.URL, "/") + "/metrics"
	}
	return t.MetricsURL
}

// RunOptions configures one run. A run stops at the first of Duration,
// Requests and Scans that is set (> 0); at least one must be.
type RunOptions struct {
	Plan *Plan
	// Tokens are the principals' bearer tokens: request r is sent with
	// Tokens[r.Principal % len(Tokens)].
	Tokens []string
	// Concurrency is the number of connections, each with one request in
	// flight at a time (a closed loop, like an engine's signer threads).
	Concurrency int
	Duration    time.Duration
	Requests    int64
	Scans       int
	// Timeout bounds one request (default 10 s).
	Timeout time.Duration
	// VerifyEvery fully decodes one response in this many and checks it
	// against the request (0: 1000; < 0: never). Every response is checked
	// for status 200 and an Authorization header.
	VerifyEvery int
	// AllowRemote permits a URL that is not a loopback address.
	AllowRemote bool
	// Progress, when set, gets a progress bar (a terminal).
	Progress io.Writer
	// NoScrape skips /metrics (warm-up runs).
	NoScrape bool
	// Seed varies the invocation ids between runs.
	Seed uint64
}

// RunReport is the outcome of one run against one target.
type RunReport struct {
	Target string `json:"target"`
	URL    string `json:"url"`
	Round  int    `json:"round,omitempty"`

	Requests int64 `json:"requests"`
	OK       int64 `json:"ok"`
	// Errors counts failed requests by HTTP status ("403"), or by
	// "transport" / "timeout" / "bad-response"; ErrorSamples holds the
	// first message of each.
	Errors       map[string]int64  `json:"errors"`
	ErrorSamples map[string]string `json:"error_samples,omitempty"`
	// Objects is the number of per-object decisions in successful requests.
	Objects int64 `json:"objects"`

	Seconds        float64        `json:"seconds"`
	RequestsPerSec float64        `json:"requests_per_s"`
	OKPerSec       float64        `json:"ok_per_s"`
	ObjectsPerSec  float64        `json:"objects_per_s"`
	Latency        LatencySummary `json:"latency"`

	// ScanSeconds are the completion times of the complete scans of the
	// run, in order: from the scan's first request sent to its last answer.
	ScanSeconds []float64 `json:"scan_seconds"`

	// ClientCPUMicrosPerRequest is the generator process's CPU per request
	// (it includes the server when both run in one process, as in tests).
	ClientCPUMicrosPerRequest float64 `json:"client_cpu_us_per_request"`
	// OtherCores is the CPU the rest of the machine used during the run,
	// in cores (machine CPU minus this process and the scraped server):
	// well above 0, other work competed with the run.
	OtherCores float64 `json:"other_cores"`

	// Verified counts the responses decoded and checked (VerifyEvery);
	// Canned is set when they carried countersign's canned-response
	// (floor) signature rather than a real one.
	Verified int64 `json:"verified"`
	Canned   bool  `json:"canned"`

	Server      *ServerStats `json:"server,omitempty"`
	ServerError string       `json:"server_metrics_error,omitempty"`
}

// FirstScan is the completion time of the run's first scan (0 if none
// completed).
func (r *RunReport) FirstScan() float64 {
	if len(r.ScanSeconds) == 0 {
		return 0
	}
	return r.ScanSeconds[0]
}

// CheckLoopback refuses a URL whose host is not a loopback address:
// "localhost", 127.0.0.0/8 or ::1. Load tests here must stay on the
// machine.
func CheckLoopback(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("bench: bad URL %q: %w", raw, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("bench: URL %q must be http:// or https://", raw)
	}
	host := u.Hostname()
	if host == "localhost" {
		return nil
	}
	if ip, err := netip.ParseAddr(host); err == nil && ip.Unmap().IsLoopback() {
		return nil
	}
	return fmt.Errorf("bench: refusing to load %s: not a loopback address (127.0.0.0/8, ::1, localhost); pass -allow-remote to load another host you run", u.Host)
}

// Run loads one target and measures it.
func Run(ctx context.Context, t Target, o RunOptions) (*RunReport, error) {
	if o.Plan == nil || len(o.Tokens) == 0 {
		return nil, errors.New("bench: a plan and at least one token are required")
	}
	if o.Plan.Units() == 0 {
		return nil, errors.New("bench: the plan has no requests")
	}
	if o.Concurrency < 1 {
		return nil, errors.New("bench: concurrency must be at least 1")
	}
	if o.Duration <= 0 && o.Requests <= 0 && o.Scans <= 0 {
		return nil, errors.New("bench: a duration, a request count or a scan count is required")
	}
	if o.Timeout <= 0 {
		o.Timeout = 10 * time.Second
	}
	if o.VerifyEvery == 0 {
		o.VerifyEvery = 1000
	}
	u, err := url.Parse(t.URL)
	if err != nil {
		return nil, fmt.Errorf("bench: bad URL %q: %w", t.URL, err)
	}
	if !o.AllowRemote {
		if err := CheckLoopback(t.URL); err != nil {
			return nil, err
		}
		if m := t.metricsURL(); m != "" && !o.NoScrape {
			if err := CheckLoopback(m); err != nil {
				return nil, err
			}
		}
	}
	addr := u.Host
	if u.Port() == "" {
		port := "80"
		if u.Scheme == "https" {
			port = "443"
		}
		addr = net.JoinHostPort(u.Hostname(), port)
	}
	hc := &fasthttp.HostClient{
		Addr:                     addr,
		Name:                     "countersign-bench",
		NoDefaultUserAgentHeader: true,
		MaxConns:                 o.Concurrency,
		MaxConnWaitTimeout:       o.Timeout,
		ReadTimeout:              o.Timeout,
		WriteTimeout:             o.Timeout,
		MaxIdleConnDuration:      time.Minute,
		IsTLS:                    u.Scheme == "https",
		DisablePathNormalizing:   true,
	}
	if hc.IsTLS {
		hc.TLSConfig = &tls.Config{ServerName: u.Hostname(), MinVersion: tls.VersionTLS12}
	}
	defer hc.CloseIdleConnections()
	prefix := u.Scheme + "://" + u.Host + strings.TrimRight(u.Path, "/")

	rep := &RunReport{Target: t.Name, URL: t.URL, Errors: map[string]int64{}}
	var before *Snapshot
	murl := t.metricsURL()
	if !o.NoScrape && murl != "" {
		if before, err = Scrape(murl, 5*time.Second); err != nil {
			rep.ServerError = err.Error()
		}
	}

	bearers := make([]string, len(o.Tokens))
	for i, tok := range o.Tokens {
		bearers[i] = "Bearer " + tok
	}
	r := &runner{
		plan:    o.Plan,
		units:   int64(o.Plan.Units()),
		opts:    o,
		hc:      hc,
		prefix:  prefix,
		bearers: bearers,
		scans:   newScanTracker(int64(o.Plan.Len())),
		per:     int64(o.Plan.Len()),
	}
	r.limit = -1
	if o.Requests > 0 {
		r.limit = o.Requests
	}
	r.passes = int64(o.Scans)
	cpu0, machine0 := processCPU(), machineCPU()
	start := time.Now()
	r.start = start
	if o.Duration > 0 {
		r.deadline = start.Add(o.Duration)
	}
	stopProgress := func() {}
	if o.Progress != nil {
		stopProgress = r.progress(o.Progress, t.Name)
	}
	stats := make([]*workerStats, o.Concurrency)
	var wg sync.WaitGroup
	for i := range stats {
		stats[i] = &workerStats{errors: map[string]int64{}, samples: map[string]string{}}
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			r.work(ctx, w, stats[w])
		}(i)
	}
	wg.Wait()
	elapsed := time.Since(start)
	cpu, machine := processCPU()-cpu0, machineCPU()-machine0
	stopProgress()

	var hist Histogram
	rep.ErrorSamples = map[string]string{}
	for _, s := range stats {
		hist.Merge(&s.hist)
		rep.OK += s.ok
		rep.Objects += s.objects
		for k, v := range s.errors {
			rep.Errors[k] += v
			rep.Requests += v
		}
		for k, v := range s.samples {
			if _, ok := rep.ErrorSamples[k]; !ok {
				rep.ErrorSamples[k] = v
			}
		}
	}
	rep.Requests += rep.OK
	rep.Seconds = elapsed.Seconds()
	if rep.Seconds > 0 {
		rep.RequestsPerSec = float64(rep.Requests) / rep.Seconds
		rep.OKPerSec = float64(rep.OK) / rep.Seconds
		rep.ObjectsPerSec = float64(rep.Objects) / rep.Seconds
	}
	rep.Latency = hist.Summary()
	rep.ScanSeconds = r.scans.completed()
	rep.Canned, rep.Verified = r.canned.Load(), r.verified.Load()
	if rep.Requests > 0 && cpu > 0 {
		rep.ClientCPUMicrosPerRequest = cpu.Seconds() / float64(rep.Requests) * 1e6
	}
	if len(rep.ErrorSamples) == 0 {
		rep.ErrorSamples = nil
	}
	if before != nil {
		after, err := Scrape(murl, 5*time.Second)
		if err != nil {
			rep.ServerError = err.Error()
		} else {
			rep.Server = Diff(before, after, rep.Seconds)
		}
	}
	if machine > 0 && rep.Seconds > 0 {
		other := machine - cpu.Seconds()
		if rep.Server != nil {
			other -= rep.Server.CPUUtilization * rep.Seconds
		}
		rep.OtherCores = max(other, 0) / rep.Seconds
	}
	if err := ctx.Err(); err != nil {
		return rep, err
	}
	return rep, nil
}

type runner struct {
	plan     *Plan
	units    int64 // units per scan
	passes   int64 // scans to run (0: no limit)
	opts     RunOptions
	hc       *fasthttp.HostClient
	prefix   string
	bearers  []string
	limit    int64 // < 0: none
	start    time.Time
	deadline time.Time
	scans    *scanTracker

	nextUnit atomic.Int64 // the next unit's sequence number (scan * units + unit)
	per      int64        // requests per scan
	done     atomic.Int64 // requests answered (or failed)
	errs     atomic.Int64
	// canned: a verified response had the floor's fake signature.
	canned   atomic.Bool
	verified atomic.Int64
}

type workerStats struct {
	hist    Histogram
	ok      int64
	objects int64
	errors  map[string]int64
	samples map[string]string
}

func (s *workerStats) fail(class, sample string) {
	s.errors[class]++
	if _, ok := s.samples[class]; !ok {
		if len(sample) > 300 {
			sample = sample[:300] + "..."
		}
		s.samples[class] = sample
	}
}

var authorizationKey = []byte(`"Authorization"`)

func (r *runner) work(ctx context.Context, w int, st *workerStats) {
	k := &worker{r: r, st: st, req: fasthttp.AcquireRequest(), resp: fasthttp.AcquireResponse(),
		rng: rand.New(rand.NewPCG(r.opts.Seed, uint64(w)+1)), uris: map[string]string{}}
	defer fasthttp.ReleaseRequest(k.req)
	defer fasthttp.ReleaseResponse(k.resp)
	// What Iceberg's REST HTTPClient (Apache HttpClient 5) sends to the
	// signer, besides the bearer token.
	req := k.req
	req.Header.SetMethod(fasthttp.MethodPost)
	req.Header.SetContentType("application/json")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("X-Client-Version", IcebergClientVersion)
	req.Header.Set("X-Client-Git-Commit-Short", "2114bf6")
	req.Header.SetUserAgent("Apache-HttpClient/5.4.4 (Java/17.0.13)")

	k.now = time.Now()
	for {
		// One unit at a time, its requests in order: a file's footer
		// before its column reads, as an engine's reader sends them.
		u := r.nextUnit.Add(1) - 1
		pass, unit := u/r.units, int(u%r.units)
		if r.passes > 0 && pass >= r.passes {
			return
		}
		start, end := r.plan.Unit(unit)
		if unit == 0 {
			r.scans.begin(pass, k.now)
		}
		for idx := start; idx < end; idx++ {
			if !k.send(ctx, pass, idx) {
				return
			}
		}
	}
}

// worker is one connection's loop and its reused buffers.
type worker struct {
	r    *runner
	st   *workerStats
	req  *fasthttp.Request
	resp *fasthttp.Response
	rng  *rand.Rand
	sr   SignRequest
	body []byte
	inv  [36]byte
	uris map[string]string // path -> URL
	now  time.Time         // when the last answer came
}

// send sends request idx of the plan and records its answer; false: the
// run is over.
func (k *worker) send(ctx context.Context, pass int64, idx int) bool {
	r, st, req, resp := k.r, k.st, k.req, k.resp
	if ctx.Err() != nil {
		return false
	}
	if !r.deadline.IsZero() && !k.now.Before(r.deadline) {
		return false
	}
	// The request's place in the plan's order (scan after scan), not in
	// the order workers get to it: a limit of N sends exactly the plan's
	// first N requests, so the scans it covers complete however the
	// workers interleave.
	n := pass*r.per + int64(idx)
	if r.limit >= 0 && n >= r.limit {
		return false
	}
	appendUUID(k.inv[:0], k.rng.Uint64(), k.rng.Uint64())
	r.plan.Fill(&k.sr, idx, string(k.inv[:]))
	k.body = AppendJSON(k.body[:0], &k.sr)
	uri, ok := k.uris[k.sr.Path]
	if !ok {
		uri = r.prefix + k.sr.Path
		k.uris[k.sr.Path] = uri
	}
	req.SetRequestURI(uri)
	req.Header.Set(fasthttp.HeaderAuthorization, r.bearers[k.sr.Principal%len(r.bearers)])
	req.SetBodyRaw(k.body)

	t0 := time.Now()
	err := r.hc.Do(req, resp)
	k.now = time.Now()
	lat := k.now.Sub(t0)
	switch {
	case err != nil:
		class := "transport"
		if errors.Is(err, fasthttp.ErrTimeout) || errors.Is(err, fasthttp.ErrDialTimeout) || isTimeout(err) {
			class = "timeout"
		}
		st.fail(class, err.Error())
		r.errs.Add(1)
	case resp.StatusCode() != fasthttp.StatusOK:
		st.hist.Record(lat)
		st.fail(fmt.Sprint(resp.StatusCode()), string(resp.Body()))
		r.errs.Add(1)
	case !bytes.Contains(resp.Body(), authorizationKey):
		st.hist.Record(lat)
		st.fail("bad-response", "no Authorization header in "+string(resp.Body()))
		r.errs.Add(1)
	default:
		st.hist.Record(lat)
		if v := r.opts.VerifyEvery; v > 0 && n%int64(v) == 0 {
			r.verified.Add(1)
			canned, err := VerifyResponse(&k.sr, resp.Body())
			if err != nil {
				st.fail("bad-response", err.Error())
				r.errs.Add(1)
				break
			}
			if canned {
				r.canned.Store(true)
			}
		}
		st.ok++
		st.objects += int64(k.sr.Objects)
	}
	r.scans.end(pass, k.now)
	r.done.Add(1)
	return true
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// cannedCredential marks the fake signature of serve's canned-response
// mode (server.CannedAuthorization).
const cannedCredential = "Credential=COUNTERSIGN-CANNED/"

// VerifyResponse checks a RemoteSignResult against its request: the same
// uri, every header the client sent echoed with its values, and a SigV4
// Authorization header added. canned reports the floor's fake signature.
func VerifyResponse(r *SignRequest, body []byte) (canned bool, err error) {
	var res struct {
		URI     string              `json:"uri"`
		Headers map[string][]string `json:"headers"`
	}
	if err := json.Unmarshal(body, &res); err != nil {
		return false, fmt.Errorf("response is not a RemoteSignResult: %v", err)
	}
	if res.URI != r.URI {
		return false, fmt.Errorf("response uri %q, want the request's %q", res.URI, r.URI)
	}
	for _, h := range r.Headers {
		v, ok := res.Headers[h.Name]
		if !ok || len(v) != 1 || v[0] != h.Value {
			return false, fmt.Errorf("response header %s = %q, want the request's %q", h.Name, v, h.Value)
		}
	}
	if a := res.Headers["Authorization"]; len(a) != 1 || !strings.HasPrefix(a[0], "AWS4-HMAC-SHA256 Credential=") {
		return false, fmt.Errorf("response has no SigV4 Authorization header")
	}
	return strings.Contains(res.Headers["Authorization"][0], cannedCredential), nil
}

// scanTracker times each pass over the plan: from its first request sent
// to its last answered.
type scanTracker struct {
	mu     sync.Mutex
	per    int64
	starts map[int64]time.Time
	left   map[int64]int64
	done   []float64
}

func newScanTracker(per int64) *scanTracker {
	return &scanTracker{per: per, starts: map[int64]time.Time{}, left: map[int64]int64{}}
}

func (s *scanTracker) begin(pass int64, t time.Time) {
	s.mu.Lock()
	if _, ok := s.starts[pass]; !ok {
		s.starts[pass] = t
	}
	s.mu.Unlock()
}

func (s *scanTracker) end(pass int64, t time.Time) {
	s.mu.Lock()
	s.left[pass]++
	if s.left[pass] == s.per {
		if st, ok := s.starts[pass]; ok {
			s.done = append(s.done, t.Sub(st).Seconds())
		}
		delete(s.left, pass)
		delete(s.starts, pass)
	}
	s.mu.Unlock()
}

func (s *scanTracker) completed() []float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]float64{}, s.done...)
}

// progress draws a bar on w every 200 ms until the returned func is called.
func (r *runner) progress(w io.Writer, name string) func() {
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				fmt.Fprint(w, "\r\033[K")
				return
			case <-tick.C:
				fmt.Fprint(w, "\r\033[K"+r.progressLine(name))
			}
		}
	}()
	return func() { close(stop); wg.Wait() }
}

func (r *runner) progressLine(name string) string {
	const width = 30
	done := r.done.Load()
	el := time.Since(r.start)
	frac := 0.0
	if r.limit > 0 {
		frac = float64(done) / float64(r.limit)
	}
	if !r.deadline.IsZero() {
		frac = max(frac, float64(el)/float64(r.deadline.Sub(r.start)))
	}
	frac = min(max(frac, 0), 1)
	fill := int(frac * width)
	rate := 0.0
	if el > 0 {
		rate = float64(done) / el.Seconds()
	}
	return fmt.Sprintf("%-5s [%s%s] %3.0f%%  %d req  %.0f req/s  %d errors",
		name, strings.Repeat("#", fill), strings.Repeat(".", width-fill), frac*100, done, rate, r.errs.Load())
}

// IsTerminal reports whether w is a terminal (for the progress bar).
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && isTerminal(f)
}
