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

// testVendors is the Vendor each test's front was made with (newFront):
// the server hands the front one per request; these tests, the same one
// to every request.
var testVendors sync.Map // *Front → Vendor

// testRefusals is the Refusals a test gave its front (recordRefusals).
var testRefusals sync.Map // *Front → Refusals

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
func recordRefusals(t *testing.T, f *Front) *refusalLog {
	l := &refusalLog{}
	testRefusals.Store(f, l)
	t.Cleanup(func() { testRefusals.Delete(f) })
	return l
}

// serveFront serves f on a loopback port the way server.Server hands it
// paths (no base path), with the Vendor newFront was given, and returns
// its base URI.
func serveFront(t *testing.T, f *Front) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var v Vendor
	if x, ok := testVendors.Load(f); ok {
		v = x.(Vendor)
	}
	var rec Refusals
	if x, ok := testRefusals.Load(f); ok {
		rec = x.(Refusals)
	}
	srv := &fasthttp.Server{
		Handler:           func(ctx *fasthttp.RequestCtx) { f.Serve(ctx, string(ctx.URI().PathOriginal()), "", v, rec) },
		StreamRequestBody: false,
		ReadTimeout:       10 * time.Second,
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Shutdown(); f.Close() })
	return "http://" + ln.Addr().String()
}

func newFront(t *testing.T, cfg Config, vendor Vendor) *Front {
	t.Helper()
	f, err := New(Options{Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	if vendor != nil {
		testVendors.Store(f, vendor)
		t.Cleanup(func() { testVendors.Delete(f) })
	}
	return f
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}
