package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/bench"
	"github.com/countersign/countersign/internal/syncbuf"
	"github.com/countersign/countersign/server"
)

var signEndpointRE = regexp.MustCompile(`sign endpoint : http://([0-9.:]+)/`)

// startServe runs "countersign serve" args in the background until the
// test ends and returns the address from its dev banner. ok is false when
// serve exited at once (its exit code and stderr are returned then).
func startServe(t *testing.T, args ...string) (addr string, code int, stderr string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var out, errb syncbuf.Buffer
	done := make(chan int, 1)
	go func() { done <- run(ctx, args, &out, &errb) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Error("serve did not stop")
		}
	})
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if m := signEndpointRE.FindStringSubmatch(out.String()); m != nil {
			return m[1], 0, ""
		}
		select {
		case code := <-done:
			done <- code
			return "", code, errb.String()
		case <-time.After(20 * time.Millisecond):
		}
	}
	t.Fatalf("serve did not start: %s", errb.String())
	return "", 0, ""
}

// genGrants writes a small benchmark setup (gen-grants) with free ports.
func genGrants(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	var out, errb bytes.Buffer
	code := runBench(context.Background(), []string{"gen-grants", "-out", dir, "-n", "200", "-groups", "2", "-tables", "3",
		"-policy", "../../deploy/policies/combined", "-listen", "127.0.0.1:0", "-floor-listen", "127.0.0.1:0"}, &out, &errb)
	if code != 0 {
		t.Fatalf("gen-grants: %d %s", code, errb.String())
	}
	if !strings.Contains(out.String(), "200 grants for 2 groups on 3 tables") {
		t.Errorf("gen-grants said %s", out.String())
	}
	return dir
}

func readReport(t *testing.T, path string) *bench.Report {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var r bench.Report
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	return &r
}

func checkRun(t *testing.T, r *bench.RunReport, wantStages ...string) {
	t.Helper()
	if r.OK == 0 || r.OK != r.Requests || len(r.Errors) != 0 {
		t.Fatalf("%s: %d of %d requests succeeded, errors %v %v", r.Target, r.OK, r.Requests, r.Errors, r.ErrorSamples)
	}
	l := r.Latency
	if !(l.Min > 0 && l.Min <= l.P50 && l.P50 <= l.P90 && l.P90 <= l.P99 && l.P99 <= l.Max && l.Max < 10000) || l.Count != uint64(r.Requests) {
		t.Errorf("%s: latency %+v", r.Target, l)
	}
	if r.OKPerSec <= 0 || r.Seconds <= 0 || len(r.ScanSeconds) == 0 {
		t.Errorf("%s: %v req/s over %v s, scans %v", r.Target, r.OKPerSec, r.Seconds, r.ScanSeconds)
	}
	if r.Server == nil {
		t.Fatalf("%s: no server stats: %s", r.Target, r.ServerError)
	}
	stages := map[string]bench.StageStat{}
	for _, s := range r.Server.Stages {
		stages[s.Stage] = s
	}
	for _, name := range wantStages {
		if s := stages[name]; s.Count < float64(r.Requests) || s.MeanMicros <= 0 {
			t.Errorf("%s: stage %s: %+v", r.Target, name, s)
		}
	}
	// The servers run in this process, whose CPU counter advances in
	// clock ticks (10 ms): a short, fast floor run can read zero. The
	// computation itself is bench's TestServerStats.
	if r.Server.Requests["200"] < float64(r.Requests) || r.Server.CPUMicrosPerRequest < 0 {
		t.Errorf("%s: server saw %v, %v µs CPU per request", r.Target, r.Server.Requests, r.Server.CPUMicrosPerRequest)
	}
}

