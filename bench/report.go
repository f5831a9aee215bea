package bench

import (
	"fmt"
	"io"
	"runtime"
	"sort"
	"strings"
	"text/tabwriter"
	"time"
)

// The targets (docs/design.md, Targets), at 64 connections on the 2-core machine.
const (
	TargetRatio       = 0.60                  // full/floor throughput, same run
	TargetP99         = 10 * time.Millisecond // full path p99
	TargetScanFiles   = 20000                 // a 20,000-file scan...
	TargetScanSigns   = 40000                 // ...of 40,000 signatures...
	TargetScanSeconds = 2.0                   // ...in under 2 s
	TargetConnections = 64
)

// Report is everything one "countersign bench" invocation measured.
type Report struct {
	Version         int       `json:"version"`
	Started         time.Time `json:"started"`
	Machine         Machine   `json:"machine"`
	Workload        Workload  `json:"workload"`
	RequestsPerScan int       `json:"requests_per_scan"`
	ObjectsPerScan  int64     `json:"objects_per_scan"`
	Concurrency     int       `json:"concurrency"`
	Tokens          int       `json:"tokens"`
	// Stop says when each run stopped: "1 scan", "10s", "50000 requests".
	Stop string       `json:"stop"`
	Runs []*RunReport `json:"runs"`
	// Comparison is set when a floor was run too.
	Comparison *Comparison `json:"comparison,omitempty"`
	// Also compares each further full target (-also-url, e.g. the full
	// path with per-principal sessions) with the floor, as Comparison
	// does the full target.
	Also    []*NamedComparison `json:"also,omitempty"`
	Targets []TargetCheck      `json:"targets"`
}

// Machine describes where the generator ran.
type Machine struct {
	OS         string `json:"os"`
	Arch       string `json:"arch"`
	CPUs       int    `json:"cpus"`
	GOMAXPROCS int    `json:"gomaxprocs"`
	Go         string `json:"go"`
}

// ThisMachine describes the running process's machine.
func ThisMachine() Machine {
	return Machine{OS: runtime.GOOS, Arch: runtime.GOARCH, CPUs: runtime.NumCPU(), GOMAXPROCS: runtime.GOMAXPROCS(0), Go: runtime.Version()}
}

// Comparison sets the full path against the floor, round by round.
type Comparison struct {
	Rounds []RoundRatio `json:"rounds"`
	// MedianThroughputRatio is the median over rounds of full/floor req/s.
	MedianThroughputRatio float64 `json:"median_throughput_ratio"`
	// MedianP99Ratio is the median over rounds of full/floor p99.
	MedianP99Ratio float64 `json:"median_p99_ratio"`
	FloorMedianRPS float64 `json:"floor_median_requests_per_s"`
	FullMedianRPS  float64 `json:"full_median_requests_per_s"`
}

// NamedComparison is Comparison for the full target named Target.
type NamedComparison struct {
	Target string `json:"target"`
	Comparison
}

// RoundRatio is one round's floor and full run.
type RoundRatio struct {
	Round           int     `json:"round"`
	FloorRPS        float64 `json:"floor_requests_per_s"`
	FullRPS         float64 `json:"full_requests_per_s"`
	ThroughputRatio float64 `json:"throughput_ratio"`
	FloorP99        float64 `json:"floor_p99_ms"`
	FullP99         float64 `json:"full_p99_ms"`
	P99Ratio        float64 `json:"p99_ratio"`
}

// TargetCheck is one target's verdict: "pass", "fail" or "n/a".
type TargetCheck struct {
	Name   string `json:"name"`
	Result string `json:"result"`
	Value  string `json:"value"`
	Note   string `json:"note,omitempty"`
}

