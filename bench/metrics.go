package bench

import (
	"bytes"
	"fmt"
	"io"
	"sort"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/valyala/fasthttp"
)

// The countersign metrics a run reads (see package metrics).
const (
	metricStageSeconds      = "countersign_stage_seconds"
	metricAuditBatchRecords = "countersign_audit_batch_records"
	metricAuditFsync        = "countersign_audit_fsync_seconds"
	metricRequests          = "countersign_requests_total"
	metricCPU               = "process_cpu_seconds_total"
	metricRSS               = "process_resident_memory_bytes"
	metricGoroutines        = "go_goroutines"
)

// Snapshot is what a run needs from one scrape of countersign's /metrics.
type Snapshot struct {
	// Stages holds countersign_stage_seconds sum and count per stage.
	Stages map[string]SumCount
	// AuditBatchRecords and AuditFsync are the group-commit histograms.
	AuditBatchRecords SumCount
	AuditFsync        SumCount
	// Requests counts sign requests by HTTP status.
	Requests map[string]float64
	// CPUSeconds is the process's CPU time; RSS its resident memory.
	CPUSeconds float64
	RSS        float64
	Goroutines float64
}

// SumCount is a histogram's _sum and _count.
type SumCount struct {
	Sum   float64
	Count float64
}

// ParseMetrics reads Prometheus text exposition format.
func ParseMetrics(r io.Reader) (*Snapshot, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(r)
	if err != nil {
		return nil, fmt.Errorf("parsing /metrics: %w", err)
	}
	s := &Snapshot{Stages: map[string]SumCount{}, Requests: map[string]float64{}}
	if f := fams[metricStageSeconds]; f != nil {
		for _, m := range f.GetMetric() {
			stage := label(m, "stage")
			sc := s.Stages[stage]
			sc.Sum += m.GetHistogram().GetSampleSum()
			sc.Count += float64(m.GetHistogram().GetSampleCount())
			s.Stages[stage] = sc
		}
	}
	s.AuditBatchRecords = histSumCount(fams[metricAuditBatchRecords])
	s.AuditFsync = histSumCount(fams[metricAuditFsync])
	if f := fams[metricRequests]; f != nil {
		for _, m := range f.GetMetric() {
			s.Requests[label(m, "status")] += m.GetCounter().GetValue()
		}
	}
	s.CPUSeconds = scalar(fams[metricCPU])
	s.RSS = scalar(fams[metricRSS])
	s.Goroutines = scalar(fams[metricGoroutines])
	return s, nil
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

func histSumCount(f *dto.MetricFamily) SumCount {
	var sc SumCount
	if f == nil {
		return sc
	}
	for _, m := range f.GetMetric() {
		sc.Sum += m.GetHistogram().GetSampleSum()
		sc.Count += float64(m.GetHistogram().GetSampleCount())
	}
	return sc
}

func scalar(f *dto.MetricFamily) float64 {
	if f == nil || len(f.GetMetric()) == 0 {
		return 0
	}
	m := f.GetMetric()[0]
	switch {
	case m.Counter != nil:
		return m.GetCounter().GetValue()
	case m.Gauge != nil:
		return m.GetGauge().GetValue()
	case m.Untyped != nil:
		return m.GetUntyped().GetValue()
	}
	return 0
}

// Scrape fetches and parses url (a countersign /metrics endpoint).
func Scrape(url string, timeout time.Duration) (*Snapshot, error) {
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.SetRequestURI(url)
	req.Header.SetMethod(fasthttp.MethodGet)
	req.Header.Set("Accept", "text/plain")
	if err := fasthttp.DoTimeout(req, resp, timeout); err != nil {
		return nil, fmt.Errorf("scraping %s: %w", url, err)
	}
	if resp.StatusCode() != fasthttp.StatusOK {
		return nil, fmt.Errorf("scraping %s: HTTP %d", url, resp.StatusCode())
	}
	return ParseMetrics(bytes.NewReader(resp.Body()))
}

// ServerStats are the server's own numbers over one run: the difference of
// two scrapes.
type ServerStats struct {
	// Stages is the mean time per request of each pipeline stage.
	Stages []StageStat `json:"stages"`
	// AuditBatches is the number of group commits; AuditBatchRecordsMean
	// records per commit; AuditFsyncMeanMicros the mean fdatasync.
	AuditBatches          float64 `json:"audit_batches"`
	AuditBatchRecordsMean float64 `json:"audit_batch_records_mean"`
	AuditFsyncMeanMicros  float64 `json:"audit_fsync_mean_us"`
	// Requests counts the sign requests the server saw, by status.
	Requests map[string]float64 `json:"requests_by_status"`
	// CPUMicrosPerRequest is the server's CPU time per sign request
	// (user+system, all cores).
	CPUMicrosPerRequest float64 `json:"cpu_us_per_request"`
	// CPUUtilization is server CPU seconds per wall second (2.0 = two cores).
	CPUUtilization float64 `json:"cpu_cores"`
	// RSSBytes is the resident memory after the run.
	RSSBytes   float64 `json:"rss_bytes"`
	Goroutines float64 `json:"goroutines"`
}

// StageStat is one stage's mean.
type StageStat struct {
	Stage      string  `json:"stage"`
	Count      float64 `json:"count"`
	MeanMicros float64 `json:"mean_us"`
}

// stageOrder is the order of the pipeline (server/handler.go).
var stageOrder = []string{"decode", "authenticate", "classify", "authorize", "sign", "audit"}

// Diff computes the stats between two snapshots over wall seconds.
func Diff(before, after *Snapshot, wall float64) *ServerStats {
	st := &ServerStats{Requests: map[string]float64{}}
	names := make([]string, 0, len(after.Stages))
	for name := range after.Stages {
		names = append(names, name)
	}
	rank := func(s string) int {
		for i, n := range stageOrder {
			if n == s {
				return i
			}
		}
		return len(stageOrder)
	}
	sort.Slice(names, func(i, j int) bool {
		ri, rj := rank(names[i]), rank(names[j])
		if ri != rj {
			return ri < rj
		}
		return names[i] < names[j]
	})
	for _, name := range names {
		a, b := after.Stages[name], before.Stages[name]
		n := a.Count - b.Count
		if n <= 0 {
			continue
		}
		st.Stages = append(st.Stages, StageStat{Stage: name, Count: n, MeanMicros: (a.Sum - b.Sum) / n * 1e6})
	}
	if n := after.AuditBatchRecords.Count - before.AuditBatchRecords.Count; n > 0 {
		st.AuditBatches = n
		st.AuditBatchRecordsMean = (after.AuditBatchRecords.Sum - before.AuditBatchRecords.Sum) / n
	}
	if n := after.AuditFsync.Count - before.AuditFsync.Count; n > 0 {
		st.AuditFsyncMeanMicros = (after.AuditFsync.Sum - before.AuditFsync.Sum) / n * 1e6
	}
	total := 0.0
	for status, v := range after.Requests {
		if d := v - before.Requests[status]; d > 0 {
			st.Requests[status] = d
			total += d
		}
	}
	cpu := after.CPUSeconds - before.CPUSeconds
	if total > 0 {
		st.CPUMicrosPerRequest = cpu / total * 1e6
	}
	if wall > 0 {
		st.CPUUtilization = cpu / wall
	}
	st.RSSBytes = after.RSS
	st.Goroutines = after.Goroutines
	return st
}