// TestBenchEndToEnd is the README's procedure at small scale: gen-grants,
// serve -dev on the combined policy with durable audit, a canned-response
// floor, and bench alternating between them.
func TestBenchEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("starts countersign and loads it for a few seconds")
	}
	dir := genGrants(t)
	addr, code, stderr := startServe(t, "serve", "-dev", "-config", filepath.Join(dir, "full.yaml"))
	if addr == "" {
		t.Fatalf("serve exited %d: %s", code, stderr)
	}

	// The canned floor, built the way serve builds it with the flag.
	cfg, err := loadConfig(filepath.Join(dir, "floor.yaml"), devConfig())
	if err != nil {
		t.Fatal(err)
	}
	srv, closeFloor, err := buildCannedServer(cfg, nil, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Shutdown(); closeFloor() })
	floor := "http://" + ln.Addr().String()

	report := filepath.Join(dir, "report.json")
	var out, errb bytes.Buffer
	code = runBench(context.Background(), []string{
		"-config", filepath.Join(dir, "full.yaml"), "-url", "http://" + addr, "-floor-url", floor,
		"-rounds", "1", "-scans", "1", "-warmup", "200ms", "-c", "4",
		"-files", "60", "-tables", "3", "-groups", "2", "-principals", "3",
		"-writes", "2", "-deletes", "2", "-keys-per-delete", "10", "-verify-every", "25",
		"-json", report,
	}, &out, &errb)
	if code != 0 {
		t.Fatalf("bench exited %d: %s\n%s", code, errb.String(), out.String())
	}
	t.Log(out.String())
	r := readReport(t, report)
	if len(r.Runs) != 2 || r.Runs[0].Target != "floor" || r.Runs[1].Target != "full" || r.Tokens != 3 {
		t.Fatalf("runs %d, tokens %d", len(r.Runs), r.Tokens)
	}
	checkRun(t, r.Runs[1], "decode", "authenticate", "classify", "authorize", "sign", "audit")
	if cpu := r.Runs[1].Server.CPUMicrosPerRequest; cpu <= 0 {
		t.Errorf("full: %v µs CPU per request (its run is long enough to read)", cpu)
	}
	checkRun(t, r.Runs[0], "decode", "classify", "sign")
	if s := r.Runs[1].Server; s.AuditBatches == 0 || s.AuditBatchRecordsMean < 1 || s.AuditFsyncMeanMicros <= 0 {
		t.Errorf("full: audit %+v", s)
	}
	if s := r.Runs[0].Server; s.AuditBatches != 0 {
		t.Errorf("floor wrote audit batches: %+v", s)
	}
	if !r.Runs[0].Canned || r.Runs[1].Canned || r.Runs[0].Verified == 0 || r.Runs[1].Verified == 0 {
		t.Errorf("floor canned %v (%d verified), full canned %v (%d verified)", r.Runs[0].Canned, r.Runs[0].Verified, r.Runs[1].Canned, r.Runs[1].Verified)
	}
	if c := r.Comparison; c == nil || len(c.Rounds) != 1 || c.MedianThroughputRatio <= 0 {
		t.Errorf("comparison %+v", r.Comparison)
	}
	// Writes and deletes were decided per object: more objects than requests.
	if full := r.Runs[1]; full.Objects <= full.OK {
		t.Errorf("full: %d objects in %d requests", full.Objects, full.OK)
	}
	for _, s := range []string{"full/floor, round by round", "server side", "targets (docs/design.md, Targets)"} {
		if !strings.Contains(out.String(), s) {
			t.Errorf("report lacks %q", s)
		}
	}
	// A scan asks the same question per object: the JWT cache answered
	// nearly all of them and the policy's fast path (which builds a scope's
	// residual in the background, slowly under -race) some; once it did, a
	// file's column read after its footer got the remembered decision.
	// serve reports all three.
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, cache := range []string{"token", "policy", "decision"} {
		hits := metricValue(t, string(metrics), `countersign_cache_lookups_total{cache="`+cache+`",result="hit"}`)
		misses := metricValue(t, string(metrics), `countersign_cache_lookups_total{cache="`+cache+`",result="miss"}`)
		if hits == 0 || misses == 0 || (cache == "token" && hits < 10*misses) {
			t.Errorf("%s cache: %v hits, %v misses for %d requests", cache, hits, misses, r.Runs[1].OK)
		}
	}
}

