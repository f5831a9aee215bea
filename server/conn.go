package server

import (
	"crypto/tls"
	"io"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/countersign/countersign/remotesign"
)

// The states of a connection, as fasthttp reports them (ConnState), plus
// shed: closed by the listener to make room.
const (
	stateNew int32 = iota
	stateActive
	stateIdle
	stateShed
)

// conn is one accepted TCP connection, beneath TLS when TLS is on, so that
// what it does on Close happens on the socket itself.
type conn struct {
	net.Conn
	l   *listener
	src netip.Addr

	state atomic.Int32
	// authenticated is set once the connection carried an authenticated
	// request: from then on it keeps the normal idle timeout and is never
	// shed to make room.
	authenticated atomic.Bool
	// linger asks Close to drain the rest of the request first: the server
	// answered before it had read the whole request (a header or body over
	// the limit), and closing with unread bytes makes the kernel send a
	// reset, which can destroy the answer before the client reads it.
	linger atomic.Bool

	// Touched only by the connection's own goroutine (fasthttp's reads,
	// deadlines and state changes all run there).
	read     int64     // bytes read since the connection last went idle
	deadline time.Time // the read deadline fasthttp asked for

	closeOnce sync.Once
	closeErr  error
}

func (c *conn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.read += int64(n)
	return n, err
}

// requestBytes is how much the current request has sent so far.
func (c *conn) requestBytes() int64 { return c.read }

// SetReadDeadline shortens the wait for a request on a connection that
// never carried an authenticated one: such a connection costs an anonymous
// client nothing to hold open, so it gets limits.preauth_idle_timeout, not
// the idle_timeout of an engine's keep-alive pool.
func (c *conn) SetReadDeadline(t time.Time) error {
	c.deadline = t
	if d := c.l.preAuthIdle; d > 0 && !t.IsZero() && !c.authenticated.Load() {
		if s := c.state.Load(); s == stateNew || s == stateIdle {
			if limit := time.Now().Add(d); t.After(limit) {
				t = limit
			}
		}
	}
	return c.Conn.SetReadDeadline(t)
}

// setState follows fasthttp's view of the connection.
func (c *conn) setState(st fasthttp.ConnState) {
	switch st {
	case fasthttp.StateActive:
		prev := c.state.Load()
		if prev == stateShed || !c.state.CompareAndSwap(prev, stateActive) {
			return // shed while the request arrived: it is being closed
		}
		if !c.authenticated.Load() {
			c.l.busy(c)
			// A request is arriving: give it the read deadline fasthttp
			// asked for, not the short wait for one.
			if c.l.preAuthIdle > 0 && !c.deadline.IsZero() {
				_ = c.Conn.SetReadDeadline(c.deadline)
			}
		}
	case fasthttp.StateIdle:
		c.read = 0
		if c.state.CompareAndSwap(stateActive, stateIdle) && !c.authenticated.Load() {
			c.l.idle(c)
		}
	}
}

// markAuthenticated records that the connection carried an authenticated
// request.
func (c *conn) markAuthenticated() {
	if !c.authenticated.Load() {
		c.authenticated.Store(true)
	}
}

// Close closes the connection, lingering first when asked to.
func (c *conn) Close() error {
	c.closeOnce.Do(func() {
		if c.linger.Load() {
			lingerDrain(c.Conn, c.l.lingerTimeout, c.l.lingerBytes)
		}
		c.closeErr = c.Conn.Close()
		c.l.release(c)
	})
	return c.closeErr
}

// lingerDrain is nginx's lingering close: shut down the write side (the
// answer is already written, so the client sees it followed by the end of
// the stream), then read and discard what the client is still sending,
// until it closes, the deadline passes or max bytes were read. Only then is
// the socket closed, without unread data, so without a reset.
func lingerDrain(c net.Conn, timeout time.Duration, max int64) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		if cw.CloseWrite() != nil {
			return // the connection is already gone
		}
	}
	if c.SetReadDeadline(time.Now().Add(timeout)) != nil {
		return
	}
	_, _ = io.CopyN(io.Discard, c, max)
}

// connOf finds countersign's conn under what fasthttp was handed (the conn
// itself, or a *tls.Conn over it).
func connOf(c net.Conn) *conn {
	if tc, ok := c.(*tls.Conn); ok {
		c = tc.NetConn()
	}
	cc, _ := c.(*conn)
	return cc
}

// listener admits connections within the connection limits, beneath TLS.
// At the total limit it makes room by closing a connection that never
// carried an authenticated request and is waiting (idle or new), so an
// anonymous flood of idle connections cannot keep engines out; with
// nothing to close it answers 503 (429 past the per-source limit) in
// Iceberg's error model, with Retry-After, and closes.
type listener struct {
	net.Listener
	tls            *tls.Config
	maxConns       int
	maxPerSource   int
	preAuthIdle    time.Duration
	lingerTimeout  time.Duration
	lingerBytes    int64
	onShed         func(reason string) // metrics; may be nil
	answering      chan struct{}       // bounds the goroutines answering refused connections
	mu             sync.Mutex
	open           int
	perSource      map[netip.Addr]int
	idleAnon       map[*conn]struct{} // never authenticated, waiting for a request
	idleAnonSource map[netip.Addr]map[*conn]struct{}
}

func newListener(ln net.Listener, cfg *Config, onShed func(string)) *listener {
	return &listener{
		Listener: ln, tls: cfg.TLS,
		maxConns: cfg.MaxConnections, maxPerSource: cfg.MaxConnectionsPerSource,
		preAuthIdle:   cfg.PreAuthIdleTimeout,
		lingerTimeout: cfg.LingerTimeout, lingerBytes: cfg.LingerBytes,
		onShed:    onShed,
		answering: make(chan struct{}, 64),
		perSource: map[netip.Addr]int{}, idleAnon: map[*conn]struct{}{}, idleAnonSource: map[netip.Addr]map[*conn]struct{}{},
	}
}

