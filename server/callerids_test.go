package server

import (
	"net"
	"strings"
	"testing"

	"github.com/valyala/fasthttp"
)

// TestCallerIDs: the source address is what net.IP's String says (the
// policy input and the records name it so), and the request id is the
// client's when well-formed, a fresh 24-hex-digit one otherwise.
func TestCallerIDs(t *testing.T) {
	ips := []net.IP{
		net.IPv4(127, 0, 0, 1), net.IPv4(10, 1, 2, 3).To4(), net.IPv4zero, net.IPv6loopback,
		net.ParseIP("2001:db8::8a2e:370:7334"), net.ParseIP("::ffff:192.0.2.1"), net.ParseIP("fe80::1"),
		nil, {1, 2, 3},
	}
	for _, ip := range ips {
		var ctx fasthttp.RequestCtx
		ctx.Init(&ctx.Request, &net.TCPAddr{IP: ip, Port: 4242}, nil)
		gotIP, id := callerIDs(&ctx)
		if want := ctx.RemoteIP().String(); gotIP != want {
			t.Errorf("source of %#v: %q, want %q", ip, gotIP, want)
		}
		if len(id) != 24 || strings.Trim(id, "0123456789abcdef") != "" {
			t.Errorf("generated request id %q: want 24 hex digits", id)
		}
		_, id2 := callerIDs(&ctx)
		if id2 == id {
			t.Errorf("two requests got the same id %q", id)
		}
	}
	for id, kept := range map[string]bool{
		"req-1.A_b":             true,
		strings.Repeat("a", 64): true,
		strings.Repeat("a", 65): false,
		"a b":                   false,
		"a/b":                   false,
	} {
		var ctx fasthttp.RequestCtx
		ctx.Init(&ctx.Request, &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)}, nil)
		ctx.Request.Header.Set("X-Request-Id", id)
		ip, got := callerIDs(&ctx)
		if ip != "127.0.0.1" {
			t.Errorf("source %q", ip)
		}
		if (got == id) != kept {
			t.Errorf("X-Request-Id %q: got id %q, kept %v", id, got, kept)
		}
	}
}
