package catalog

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
)

// serveFrontStreaming serves f as countersign does with the front on:
// bodies streamed, the listener itself reading at most 1 KiB of one.
func serveFrontStreaming(t *testing.T, f *testFront) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &fasthttp.Server{
		Handler:            func(ctx *fasthttp.RequestCtx) { f.Serve(ctx, string(ctx.URI().PathOriginal()), "", f.vendor, f.rec) },
		StreamRequestBody:  true,
		MaxRequestBodySize: 1 << 10,
		ReadTimeout:        10 * time.Second,
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Shutdown(); f.Close() })
	return ln.Addr().String()
}

// countingUpstream reads each request's body and keeps its length.
func countingUpstream(t *testing.T) (*httptest.Server, *atomic.Int64) {
	var got atomic.Int64
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, err := io.Copy(io.Discard, r.Body)
		got.Store(n)
		w.Header().Set("Content-Type", "application/json")
		if err != nil {
			w.WriteHeader(http.StatusBadRequest)
		}
		io.WriteString(w, `{"namespace":["db"],"properties":{}}`)
	}))
	t.Cleanup(up.Close)
	return up, &got
}

// exchange sends one raw HTTP/1.1 request and reads the answer's status.
func exchange(t *testing.T, addr, head string, body io.Reader) int {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	go func() {
		io.WriteString(c, head)
		if body != nil {
			io.Copy(c, body)
		}
	}()
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// chunked is an HTTP/1.1 chunked body of n bytes in 4 KiB chunks.
func chunked(n int) io.Reader {
	var b strings.Builder
	for n > 0 {
		k := min(n, 4<<10)
		fmt.Fprintf(&b, "%x\r\n%s\r\n", k, strings.Repeat("x", k))
		n -= k
	}
	b.WriteString("0\r\n\r\n")
	return strings.NewReader(b.String())
}

// A forwarded route's body streams to the catalog whole, far past what
// the listener reads itself; one over catalog.max_request_bytes is
// refused from its Content-Length, and a chunked one is cut off there:
// the catalog never gets more than the limit.
func TestRequestBodiesStream(t *testing.T) {
	up, got := countingUpstream(t)
	addr := serveFrontStreaming(t, newFront(t, Config{Upstream: up.URL, MaxRequestBytes: 64 << 10}, nil))
	body := `{"namespace":["db"],"properties":{"pad":"` + strings.Repeat("p", 60<<10) + `"}}`
	if st := exchange(t, addr, fmt.Sprintf("POST /v1/namespaces HTTP/1.1\r\nHost: f\r\nContent-Length: %d\r\n\r\n", len(body)), strings.NewReader(body)); st != 200 || got.Load() != int64(len(body)) {
		t.Fatalf("60 KiB createNamespace: %d, catalog read %d of %d bytes", st, got.Load(), len(body))
	}
	got.Store(-1)
	if st := exchange(t, addr, "POST /v1/namespaces HTTP/1.1\r\nHost: f\r\nContent-Length: 65537\r\n\r\n", strings.NewReader(strings.Repeat("x", 65537))); st != http.StatusRequestEntityTooLarge || got.Load() != -1 {
		t.Fatalf("declared over the limit: %d, catalog read %d bytes", st, got.Load())
	}
	if st := exchange(t, addr, "POST /v1/namespaces HTTP/1.1\r\nHost: f\r\nTransfer-Encoding: chunked\r\n\r\n", chunked(20<<10)); st != 200 || got.Load() != 20<<10 {
		t.Fatalf("chunked 20 KiB: %d, catalog read %d bytes", st, got.Load())
	}
	st := exchange(t, addr, "POST /v1/namespaces HTTP/1.1\r\nHost: f\r\nTransfer-Encoding: chunked\r\n\r\n", chunked(256<<10))
	if st == 200 || got.Load() > 64<<10 {
		t.Fatalf("chunked 256 KiB over a 64 KiB limit: %d, catalog read %d bytes", st, got.Load())
	}
}

// The bodies the front reads (createTable here) are read whole within
// catalog.max_request_bytes, chunked or not, and refused beyond it.
func TestInspectedBodiesReadWhole(t *testing.T) {
	up, got := countingUpstream(t)
	addr := serveFrontStreaming(t, newFront(t, Config{Upstream: up.URL, MaxRequestBytes: 64 << 10}, nil))
	body := `{"name":"t","schema":{"type":"struct","fields":[]},"properties":{"pad":"` + strings.Repeat("p", 30<<10) + `"}}`
	var b strings.Builder
	fmt.Fprintf(&b, "%x\r\n%s\r\n0\r\n\r\n", len(body), body)
	st := exchange(t, addr, "POST /v1/namespaces/db/tables HTTP/1.1\r\nHost: f\r\nTransfer-Encoding: chunked\r\n\r\n", strings.NewReader(b.String()))
	if got.Load() != int64(len(body)) {
		t.Fatalf("chunked 30 KiB createTable: %d, catalog read %d of %d bytes", st, got.Load(), len(body))
	}
	got.Store(-1)
	if st := exchange(t, addr, "POST /v1/namespaces/db/tables HTTP/1.1\r\nHost: f\r\nTransfer-Encoding: chunked\r\n\r\n", chunked(100<<10)); st != http.StatusRequestEntityTooLarge || got.Load() != -1 {
		t.Fatalf("chunked createTable over the limit: %d, catalog read %d bytes", st, got.Load())
	}
}

// A read of the client's body still waiting when the front is done (a
// catalog that answered before reading it) is ended, and the stream is
// not read again: the client's connection goes back to the server.
func TestClientBodyDetach(t *testing.T) {
	c1, c2 := net.Pipe()
	defer c1.Close()
	defer c2.Close()
	cb := &clientBody{r: c1, left: 10, conn: c1}
	done := make(chan error, 1)
	go func() {
		_, err := cb.Read(make([]byte, 4))
		done <- err
	}()
	time.Sleep(50 * time.Millisecond) // the read waits for the client
	cb.detach()
	if err := <-done; err == nil {
		t.Fatal("the waiting read was not ended")
	}
	if _, err := cb.Read(make([]byte, 4)); err != errBodyDetached {
		t.Fatalf("read after detach: %v", err)
	}
	// Over its limit, the stream is an error, not a short body.
	cb = &clientBody{r: strings.NewReader(strings.Repeat("x", 11)), left: 10}
	if _, err := io.ReadAll(cb); err == nil {
		t.Fatal("11 bytes read under a limit of 10")
	}
}
