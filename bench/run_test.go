package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
)

// fakeSigner is a minimal remote signer: it echoes the request's headers
// plus an Authorization header, refuses every denyEvery-th request with
// 403, and can lie about the uri.
type fakeSigner struct {
	n         atomic.Int64
	denyEvery int64
	wrongURI  bool

	// footerDelay holds each footer read's answer back; a column read of
	// a file whose footer read is not answered yet counts in early.
	footerDelay time.Duration
	footers     sync.Map // uri -> answered
	early       atomic.Int64
}

func (f *fakeSigner) handle(ctx *fasthttp.RequestCtx) {
	if string(ctx.Path()) == "/metrics" {
		ctx.SetBodyString("# TYPE countersign_stage_seconds histogram\n" +
			"countersign_stage_seconds_bucket{stage=\"decode\",le=\"+Inf\"} " + itoa(f.n.Load()) + "\n" +
			"countersign_stage_seconds_sum{stage=\"decode\"} " + itoa(f.n.Load()) + "e-06\n" +
			"countersign_stage_seconds_count{stage=\"decode\"} " + itoa(f.n.Load()) + "\n")
		return
	}
	n := f.n.Add(1)
	if !bytes.HasPrefix(ctx.Request.Header.Peek("Authorization"), []byte("Bearer tok-")) ||
		string(ctx.Request.Header.ContentType()) != "application/json" || !ctx.IsPost() {
		ctx.SetStatusCode(401)
		return
	}
	if f.denyEvery > 0 && n%f.denyEvery == 0 {
		ctx.SetStatusCode(403)
		ctx.SetBodyString(`{"error":{"message":"access denied","type":"ForbiddenException","code":403}}`)
		return
	}
	var in struct {
		URI     string              `json:"uri"`
		Headers map[string][]string `json:"headers"`
	}
	if err := json.Unmarshal(ctx.PostBody(), &in); err != nil {
		ctx.SetStatusCode(400)
		return
	}
	if rng := in.Headers["Range"]; f.footerDelay > 0 && len(rng) == 1 {
		if strings.HasPrefix(rng[0], "bytes=-") {
			time.Sleep(f.footerDelay)
			defer f.footers.Store(in.URI, true)
		} else if _, ok := f.footers.Load(in.URI); !ok {
			f.early.Add(1)
		}
	}
	in.Headers["Authorization"] = []string{"AWS4-HMAC-SHA256 Credential=AK/20260101/us-east-1/s3/aws4_request, SignedHeaders=host, Signature=00"}
	if f.wrongURI {
		in.URI += "x"
	}
	b, _ := json.Marshal(in)
	ctx.SetContentType("application/json")
	ctx.SetBody(b)
}

func itoa(n int64) string { b, _ := json.Marshal(n); return string(b) }

func startFake(t *testing.T, f *fakeSigner) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &fasthttp.Server{Handler: f.handle}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Shutdown() })
	return "http://" + ln.Addr().String()
}

func smallPlan(t *testing.T, files int) *Plan {
	w := DefaultWorkload()
	w.Files, w.Tables = files, 2
	return mustPlan(t, w)
}

func TestRunCountsAndErrors(t *testing.T) {
	f := &fakeSigner{denyEvery: 10}
	url := startFake(t, f)
	rep, err := Run(context.Background(), Target{Name: "full", URL: url}, RunOptions{
		Plan: smallPlan(t, 100), Tokens: []string{"tok-a", "tok-b"}, Concurrency: 8, Requests: 500, VerifyEvery: 1,
	})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Requests != 500 || rep.OK != 450 || rep.Errors["403"] != 50 || len(rep.Errors) != 1 {
		t.Fatalf("requests %d ok %d errors %v", rep.Requests, rep.OK, rep.Errors)
	}
	if !strings.Contains(rep.ErrorSamples["403"], "ForbiddenException") {
		t.Errorf("error sample %q", rep.ErrorSamples["403"])
	}
	if rep.Objects != 450 || rep.Latency.Count != 500 || rep.Latency.P50 <= 0 || rep.Latency.P99 < rep.Latency.P50 || rep.Latency.Max < rep.Latency.P99 {
		t.Errorf("objects %d latency %+v", rep.Objects, rep.Latency)
	}
	// 500 requests of a 200-request scan: two complete scans.
	if len(rep.ScanSeconds) != 2 || rep.ScanSeconds[0] <= 0 || rep.RequestsPerSec <= 0 {
		t.Errorf("scans %v, %v req/s", rep.ScanSeconds, rep.RequestsPerSec)
	}
	// The fake's /metrics was scraped before and after.
	if rep.Server == nil || len(rep.Server.Stages) != 1 || rep.Server.Stages[0].Count != 500 || !approx(rep.Server.Stages[0].MeanMicros, 1) {
		t.Errorf("server stats %+v (%s)", rep.Server, rep.ServerError)
	}
}

