package server

import (
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/valyala/fasthttp"
)

// BenchmarkServeSign is the whole sign path in process, without the
// network: decode, authenticate (cached JWT), classify, authorize (OPA,
// fast path), sign (SDK SigV4), audit (real files, real fdatasync, group
// commit), encode — a scan's footer reads, each for another key, from 32
// concurrent callers so that group commit batches as under load. Its
// allocs/op are the path's; its ns/op is bounded by the disk's fdatasync
// latency over the batch size (see countersign bench for throughput).
func BenchmarkServeSign(b *testing.B) {
	benchServe(b, newTestServer(b, testPolicy, nil, Options{}))
}

// benchServe drives s as BenchmarkServeSign says.
func benchServe(b *testing.B, s *Server) {
	handler := s.Handler()
	auth := "Bearer " + aliceToken()
	var n atomic.Int64
	b.SetParallelism(16) // × GOMAXPROCS callers
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		var ctx fasthttp.RequestCtx
		body := make([]byte, 0, 512)
		for pb.Next() {
			i := n.Add(1)
			ctx.Request.Reset()
			ctx.Response.Reset()
			ctx.Request.Header.Set("Authorization", auth)
			ctx.Request.Header.SetMethod("POST")
			ctx.Request.SetRequestURI("/v1/aws/s3/sign")
			body = fmt.Appendf(body[:0], `{"region":"us-east-1","uri":"http://localhost:7070/lake/wh/db/t/data/%05d-7-6f1c2d3e-00001.parquet","method":"GET",`+
				`"headers":{"amz-sdk-invocation-id":["7b1c3a44-5d6e-4f10-9a2b-3c4d5e6f7a8b"],"amz-sdk-request":["attempt=1; max=4"],"Range":["bytes=-8192"],"User-Agent":["aws-sdk-java/2.29.52"]}}`, i)
			ctx.Request.SetBody(body)
			handler(&ctx)
			if ctx.Response.StatusCode() != 200 {
				b.Fatalf("status %d: %s", ctx.Response.StatusCode(), ctx.Response.Body())
			}
		}
	})
}
