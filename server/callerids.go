package server

import (
	"crypto/rand"
	"encoding/hex"
	"net/netip"

	"github.com/valyala/fasthttp"
)

// callerIDs returns the caller's address, as net.IP's String writes it, and
// the request's id: a well-formed client X-Request-Id (so a caller can
// correlate) or a fresh random one. Both are in one string's memory: one
// allocation per request instead of two.
func callerIDs(ctx *fasthttp.RequestCtx) (sourceIP, requestID string) {
	var b [128]byte
	buf := b[:0]
	ip := ctx.RemoteIP()
	if a, ok := netip.AddrFromSlice(ip); ok {
		buf = a.Unmap().AppendTo(buf)
	} else {
		buf = append(buf, ip.String()...)
	}
	n := len(buf)
	if v := ctx.Request.Header.Peek("X-Request-Id"); len(v) > 0 && len(v) <= 64 && isToken(v) {
		buf = append(buf, v...)
	} else {
		var id [12]byte
		rand.Read(id[:])
		buf = hex.AppendEncode(buf, id[:])
	}
	s := string(buf)
	return s[:n], s[n:]
}
