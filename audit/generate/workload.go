package generate

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"
)

// The workload is a discrete-event simulation of a lakehouse's sign
// requests, one stream per node: jobs (a scan of a table's data files, a
// commit writing new ones, a DeleteObjects expiring old ones, a listing,
// a refused scan) arrive at random over the span, a few run at once and
// their requests interleave in time order. Principals follow a Zipf law
// (a few service principals sign most requests, many people a few); the
// tables' files are stable names, so a key is read by several principals
// over the month. Everything is drawn from one seeded PCG per node: the
// same options give the same records (ids aside, which the log draws).

// servicePrincipals are the dominant principals; people follow them.
var servicePrincipals = []string{"spark-etl", "trino-bi", "airflow-ingest", "flink-cdc", "dbt-models"}

// A job is one client action: a run of requests by one principal on one
// table, start to end.
type job struct {
	principal int
	table     int
	kind      jobKind
	next      time.Time     // time of its next request
	gap       time.Duration // between its requests
	left      int           // requests to go
	cursor    int           // next file for scans, deletes
	batch     int           // keys per DeleteObjects request
}

type jobKind int

const (
	jobScan jobKind = iota
	jobWrite
	jobDelete
	jobList
	jobDenied
)

// table is one Iceberg table: its bucket, location and data file count.
type table struct {
	bucket    string
	namespace string
	name      string
	files     int // data files part-00000 .. part-<files-1>
	first     int // files before this were deleted
}

func (t *table) location() string {
	return fmt.Sprintf("warehouse/%s.db/%s", t.namespace, t.name)
}

func (t *table) dataKey(n int) string {
	return fmt.Sprintf("%s/data/dt=2026-11-%02d/%05d-%d-%08x-part-00000.parquet", t.location(), 1+n%28, n, n%7, uint32(n)*2654435761)
}

// sim is one node's workload.
type sim struct {
	rng        *rand.Rand
	principals []string
	weights    []float64 // cumulative
	tables     []*table
	start, end time.Time
	now        time.Time
	nextJob    time.Time
	meanGap    time.Duration // between job arrivals
	active     []*job
	concurrent int
}

// buckets of the lake.
var buckets = []string{"lake-prod", "lake-raw", "lake-curated", "lake-sandbox"}

var namespaces = []string{"sales", "finance", "marketing", "ops", "hr", "product", "support", "risk"}

func newSim(seed uint64, people int, start time.Time, span time.Duration, records int) *sim {
	s := &sim{rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), start: start, end: start.Add(span), now: start, concurrent: 3}
	s.principals = append(s.principals, servicePrincipals...)
	for i := 0; i < people; i++ {
		s.principals = append(s.principals, fmt.Sprintf("user-%03d", i))
	}
	// Zipf, exponent 1.1: with 5 services and 200 people the first
	// principal signs about a fifth of the requests, the median person
	// about 0.1%.
	var sum float64
	for i := range s.principals {
		sum += 1 / math.Pow(float64(i+1), 1.1)
		s.weights = append(s.weights, sum)
	}
	for i := range s.weights {
		s.weights[i] /= sum
	}
	for _, b := range buckets {
		for _, ns := range namespaces {
			for t := 0; t < 8; t++ {
				s.tables = append(s.tables, &table{bucket: b, namespace: ns, name: fmt.Sprintf("t%02d", t), files: 200 + s.rng.IntN(4000)})
			}
		}
	}
	// About 138 records per job on average (measured): spread the jobs so the
	// records fill the span.
	jobs := max(1, records/138)
	s.meanGap = max(time.Millisecond, span/time.Duration(jobs))
	s.nextJob = start
	return s
}

func (s *sim) principal() int {
	x := s.rng.Float64()
	lo, hi := 0, len(s.weights)-1
	for lo < hi {
		m := (lo + hi) / 2
		if s.weights[m] < x {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// heavy returns a heavy-tailed count in [lo, hi]: most jobs are small, a
// few scan thousands of files.
func (s *sim) heavy(lo, hi int, median float64) int {
	n := int(math.Exp(s.rng.NormFloat64()*1.4 + math.Log(median)))
	return min(hi, max(lo, n))
}

func (s *sim) newJob(at time.Time) *job {
	j := &job{principal: s.principal(), table: s.rng.IntN(len(s.tables)), next: at}
	t := s.tables[j.table]
	switch x := s.rng.IntN(100); {
	case x < 60:
		j.kind, j.left = jobScan, s.heavy(1, 20000, 60)
		j.cursor = t.first + s.rng.IntN(max(1, t.files-t.first))
		j.gap = time.Duration(1+s.rng.IntN(20)) * time.Millisecond
	case x < 82:
		j.kind, j.left = jobWrite, s.heavy(2, 2000, 12)
		j.gap = time.Duration(5+s.rng.IntN(50)) * time.Millisecond
	case x < 87:
		j.kind, j.batch = jobDelete, 1+s.rng.IntN(1000)
		j.left, j.cursor = 1+s.rng.IntN(3), t.first
		j.gap = 200 * time.Millisecond
	case x < 96:
		j.kind, j.left = jobList, 1+s.rng.IntN(20)
		j.gap = 50 * time.Millisecond
	default:
		j.kind, j.left = jobDenied, 1+s.rng.IntN(3)
		j.gap = 10 * time.Millisecond
	}
	return j
}

// step returns the next request: its job and time. New jobs arrive by a
// Poisson process; while fewer than the concurrency limit run, the next
// arrival starts at its own time.
func (s *sim) step() (*job, time.Time) {
	for len(s.active) < s.concurrent {
		gap := time.Duration(s.rng.ExpFloat64() * float64(s.meanGap))
		at := s.nextJob
		if len(s.active) > 0 && at.Before(s.now) {
			at = s.now
		}
		s.active = append(s.active, s.newJob(at))
		s.nextJob = s.nextJob.Add(gap)
	}
	bi := 0
	for i, j := range s.active {
		if j.next.Before(s.active[bi].next) {
			bi = i
		}
	}
	j := s.active[bi]
	at := j.next
	if at.Before(s.now) {
		at = s.now
	}
	s.now = at
	j.left--
	j.next = at.Add(j.gap + time.Duration(s.rng.IntN(int(j.gap)+1)))
	if j.left <= 0 {
		s.active = append(s.active[:bi], s.active[bi+1:]...)
	}
	return j, at
}