// metricValue finds one sample in a Prometheus text exposition.
func metricValue(t *testing.T, text, series string) float64 {
	t.Helper()
	for _, line := range strings.Split(text, "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("%s: %v", line, err)
			}
			return f
		}
	}
	t.Fatalf("no sample %s in /metrics", series)
	return 0
}

// TestServeCannedFlag checks serve's benchmark-only mode through the
// command line: refused without the flag, loud and never ready with it.
func TestServeCannedFlag(t *testing.T) {
	dir := genGrants(t)
	floorCfg := filepath.Join(dir, "floor.yaml")
	addr, code, stderr := startServe(t, "serve", "-dev", "-config", floorCfg, "-"+cannedFlagName)
	if addr == "" {
		t.Fatalf("serve exited %d: %s", code, stderr)
	}
	resp, err := http.Get("http://" + addr + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), "canned-response mode") {
		t.Errorf("/readyz: %d %s", resp.StatusCode, body)
	}
	// Any token, or none at all, gets the fake signature: it signs nothing.
	req, _ := http.NewRequest("POST", "http://"+addr+"/v1/aws/s3/sign", strings.NewReader(
		`{"region":"us-east-1","method":"GET","uri":"http://127.0.0.1:7070/lake/wh/db/t0/data/f.parquet","headers":{"Range":["bytes=-100"]}}`))
	req.Header.Set("Authorization", "Bearer not-a-token")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), server.CannedAuthorization) || !strings.Contains(string(body), `"Range":["bytes=-100"]`) {
		t.Errorf("canned answer: %d %s", resp.StatusCode, body)
	}
	// Classification stays real: an endpoint outside the config is refused.
	req, _ = http.NewRequest("POST", "http://"+addr+"/v1/aws/s3/sign", strings.NewReader(
		`{"region":"us-east-1","method":"GET","uri":"http://evil.example/lake/k","headers":{}}`))
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("unknown endpoint: %d", resp.StatusCode)
	}

	// Without the flag the same config serves the real pipeline (which
	// then needs a token).
	full, _, stderr := startServe(t, "serve", "-dev", "-config", filepath.Join(dir, "full.yaml"))
	if full == "" {
		t.Fatal(stderr)
	}
	resp, err = http.Get("http://" + full + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("full /readyz: %d", resp.StatusCode)
	}
}

// TestCannedModeIsNotConfigurable: the mode has no configuration key, so a
// config file cannot turn it on (unknown keys are errors). (-dev without
// the flag serving the real pipeline is checked in TestServeCannedFlag.)
func TestCannedModeIsNotConfigurable(t *testing.T) {
	for _, key := range []string{cannedFlagName, "bench_canned_responses_i_know_this_signs_nothing", "canned"} {
		path := filepath.Join(t.TempDir(), "c.yaml")
		os.WriteFile(path, []byte("listen: 127.0.0.1:0\n"+key+": true\n"), 0o600)
		if _, err := loadConfig(path, devConfig()); err == nil {
			t.Errorf("config key %q accepted", key)
		}
	}
}

func TestBenchRefusesRemoteTargets(t *testing.T) {
	for _, args := range [][]string{
		{"-url", "http://192.0.2.1:8181", "-token", "t"},
		{"-url", "http://127.0.0.1:8181", "-floor-url", "http://example.com:8182", "-token", "t"},
	} {
		var out, errb bytes.Buffer
		if code := runBench(context.Background(), args, &out, &errb); code != 1 || !strings.Contains(errb.String(), "-allow-remote") {
			t.Errorf("%v: exit %d, %s", args, code, errb.String())
		}
	}
	var out, errb bytes.Buffer
	if code := runBench(context.Background(), []string{"-url", "http://127.0.0.1:1"}, &out, &errb); code != 1 || !strings.Contains(errb.String(), "no bearer token") {
		t.Errorf("no token: exit %d, %s", code, errb.String())
	}
	if code := runBench(context.Background(), []string{"-bogus"}, &out, &errb); code != 2 {
		t.Errorf("bad flag: exit %d", code)
	}
}
