package bench

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

func near(got, want time.Duration, rel float64) bool {
	return math.Abs(float64(got-want)) <= rel*float64(want)
}

// TestPercentilesKnownData records 1 µs ... 10,000 µs once each: the
// nearest-rank percentile p is p*100 µs, and the histogram must report it
// within its 0.8% bucket precision.
func TestPercentilesKnownData(t *testing.T) {
	var h Histogram
	for i := 10000; i >= 1; i-- { // order must not matter
		h.Record(time.Duration(i) * time.Microsecond)
	}
	for _, c := range []struct {
		p    float64
		want time.Duration
	}{{50, 5 * time.Millisecond}, {90, 9 * time.Millisecond}, {99, 9900 * time.Microsecond}, {99.9, 9990 * time.Microsecond}, {1, 100 * time.Microsecond}} {
		if got := h.Percentile(c.p); !near(got, c.want, 0.008) {
			t.Errorf("p%v = %v, want %v ± 0.8%%", c.p, got, c.want)
		}
	}
	if h.Count() != 10000 || h.Min() != time.Microsecond || h.Max() != 10*time.Millisecond {
		t.Errorf("count %d min %v max %v", h.Count(), h.Min(), h.Max())
	}
	if h.Percentile(100) != h.Max() || h.Percentile(0) != h.Min() {
		t.Errorf("p0/p100 are not min/max")
	}
	if want := 5000500 * time.Nanosecond; h.Mean() != want { // exact: (1+10000)/2 µs
		t.Errorf("mean %v, want %v", h.Mean(), want)
	}
	s := h.Summary()
	if !near(time.Duration(s.P99*1e6), 9900*time.Microsecond, 0.008) || s.Max != 10 {
		t.Errorf("summary %+v", s)
	}
}

func TestPercentilesSkewed(t *testing.T) {
	// 990 fast requests and 10 slow ones: p99 is the last fast one, p99.9
	// a slow one. This is the shape a tail-latency target looks at.
	var h Histogram
	for range 990 {
		h.Record(2 * time.Millisecond)
	}
	for range 10 {
		h.Record(250 * time.Millisecond)
	}
	if got := h.Percentile(99); !near(got, 2*time.Millisecond, 0.008) {
		t.Errorf("p99 = %v", got)
	}
	if got := h.Percentile(99.1); !near(got, 250*time.Millisecond, 0.008) {
		t.Errorf("p99.1 = %v", got)
	}
	// A constant is reported exactly (clamped to min/max).
	var c Histogram
	for range 7 {
		c.Record(1234567 * time.Nanosecond)
	}
	if c.Percentile(50) != 1234567*time.Nanosecond {
		t.Errorf("constant p50 = %v", c.Percentile(50))
	}
	var empty Histogram
	if empty.Percentile(99) != 0 || empty.Mean() != 0 || empty.Summary().Count != 0 {
		t.Errorf("empty histogram")
	}
}

func TestHistogramMerge(t *testing.T) {
	var a, b, all Histogram
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 20000 {
		d := time.Duration(rng.ExpFloat64() * float64(time.Millisecond))
		all.Record(d)
		if i%3 == 0 {
			a.Record(d)
		} else {
			b.Record(d)
		}
	}
	var m Histogram
	m.Merge(&a)
	m.Merge(&b)
	m.Merge(&Histogram{})
	for _, p := range []float64{0, 10, 50, 90, 99, 99.9, 100} {
		if m.Percentile(p) != all.Percentile(p) {
			t.Errorf("p%v: merged %v, direct %v", p, m.Percentile(p), all.Percentile(p))
		}
	}
	if m.Count() != all.Count() || m.Min() != all.Min() || m.Max() != all.Max() || m.Mean() != all.Mean() {
		t.Errorf("merged %d/%v/%v/%v, direct %d/%v/%v/%v", m.Count(), m.Min(), m.Max(), m.Mean(), all.Count(), all.Min(), all.Max(), all.Mean())
	}
}

// TestBuckets checks the bucket arithmetic: every value lies in its
// bucket, buckets are at most 1/128 of their value wide, and consecutive
// buckets tile the line.
func TestBuckets(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	check := func(v int64) {
		i := histIndex(v)
		lo, hi := histRange(i)
		if v < lo || v > hi {
			t.Fatalf("%d in bucket %d = [%d, %d]", v, i, lo, hi)
		}
		if v >= histSub && float64(hi-lo+1) > float64(lo)/128 {
			t.Fatalf("bucket [%d, %d] wider than 1/128", lo, hi)
		}
	}
	for v := int64(0); v < 100000; v++ {
		check(v)
	}
	for range 100000 {
		check(rng.Int64N(math.MaxInt64))
	}
	check(math.MaxInt64)
	for i := 1; i < histBuckets; i++ {
		_, prevHi := histRange(i - 1)
		lo, _ := histRange(i)
		if lo != prevHi+1 {
			t.Fatalf("bucket %d starts at %d, previous ends at %d", i, lo, prevHi)
		}
	}
}

func TestMedian(t *testing.T) {
	for _, c := range []struct {
		in   []float64
		want float64
	}{{nil, 0}, {[]float64{3}, 3}, {[]float64{3, 1, 2}, 2}, {[]float64{4, 1, 3, 2}, 2.5}} {
		if got := median(c.in); got != c.want {
			t.Errorf("median(%v) = %v, want %v", c.in, got, c.want)
		}
	}
}