func TestRunStopsByScansAndDuration(t *testing.T) {
	url := startFake(t, &fakeSigner{})
	plan := smallPlan(t, 30)
	rep, err := Run(context.Background(), Target{Name: "full", URL: url, MetricsURL: "-"}, RunOptions{
		Plan: plan, Tokens: []string{"tok-a"}, Concurrency: 3, Scans: 3,
	})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Requests != 3*int64(plan.Len()) || len(rep.ScanSeconds) != 3 || rep.Server != nil || len(rep.Errors) != 0 {
		t.Errorf("3 scans: %d requests, scans %v, errors %v", rep.Requests, rep.ScanSeconds, rep.Errors)
	}

	start := time.Now()
	rep, err = Run(context.Background(), Target{Name: "full", URL: url, MetricsURL: "-"}, RunOptions{
		Plan: plan, Tokens: []string{"tok-a"}, Concurrency: 2, Duration: 300 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	if el := time.Since(start); el < 300*time.Millisecond || el > 10*time.Second || rep.OK == 0 {
		t.Errorf("a 300 ms run took %v with %d requests", el, rep.OK)
	}

	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	rep, err = Run(ctx, Target{Name: "full", URL: url, MetricsURL: "-"}, RunOptions{
		Plan: plan, Tokens: []string{"tok-a"}, Concurrency: 2, Duration: time.Hour,
	})
	if err == nil || rep == nil || rep.OK == 0 {
		t.Errorf("cancelled run: %v, %+v", err, rep)
	}
}

// TestRunReadsAFileInOrder: a file's column read goes out only after its
// footer read is answered, as a Parquet reader needs the footer to find
// the column chunks.
func TestRunReadsAFileInOrder(t *testing.T) {
	f := &fakeSigner{footerDelay: 5 * time.Millisecond}
	url := startFake(t, f)
	plan := smallPlan(t, 40)
	rep, err := Run(context.Background(), Target{Name: "full", URL: url, MetricsURL: "-"}, RunOptions{
		Plan: plan, Tokens: []string{"tok-a"}, Concurrency: 8, Scans: 1,
	})
	if err != nil {
		t.Fatal(err)
	}
	if rep.OK != int64(plan.Len()) || len(rep.ScanSeconds) != 1 {
		t.Fatalf("%d of %d requests answered, scans %v, errors %v", rep.OK, plan.Len(), rep.ScanSeconds, rep.Errors)
	}
	if n := f.early.Load(); n != 0 {
		t.Errorf("%d column reads went out before their file's footer read was answered", n)
	}
}

func TestRunVerifiesResponses(t *testing.T) {
	url := startFake(t, &fakeSigner{wrongURI: true})
	rep, err := Run(context.Background(), Target{Name: "full", URL: url, MetricsURL: "-"}, RunOptions{
		Plan: smallPlan(t, 10), Tokens: []string{"tok-a"}, Concurrency: 1, Requests: 20, VerifyEvery: 4,
	})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Errors["bad-response"] != 5 || rep.OK != 15 || !strings.Contains(rep.ErrorSamples["bad-response"], "uri") {
		t.Errorf("errors %v ok %d samples %v", rep.Errors, rep.OK, rep.ErrorSamples)
	}
	// A transport error is counted, not fatal.
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	dead := "http://" + ln.Addr().String()
	ln.Close()
	rep, err = Run(context.Background(), Target{Name: "full", URL: dead, MetricsURL: "-"}, RunOptions{
		Plan: smallPlan(t, 10), Tokens: []string{"tok-a"}, Concurrency: 1, Requests: 3, Timeout: time.Second,
	})
	if err != nil || rep.Errors["transport"] != 3 {
		t.Errorf("dead server: %v %v", err, rep.Errors)
	}
}

func TestLoopbackOnly(t *testing.T) {
	for _, u := range []string{"http://127.0.0.1:8181", "http://127.8.9.10", "https://localhost:1/base", "http://[::1]:8181", "http://[::ffff:127.0.0.1]:1"} {
		if err := CheckLoopback(u); err != nil {
			t.Errorf("%s: %v", u, err)
		}
	}
	for _, u := range []string{"http://10.0.0.1:8181", "http://192.168.1.1", "http://example.com", "http://localhost.example.com", "ftp://127.0.0.1", "http://0.0.0.0:8181", "http://[::]:1"} {
		if err := CheckLoopback(u); err == nil {
			t.Errorf("%s: accepted", u)
		}
	}
	// Run itself refuses, before sending anything.
	_, err := Run(context.Background(), Target{Name: "full", URL: "http://192.0.2.1:8181"}, RunOptions{
		Plan: smallPlan(t, 1), Tokens: []string{"t"}, Concurrency: 1, Requests: 1,
	})
	if err == nil || !strings.Contains(err.Error(), "-allow-remote") {
		t.Errorf("remote URL: %v", err)
	}
	_, err = Run(context.Background(), Target{Name: "full", URL: "http://127.0.0.1:1", MetricsURL: "http://192.0.2.1/metrics"}, RunOptions{
		Plan: smallPlan(t, 1), Tokens: []string{"t"}, Concurrency: 1, Requests: 1,
	})
	if err == nil {
		t.Errorf("remote metrics URL accepted")
	}
}

func TestProgressLine(t *testing.T) {
	r := &runner{limit: 200, start: time.Now().Add(-time.Second)}
	r.done.Store(100)
	r.errs.Store(2)
	line := r.progressLine("full")
	if !strings.Contains(line, " 50%") || !strings.Contains(line, "100 req") || !strings.Contains(line, "2 errors") || strings.Count(line, "#") != 15 {
		t.Errorf("progress %q", line)
	}
	var b bytes.Buffer
	if IsTerminal(&b) {
		t.Error("a buffer is a terminal")
	}
}
