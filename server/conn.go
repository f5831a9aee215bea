package server

import (
	"crypto/tls"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// conn is one accepted TCP connection, beneath TLS when TLS is on, so that
// what it does on Close happens on the socket itself.
type conn struct {
	net.Conn
	l *listener

	// linger asks Close to drain the rest of the request first: the server
	// answered before it had read the whole request (a header or body over
	// the limit), and closing with unread bytes makes the kernel send a
	// reset, which can destroy the answer before the client reads it.
	linger    atomic.Bool
	closeOnce sync.Once
	closeErr  error
}

// Close closes the connection, lingering first when asked to.
func (c *conn) Close() error {
	c.closeOnce.Do(func() {
		if c.linger.Load() {
			lingerDrain(c.Conn, c.l.lingerTimeout, c.l.lingerBytes)
		}
		c.closeErr = c.Conn.Close()
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

// listener wraps accepted connections in *conn, beneath TLS.
type listener struct {
	net.Listener
	lingerTimeout time.Duration
	lingerBytes   int64
}

func (l *listener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &conn{Conn: c, l: l}, nil
}