// Accept returns the next admitted connection; refused ones are answered
// in the background.
func (l *listener) Accept() (net.Conn, error) {
	for {
		nc, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		src := sourceOf(nc.RemoteAddr())
		c := &conn{Conn: nc, l: l, src: src}
		status, reason, shed := l.admit(c)
		for _, old := range shed {
			_ = old.Close()
		}
		if status == 0 {
			return c, nil
		}
		l.refuse(nc, status, reason)
	}
}

// admit counts c in, or says why not (status 503 or 429). It returns the
// connections to close to make room.
func (l *listener) admit(c *conn) (status int, reason string, shed []*conn) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.maxPerSource > 0 && l.perSource[c.src] >= l.maxPerSource {
		old := l.pickIdle(l.idleAnonSource[c.src])
		if old == nil {
			return 429, "too many connections from " + c.src.String() + " (limits.max_connections_per_source is " + strconv.Itoa(l.maxPerSource) + ")", nil
		}
		shed = append(shed, old)
	} else if l.maxConns > 0 && l.open >= l.maxConns {
		old := l.pickIdle(l.idleAnon)
		if old == nil {
			return 503, "countersign is at its connection limit (limits.max_connections is " + strconv.Itoa(l.maxConns) + ")", nil
		}
		shed = append(shed, old)
	}
	l.open++
	l.perSource[c.src]++
	l.addIdle(c)
	return 0, "", shed
}

// pickIdle takes a waiting never-authenticated connection out of set and
// claims it for closing, or returns nil. It is removed from the counts when
// it closes.
func (l *listener) pickIdle(set map[*conn]struct{}) *conn {
	for c := range set {
		l.removeIdle(c)
		for {
			s := c.state.Load()
			if s == stateActive || s == stateShed {
				break
			}
			if c.state.CompareAndSwap(s, stateShed) {
				if l.onShed != nil {
					l.onShed("idle_unauthenticated")
				}
				return c
			}
		}
	}
	return nil
}

func (l *listener) addIdle(c *conn) {
	l.idleAnon[c] = struct{}{}
	m := l.idleAnonSource[c.src]
	if m == nil {
		m = map[*conn]struct{}{}
		l.idleAnonSource[c.src] = m
	}
	m[c] = struct{}{}
}

func (l *listener) removeIdle(c *conn) {
	delete(l.idleAnon, c)
	if m := l.idleAnonSource[c.src]; m != nil {
		delete(m, c)
		if len(m) == 0 {
			delete(l.idleAnonSource, c.src)
		}
	}
}

func (l *listener) idle(c *conn) {
	l.mu.Lock()
	if c.state.Load() == stateIdle {
		l.addIdle(c)
	}
	l.mu.Unlock()
}

func (l *listener) busy(c *conn) {
	l.mu.Lock()
	l.removeIdle(c)
	l.mu.Unlock()
}

// openConns is the number of admitted connections not closed yet.
func (l *listener) openConns() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.open
}

func (l *listener) release(c *conn) {
	l.mu.Lock()
	l.removeIdle(c)
	l.open--
	if n := l.perSource[c.src] - 1; n > 0 {
		l.perSource[c.src] = n
	} else {
		delete(l.perSource, c.src)
	}
	l.mu.Unlock()
}

// refuse answers a connection that was not admitted, then closes it,
// lingering so the client reads the answer. At most cap(answering) at
// once: past that, a flood of connections is closed unanswered.
func (l *listener) refuse(nc net.Conn, status int, reason string) {
	if l.onShed != nil {
		l.onShed(strconv.Itoa(status))
	}
	select {
	case l.answering <- struct{}{}:
	default:
		_ = nc.Close()
		return
	}
	go func() {
		defer func() { <-l.answering }()
		var w net.Conn = nc
		if l.tls != nil {
			w = tls.Server(nc, l.tls)
		}
		_ = nc.SetDeadline(time.Now().Add(2 * time.Second))
		if _, err := w.Write(refusalResponse(status, reason)); err == nil {
			lingerDrain(nc, min(l.lingerTimeout, 2*time.Second), l.lingerBytes)
		}
		_ = nc.Close()
	}()
}

// refusalResponse is a whole HTTP/1.1 answer in Iceberg's error model,
// written before the request is read.
func refusalResponse(status int, reason string) []byte {
	body := remotesign.AppendError(nil, status, errorType(status), reason+"; retry later")
	b := make([]byte, 0, 256+len(body))
	b = append(b, "HTTP/1.1 "...)
	b = strconv.AppendInt(b, int64(status), 10)
	b = append(b, ' ')
	b = append(b, fasthttp.StatusMessage(status)...)
	b = append(b, "\r\nContent-Type: application/json\r\nCache-Control: no-cache\r\nRetry-After: 1\r\nConnection: close\r\nContent-Length: "...)
	b = strconv.AppendInt(b, int64(len(body)), 10)
	b = append(b, "\r\n\r\n"...)
	return append(b, body...)
}

func sourceOf(a net.Addr) netip.Addr {
	if ta, ok := a.(*net.TCPAddr); ok {
		ip, _ := netip.AddrFromSlice(ta.IP)
		return ip.Unmap()
	}
	ap, err := netip.ParseAddrPort(a.String())
	if err != nil {
		return netip.Addr{}
	}
	return ap.Addr().Unmap()
}