// Finish computes the comparison (when floor runs exist) and the target
// verdicts.
func (r *Report) Finish() {
	var full, floor []*RunReport
	also := map[string][]*RunReport{}
	var alsoNames []string
	for _, run := range r.Runs {
		switch run.Target {
		case "floor":
			floor = append(floor, run)
		case "full", "":
			full = append(full, run)
		default:
			if also[run.Target] == nil {
				alsoNames = append(alsoNames, run.Target)
			}
			also[run.Target] = append(also[run.Target], run)
		}
	}
	r.Comparison = compare(floor, full)
	r.Also = nil
	for _, name := range alsoNames {
		if c := compare(floor, also[name]); c != nil {
			r.Also = append(r.Also, &NamedComparison{Target: name, Comparison: *c})
		}
	}
	r.finishTargets(full)
}

// compare sets full's runs against floor's, round by round (nil when
// either is missing).
func compare(floor, full []*RunReport) *Comparison {
	var out *Comparison
	if len(floor) > 0 && len(full) > 0 {
		c := &Comparison{}
		byRound := map[int]*RunReport{}
		for _, f := range floor {
			byRound[f.Round] = f
		}
		var ratios, p99s, floorRPS, fullRPS []float64
		for _, f := range full {
			fl, ok := byRound[f.Round]
			if !ok {
				continue
			}
			rr := RoundRatio{Round: f.Round, FloorRPS: fl.OKPerSec, FullRPS: f.OKPerSec, FloorP99: fl.Latency.P99, FullP99: f.Latency.P99}
			if fl.OKPerSec > 0 {
				rr.ThroughputRatio = f.OKPerSec / fl.OKPerSec
			}
			if fl.Latency.P99 > 0 {
				rr.P99Ratio = f.Latency.P99 / fl.Latency.P99
			}
			c.Rounds = append(c.Rounds, rr)
			ratios = append(ratios, rr.ThroughputRatio)
			p99s = append(p99s, rr.P99Ratio)
			floorRPS = append(floorRPS, rr.FloorRPS)
			fullRPS = append(fullRPS, rr.FullRPS)
		}
		c.MedianThroughputRatio = median(ratios)
		c.MedianP99Ratio = median(p99s)
		c.FloorMedianRPS = median(floorRPS)
		c.FullMedianRPS = median(fullRPS)
		out = c
	}
	return out
}

// finishTargets computes the target verdicts from the full target's runs.
func (r *Report) finishTargets(full []*RunReport) {

	note := ""
	if r.Concurrency != TargetConnections {
		note = fmt.Sprintf("the targets are defined at -c %d; this ran at -c %d", TargetConnections, r.Concurrency)
	}
	r.Targets = nil
	check := func(name string, ok bool, value, note string) {
		res := "fail"
		if ok {
			res = "pass"
		}
		r.Targets = append(r.Targets, TargetCheck{Name: name, Result: res, Value: value, Note: note})
	}
	na := func(name, note string) {
		r.Targets = append(r.Targets, TargetCheck{Name: name, Result: "n/a", Note: note})
	}

	ratioName := fmt.Sprintf("full/floor throughput >= %.2f", TargetRatio)
	if c := r.Comparison; c != nil && len(c.Rounds) > 0 {
		check(ratioName, c.MedianThroughputRatio >= TargetRatio,
			fmt.Sprintf("%.2f (median of %d rounds)", c.MedianThroughputRatio, len(c.Rounds)), note)
	} else {
		na(ratioName, "needs a floor: -floor-url")
	}

	p99Name := fmt.Sprintf("full p99 < %v", TargetP99)
	if len(full) > 0 {
		var p99s []float64
		for _, f := range full {
			p99s = append(p99s, f.Latency.P99)
		}
		m := median(p99s)
		check(p99Name, m < ms(TargetP99), fmt.Sprintf("%.2f ms (median of %d runs)", m, len(full)), note)
	} else {
		na(p99Name, "no full-path run")
	}

	scanName := fmt.Sprintf("%d-file scan (%d signatures) < %.0f s", TargetScanFiles, TargetScanSigns, TargetScanSeconds)
	var scans []float64
	for _, f := range full {
		if s := f.FirstScan(); s > 0 {
			scans = append(scans, s)
		}
	}
	switch {
	case r.Workload.Files != TargetScanFiles || r.RequestsPerScan != TargetScanSigns:
		na(scanName, fmt.Sprintf("this workload is %d files, %d requests per scan: run -files %d -reads-per-file 1", r.Workload.Files, r.RequestsPerScan, TargetScanFiles))
	case len(scans) == 0:
		na(scanName, "no full scan completed: run with -scans or a longer -duration")
	default:
		m := median(scans)
		check(scanName, m < TargetScanSeconds, fmt.Sprintf("%.2f s (median of %d full runs)", m, len(scans)), note)
	}

	var failed int64
	wrong := []string{}
	for _, run := range r.Runs {
		failed += run.Requests - run.OK
		if run.Verified > 0 && run.Canned != (run.Target == "floor") {
			wrong = append(wrong, fmt.Sprintf("round %d %s", run.Round, run.Target))
		}
	}
	check("no failed requests", failed == 0, fmt.Sprintf("%d failed", failed), "")
	if len(wrong) > 0 {
		check("full runs signed, floor runs canned", false, strings.Join(wrong, ", "),
			"a full target answered with the canned fake signature, or a floor target signed for real: check -url and -floor-url")
	}
}

