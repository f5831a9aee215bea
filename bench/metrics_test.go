package bench

import (
	"math"
	"os"
	"strings"
	"testing"
)

func parseFile(t *testing.T, name string) *Snapshot {
	t.Helper()
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s, err := ParseMetrics(f)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func approx(a, b float64) bool { return math.Abs(a-b) <= 1e-6*math.Max(1, math.Abs(b)) }

// The samples are two scrapes of a real countersign (serve -dev, the
// combined policy with 10,000 grants) around a bench run of 410 requests
// (400 reads, 2 multipart writes of 2 parts, 2 DeleteObjects of 20 keys:
// 448 audit records).
func TestParseCapturedMetrics(t *testing.T) {
	before := parseFile(t, "testdata/metrics_before.txt")
	after := parseFile(t, "testdata/metrics_after.txt")
	if got := before.Stages["decode"]; got.Count != 46959 || !approx(got.Sum, 11.70338806099993) {
		t.Errorf("decode before: %+v", got)
	}
	if len(after.Stages) != 6 {
		t.Errorf("stages %v", after.Stages)
	}
	if after.Requests["200"] != 47369 || after.CPUSeconds != 33.32 || after.RSS != 5.1101696e+07 {
		t.Errorf("after: requests %v cpu %v rss %v", after.Requests, after.CPUSeconds, after.RSS)
	}

	st := Diff(before, after, 0.5)
	var order []string
	means := map[string]float64{}
	for _, s := range st.Stages {
		order = append(order, s.Stage)
		means[s.Stage] = s.MeanMicros
		if s.Count != 410 {
			t.Errorf("%s: %v requests, want 410", s.Stage, s.Count)
		}
	}
	if got := strings.Join(order, ","); got != "decode,authenticate,classify,authorize,sign,audit" {
		t.Errorf("stage order %s", got)
	}
	for stage, want := range map[string]float64{"decode": 19.371960975589893, "authorize": 1236.9154439022761, "audit": 7528.459253656299} {
		if !approx(means[stage], want) {
			t.Errorf("%s mean %v µs, want %v", stage, means[stage], want)
		}
	}
	if st.AuditBatches != 123 || !approx(st.AuditBatchRecordsMean, 448.0/123) || !approx(st.AuditFsyncMeanMicros, 4050.8676422767157) {
		t.Errorf("audit: %v batches, %v records each, fsync %v µs", st.AuditBatches, st.AuditBatchRecordsMean, st.AuditFsyncMeanMicros)
	}
	if st.Requests["200"] != 410 || !approx(st.CPUMicrosPerRequest, 0.51/410*1e6) || !approx(st.CPUUtilization, 0.51/0.5) {
		t.Errorf("requests %v, cpu %v µs/request, %v cores", st.Requests, st.CPUMicrosPerRequest, st.CPUUtilization)
	}
}

func TestParseMetricsErrors(t *testing.T) {
	if _, err := ParseMetrics(strings.NewReader("countersign_stage_seconds_sum{stage=\"x\" 1\n")); err == nil {
		t.Error("malformed exposition accepted")
	}
	// A server without countersign metrics (e.g. another process) parses
	// to an empty snapshot, and the diff has no stages.
	s, err := ParseMetrics(strings.NewReader("# TYPE up gauge\nup 1\n"))
	if err != nil {
		t.Fatal(err)
	}
	if st := Diff(s, s, 1); len(st.Stages) != 0 || st.AuditBatches != 0 {
		t.Errorf("empty diff %+v", st)
	}
}
