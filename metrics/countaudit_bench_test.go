package metrics

import "testing"

// BenchmarkCountAuditDecision is counting one durable record by decision:
// allow through its resolved child (lazyChild), error through
// WithLabelValues, as every decision was counted before.
//
//	go test -run '^$' -bench CountAuditDecision -benchmem ./metrics/
func BenchmarkCountAuditDecision(b *testing.B) {
	for _, d := range []string{"allow", "error"} {
		b.Run(d, func(b *testing.B) {
			m := New()
			b.ReportAllocs()
			for b.Loop() {
				m.CountAuditDecision(d)
			}
		})
	}
}
