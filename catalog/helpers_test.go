package catalog

import (
	"context"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
)

// testFront is a Front with what the server hands it per request: the
// Vendor newFront was given and the Refusals recordRefusals set (these
// tests hand the same ones to every request).
type testFront struct {
	*Front
	vendor Vendor
	rec    Refusals
}

// refusalLog is a Refusals that keeps what it was given and answers with
// it (the server's recording is tested in package server).
type refusalLog struct {
	mu  sync.Mutex
	got []Refusal
}

func (l *refusalLog) Refused(_ *fasthttp.RequestCtx, r Refusal) Refusal {
	l.mu.Lock()
	defer l.mu.Unlock()
	r.RequestID = "rid-" + strconv.Itoa(len(l.got))
	l.got = append(l.got, r)
	return r
}

func (l *refusalLog) all() []Refusal {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]Refusal(nil), l.got...)
}

// recordRefusals has serveFront hand f's refusals to a refusalLog.
func recordRefusals(t *testing.T, f *testFront) *refusalLog {
	l := &refusalLog{}
	f.rec = l
	return l
}

// serveFront serves f on a loopback port the way server.Server hands it
// paths (no base path), with the Vendor newFront was given, and returns
// its base URI.
func serveFront(t *testing.T, f *testFront) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &fasthttp.Server{
		Handler:           func(ctx *fasthttp.RequestCtx) { f.Serve(ctx, string(ctx.URI().PathOriginal()), "", f.vendor, f.rec) },
		StreamRequestBody: false,
		ReadTimeout:       10 * time.Second,
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Shutdown(); f.Close() })
	return "http://" + ln.Addr().String()
}

func newFront(t *testing.T, cfg Config, vendor Vendor) *testFront {
	t.Helper()
	f, err := New(Options{Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	return &testFront{Front: f, vendor: vendor}
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// newTestFront is New for tests that set more Options than newFront does.
func newTestFront(o Options) (*testFront, error) {
	f, err := New(o)
	if err != nil {
		return nil, err
	}
	return &testFront{Front: f}, nil
}
