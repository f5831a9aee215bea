package bench

import (
	"math"
	"math/bits"
	"time"
)

// Histogram records durations in log-linear buckets, like HdrHistogram with
// two significant digits: values below 256 ns are exact, larger ones fall
// in buckets 1/128 of their power of two wide, so any reported percentile
// is within 0.8% of the true value. Min, max, count and sum are exact. The
// zero value is ready to use; a Histogram is not safe for concurrent use
// (give each worker its own and Merge them).
type Histogram struct {
	counts []uint64
	n      uint64
	sum    float64 // ns
	min    int64
	max    int64
}

const (
	histSubBits = 8
	histSub     = 1 << histSubBits      // exact values below this
	histHalf    = histSub / 2           // buckets per power of two above it
	histBuckets = histSub + 55*histHalf // up to 2^63 ns
)

func histIndex(v int64) int {
	if v < histSub {
		if v < 0 {
			return 0
		}
		return int(v)
	}
	shift := bits.Len64(uint64(v)) - histSubBits // >= 1
	m := int(v >> shift)                         // in [histHalf, histSub)
	return histSub + (shift-1)*histHalf + (m - histHalf)
}

// histRange returns the smallest and largest value of bucket i.
func histRange(i int) (lo, hi int64) {
	if i < histSub {
		return int64(i), int64(i)
	}
	shift := (i-histSub)/histHalf + 1
	m := int64((i-histSub)%histHalf + histHalf)
	lo = m << shift
	return lo, lo + 1<<shift - 1
}

// Record adds one duration.
func (h *Histogram) Record(d time.Duration) {
	v := int64(d)
	if v < 0 {
		v = 0
	}
	if h.counts == nil {
		h.counts = make([]uint64, histBuckets)
	}
	h.counts[histIndex(v)]++
	if h.n == 0 || v < h.min {
		h.min = v
	}
	if v > h.max {
		h.max = v
	}
	h.n++
	h.sum += float64(v)
}

// Merge adds o's values to h.
func (h *Histogram) Merge(o *Histogram) {
	if o.n == 0 {
		return
	}
	if h.counts == nil {
		h.counts = make([]uint64, histBuckets)
	}
	for i, c := range o.counts {
		h.counts[i] += c
	}
	if h.n == 0 || o.min < h.min {
		h.min = o.min
	}
	if o.max > h.max {
		h.max = o.max
	}
	h.n += o.n
	h.sum += o.sum
}

// Count is the number of recorded values.
func (h *Histogram) Count() uint64 { return h.n }

// Max and Min are the exact extremes (0 when empty).
func (h *Histogram) Max() time.Duration { return time.Duration(h.max) }

// Min is the smallest recorded value.
func (h *Histogram) Min() time.Duration { return time.Duration(h.min) }

// Mean is the exact mean.
func (h *Histogram) Mean() time.Duration {
	if h.n == 0 {
		return 0
	}
	return time.Duration(h.sum / float64(h.n))
}

// Percentile returns the value below or at which p percent of the values
// lie (nearest rank), as the midpoint of its bucket clamped to [min, max].
// p is in [0, 100]; 0 when empty.
func (h *Histogram) Percentile(p float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	if p <= 0 {
		return time.Duration(h.min)
	}
	if p >= 100 {
		return time.Duration(h.max)
	}
	rank := uint64(math.Ceil(p / 100 * float64(h.n)))
	if rank == 0 {
		rank = 1
	}
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			lo, hi := histRange(i)
			v := lo + (hi-lo)/2
			v = max(v, h.min)
			v = min(v, h.max)
			return time.Duration(v)
		}
	}
	return time.Duration(h.max)
}

// LatencySummary is a histogram's summary in milliseconds.
type LatencySummary struct {
	Count uint64  `json:"count"`
	Mean  float64 `json:"mean_ms"`
	Min   float64 `json:"min_ms"`
	P50   float64 `json:"p50_ms"`
	P90   float64 `json:"p90_ms"`
	P99   float64 `json:"p99_ms"`
	P999  float64 `json:"p99_9_ms"`
	Max   float64 `json:"max_ms"`
}

// Summary summarizes h.
func (h *Histogram) Summary() LatencySummary {
	return LatencySummary{
		Count: h.n,
		Mean:  ms(h.Mean()),
		Min:   ms(h.Min()),
		P50:   ms(h.Percentile(50)),
		P90:   ms(h.Percentile(90)),
		P99:   ms(h.Percentile(99)),
		P999:  ms(h.Percentile(99.9)),
		Max:   ms(h.Max()),
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// median returns the median of xs (0 for none); xs is not modified.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
