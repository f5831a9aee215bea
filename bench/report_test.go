package bench

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func run(target string, round int, rps, p99, scan float64) *RunReport {
	return &RunReport{Target: target, Round: round, Requests: 40000, OK: 40000, OKPerSec: rps, Verified: 40, Canned: target == "floor",
		Latency: LatencySummary{P99: p99}, ScanSeconds: []float64{scan}, Errors: map[string]int64{}}
}

func TestReportComparisonAndTargets(t *testing.T) {
	r := &Report{Workload: DefaultWorkload(), RequestsPerScan: 40000, Concurrency: 64, Runs: []*RunReport{
		run("floor", 1, 20000, 4, 2.0), run("full", 1, 14000, 8, 2.9),
		run("floor", 2, 21000, 4, 1.9), run("full", 2, 10500, 12, 3.8),
		run("floor", 3, 19000, 5, 2.1), run("full", 3, 11400, 9, 3.5),
	}}
	r.Finish()
	c := r.Comparison
	if c == nil || len(c.Rounds) != 3 {
		t.Fatalf("comparison %+v", c)
	}
	// Ratios 0.70, 0.50, 0.60: the median is 0.60, which meets the target.
	if !approx(c.MedianThroughputRatio, 0.6) || !approx(c.Rounds[1].ThroughputRatio, 0.5) || !approx(c.MedianP99Ratio, 2.0) {
		t.Errorf("ratios %+v", c)
	}
	got := map[string]string{}
	for _, tc := range r.Targets {
		got[tc.Name] = tc.Result + " " + tc.Value
	}
	want := map[string]string{
		"full/floor throughput >= 0.60":            "pass 0.60 (median of 3 rounds)",
		"full p99 < 10ms":                          "pass 9.00 ms (median of 3 runs)",
		"20000-file scan (40000 signatures) < 2 s": "fail 3.50 s (median of 3 full runs)",
		"no failed requests":                       "pass 0 failed",
	}
	if len(r.Targets) != 4 {
		t.Errorf("%d targets: %+v", len(r.Targets), r.Targets)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %q, want %q", k, got[k], v)
		}
	}
	var b bytes.Buffer
	r.Print(&b)
	for _, s := range []string{"round 2: throughput 10500 / 21000 req/s = 0.50", "PASS  full p99 < 10ms", "FAIL  20000-file scan"} {
		if !strings.Contains(b.String(), s) {
			t.Errorf("report lacks %q:\n%s", s, b.String())
		}
	}
	if _, err := json.Marshal(r); err != nil {
		t.Fatal(err)
	}
}

func TestReportTargetsNotApplicable(t *testing.T) {
	w := DefaultWorkload()
	w.Files = 100
	f := run("full", 1, 5000, 3, 0.1)
	f.Requests, f.Errors = 40001, map[string]int64{"503": 1}
	f.Canned = true // a "full" target that answered like the floor
	r := &Report{Workload: w, RequestsPerScan: 200, Concurrency: 8, Runs: []*RunReport{f}}
	r.Finish()
	if r.Comparison != nil {
		t.Error("comparison without a floor")
	}
	res := map[string]TargetCheck{}
	for _, tc := range r.Targets {
		res[tc.Name] = tc
	}
	if tc := res["full/floor throughput >= 0.60"]; tc.Result != "n/a" {
		t.Errorf("ratio without floor: %+v", tc)
	}
	if tc := res["20000-file scan (40000 signatures) < 2 s"]; tc.Result != "n/a" || !strings.Contains(tc.Note, "-files 20000") {
		t.Errorf("scan of 100 files: %+v", tc)
	}
	if tc := res["full p99 < 10ms"]; tc.Result != "pass" || !strings.Contains(tc.Note, "-c 64") {
		t.Errorf("p99 at -c 8: %+v", tc)
	}
	if tc := res["no failed requests"]; tc.Result != "fail" {
		t.Errorf("a 503: %+v", tc)
	}
	if tc := res["full runs signed, floor runs canned"]; tc.Result != "fail" || tc.Value != "round 1 full" {
		t.Errorf("canned full target: %+v", tc)
	}
}

// TestReportAlso: a third target (-also-url) is compared with the floor
// round by round, and neither changes the full target's comparison nor
// its target verdicts.
func TestReportAlso(t *testing.T) {
	r := &Report{Workload: DefaultWorkload(), RequestsPerScan: 40000, Concurrency: 64, Runs: []*RunReport{
		run("floor", 1, 20000, 4, 2.0), run("full", 1, 14000, 8, 2.9), run("sessions", 1, 13000, 9, 3.0),
		run("floor", 2, 21000, 4, 1.9), run("full", 2, 10500, 12, 3.8), run("sessions", 2, 10000, 12, 3.9),
		run("floor", 3, 19000, 5, 2.1), run("full", 3, 11400, 9, 3.5), run("sessions", 3, 11400, 10, 3.6),
	}}
	r.Finish()
	if c := r.Comparison; c == nil || !approx(c.MedianThroughputRatio, 0.6) || len(c.Rounds) != 3 {
		t.Fatalf("full comparison %+v", c)
	}
	if len(r.Also) != 1 || r.Also[0].Target != "sessions" || len(r.Also[0].Rounds) != 3 {
		t.Fatalf("also %+v", r.Also)
	}
	// Ratios 0.65, 0.476, 0.60: the median is 0.60.
	if a := r.Also[0]; !approx(a.MedianThroughputRatio, 0.6) || !approx(a.Rounds[0].ThroughputRatio, 0.65) {
		t.Fatalf("sessions ratios %+v", a.Comparison)
	}
	for _, tc := range r.Targets {
		if tc.Name == "full p99 < 10ms" && tc.Value != "9.00 ms (median of 3 runs)" {
			t.Fatalf("the third target's runs counted as full: %+v", tc)
		}
	}
	var b bytes.Buffer
	r.Print(&b)
	if !strings.Contains(b.String(), "sessions/floor, round by round:") || !strings.Contains(b.String(), "round 1: throughput 13000 / 20000 req/s = 0.65") {
		t.Fatalf("report:\n%s", b.String())
	}
}
