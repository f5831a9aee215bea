package server

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// serveTCP serves s on a real loopback socket, as countersign does.
func serveTCP(t testing.TB, s *Server) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go s.Serve(ln)
	t.Cleanup(func() { s.Shutdown() })
	return ln.Addr().String()
}

// loadOtherCore keeps a core busy for the rest of the test, the condition
// under which CI saw oversized requests answered by a reset.
func loadOtherCore(t testing.TB) {
	done := make(chan struct{})
	go func() {
		x := 0
		for {
			select {
			case <-done:
				return
			default:
			}
			for i := range 1 << 20 {
				x ^= i
			}
		}
	}()
	t.Cleanup(func() { close(done) })
}

// sendOversized writes req to a new connection in 4 KiB pieces, as a client
// streaming a request does, while reading the answer. It returns the status
// read and the first write error: a client that is reset while it is still
// sending sees "broken pipe" or "connection reset", and may never read the
// answer.
func sendOversized(addr string, req []byte) (status int, writeErr, readErr error) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return 0, nil, err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(20 * time.Second))
	wrote := make(chan error, 1)
	go func() {
		for rest := req; len(rest) > 0; {
			n := min(4<<10, len(rest))
			if _, err := c.Write(rest[:n]); err != nil {
				wrote <- err
				return
			}
			rest = rest[n:]
		}
		wrote <- nil
	}()
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err == nil {
		status = resp.StatusCode
		_, err = io.Copy(io.Discard, resp.Body)
	}
	return status, <-wrote, err
}

// An answer given before the whole request was read (headers or body over
// the limit) reaches the client: the server drains the rest of the request
// before it closes, so the client neither fails to write nor is reset
// before it reads the status. 200 tries in a row with a core kept busy.
func TestOversizedRequestsAreAnswered(t *testing.T) {
	// 400 refusals from one address: the refusal limit is not under test.
	addr := serveTCP(t, newTestServer(t, testPolicy, nil, Options{RefusalLimit: RefusalLimit{PerSecond: 1e6, Burst: 1e6}}))
	loadOtherCore(t)

	bigHeader := fmt.Sprintf("POST /v1/aws/s3/sign HTTP/1.1\r\nHost: countersign\r\nAuthorization: Bearer %s\r\nContent-Length: 2\r\n\r\n{}",
		strings.Repeat("a", 64<<10))
	body := bytes.Repeat([]byte("x"), 2<<20)
	bigBody := append([]byte(fmt.Sprintf("POST /v1/aws/s3/sign HTTP/1.1\r\nHost: countersign\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", len(body))), body...)

	for _, tc := range []struct {
		name string
		req  []byte
		want int
	}{
		{"64 KiB header", []byte(bigHeader), http.StatusRequestHeaderFieldsTooLarge},
		{"2 MiB body", bigBody, http.StatusRequestEntityTooLarge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for i := range 200 {
				status, werr, rerr := sendOversized(addr, tc.req)
				if werr != nil || rerr != nil || status != tc.want {
					t.Fatalf("try %d: status %d (want %d), write error %v, read error %v", i+1, status, tc.want, werr, rerr)
				}
			}
		})
	}
}