// Print writes the human-readable report.
func (r *Report) Print(w io.Writer) {
	wl := r.Workload
	per := []string{}
	if wl.HeadsPerFile > 0 {
		per = append(per, fmt.Sprintf("%d HEAD", wl.HeadsPerFile))
	}
	per = append(per, "1 footer read")
	if wl.ReadsPerFile > 0 {
		per = append(per, fmt.Sprintf("%d column read(s)", wl.ReadsPerFile))
	}
	extra := ""
	if wl.Writes > 0 {
		extra += fmt.Sprintf(", %d multipart write(s) of %d parts", wl.Writes, wl.PartsPerWrite)
	}
	if wl.Deletes > 0 {
		extra += fmt.Sprintf(", %d DeleteObjects of up to %d keys", wl.Deletes, wl.KeysPerDelete)
	}
	style := "virtual-hosted"
	if wl.PathStyle {
		style = "path-style"
	}
	m := r.Machine
	fmt.Fprintf(w, "countersign bench, %s, %s/%s, %d CPUs, %s\n", r.Started.Format(time.RFC3339), m.OS, m.Arch, m.CPUs, m.Go)
	fmt.Fprintf(w, "workload: %d files in %d table(s) under s3://%s/%s (%s, %s), per file %s%s\n",
		wl.Files, wl.Tables, wl.Bucket, strings.TrimSuffix(wl.TableKey(0), "t0/"), wl.Endpoint, style, strings.Join(per, " + "), extra)
	fmt.Fprintf(w, "          = %d sign requests, %d objects per scan; %s route; %d token(s); %d connections; each run stops after %s\n\n",
		r.RequestsPerScan, r.ObjectsPerScan, wl.Route, r.Tokens, r.Concurrency, r.Stop)

	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "round\ttarget\trequests\treq/s\tobjects/s\tp50 ms\tp90 ms\tp99 ms\tmax ms\tfirst scan s\tother cores\terrors\t")
	for _, run := range r.Runs {
		scan := "-"
		if s := run.FirstScan(); s > 0 {
			scan = fmt.Sprintf("%.2f", s)
		}
		fmt.Fprintf(tw, "%d\t%s\t%d\t%.0f\t%.0f\t%.2f\t%.2f\t%.2f\t%.2f\t%s\t%.1f\t%s\t\n",
			run.Round, run.Target, run.Requests, run.OKPerSec, run.ObjectsPerSec,
			run.Latency.P50, run.Latency.P90, run.Latency.P99, run.Latency.Max, scan, run.OtherCores, errorsString(run.Errors))
	}
	tw.Flush()
	busy := 0.0
	for _, run := range r.Runs {
		busy = max(busy, run.OtherCores)
	}
	if busy > 0.2 {
		fmt.Fprintf(w, "note: other processes used up to %.1f of the %d CPUs during these runs (\"other cores\"): they competed with them\n", busy, m.CPUs)
	}

	// Server-side stage means.
	stages := []string{}
	seen := map[string]bool{}
	for _, run := range r.Runs {
		if run.Server == nil {
			continue
		}
		for _, s := range run.Server.Stages {
			if !seen[s.Stage] {
				seen[s.Stage] = true
				stages = append(stages, s.Stage)
			}
		}
	}
	fmt.Fprintln(w)
	if len(stages) > 0 {
		fmt.Fprintln(w, "server side (from /metrics; stage means in µs per request):")
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprint(tw, "round\ttarget\t")
		for _, s := range stages {
			fmt.Fprintf(tw, "%s\t", s)
		}
		fmt.Fprintln(tw, "audit batch\tfsync µs\tserver CPU µs/req\tserver cores\tclient CPU µs/req\tRSS MiB\t")
		for _, run := range r.Runs {
			if run.Server == nil {
				continue
			}
			fmt.Fprintf(tw, "%d\t%s\t", run.Round, run.Target)
			means := map[string]float64{}
			for _, s := range run.Server.Stages {
				means[s.Stage] = s.MeanMicros
			}
			for _, s := range stages {
				if v, ok := means[s]; ok {
					fmt.Fprintf(tw, "%.1f\t", v)
				} else {
					fmt.Fprint(tw, "-\t")
				}
			}
			batch, fsync := "-", "-"
			if run.Server.AuditBatches > 0 {
				batch = fmt.Sprintf("%.1f", run.Server.AuditBatchRecordsMean)
				fsync = fmt.Sprintf("%.0f", run.Server.AuditFsyncMeanMicros)
			}
			fmt.Fprintf(tw, "%s\t%s\t%.1f\t%.2f\t%.1f\t%.0f\t\n", batch, fsync, run.Server.CPUMicrosPerRequest, run.Server.CPUUtilization,
				run.ClientCPUMicrosPerRequest, run.Server.RSSBytes/(1<<20))
		}
		tw.Flush()
		fmt.Fprintln(w)
	}
	for _, run := range r.Runs {
		if run.ServerError != "" {
			fmt.Fprintf(w, "round %d %s: server metrics unavailable: %s\n", run.Round, run.Target, run.ServerError)
		}
		keys := make([]string, 0, len(run.ErrorSamples))
		for k := range run.ErrorSamples {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			fmt.Fprintf(w, "round %d %s: first %s error: %s\n", run.Round, run.Target, k, strings.TrimSpace(run.ErrorSamples[k]))
		}
	}

	printComparison := func(name string, c *Comparison) {
		fmt.Fprintf(w, "%s/floor, round by round:\n", name)
		for _, rr := range c.Rounds {
			fmt.Fprintf(w, "  round %d: throughput %.0f / %.0f req/s = %.2f   p99 %.2f / %.2f ms = %.2fx\n",
				rr.Round, rr.FullRPS, rr.FloorRPS, rr.ThroughputRatio, rr.FullP99, rr.FloorP99, rr.P99Ratio)
		}
		fmt.Fprintf(w, "  median:  throughput ratio %.2f (%s %.0f req/s, floor %.0f req/s), p99 ratio %.2fx\n\n",
			c.MedianThroughputRatio, name, c.FullMedianRPS, c.FloorMedianRPS, c.MedianP99Ratio)
	}
	if c := r.Comparison; c != nil {
		printComparison("full", c)
	}
	for _, a := range r.Also {
		printComparison(a.Target, &a.Comparison)
	}
	fmt.Fprintln(w, "targets (docs/design.md, Targets):")
	for _, t := range r.Targets {
		line := fmt.Sprintf("  %-4s  %-44s %s", strings.ToUpper(t.Result), t.Name, t.Value)
		if t.Note != "" {
			line += "  (" + t.Note + ")"
		}
		fmt.Fprintln(w, strings.TrimRight(line, " "))
	}
}

func errorsString(m map[string]int64) string {
	if len(m) == 0 {
		return "-"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s:%d", k, m[k])
	}
	return strings.Join(parts, " ")
}
