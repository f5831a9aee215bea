package catalog

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
)

// serveFront serves f on a loopback port the way server.Server hands it
// paths (no base path) and returns its base URI.
func serveFront(t *testing.T, f *Front) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &fasthttp.Server{
		Handler:           func(ctx *fasthttp.RequestCtx) { f.Serve(ctx, string(ctx.URI().PathOriginal()), "") },
		StreamRequestBody: false,
		ReadTimeout:       10 * time.Second,
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Shutdown(); f.Close() })
	return "http://" + ln.Addr().String()
}

func newFront(t *testing.T, cfg Config, vendor Vendor) *Front {
	t.Helper()
	f, err := New(Options{Config: cfg, Vendor: vendor})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}
