//go:build linux

package audit

import (
	"os"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

// TestWriterYieldGrowsBatches: with one P and a flush that does not wait
// (tmpfs), the waiters a batch releases are runnable when the writer loops;
// the writer yields before taking the queue, so they append first and the
// next batch holds them all. Without the yield the writer takes the queue
// at once, finds one record (the first waiter woke it and it ran next),
// and batches stay near one record.
func TestWriterYieldGrowsBatches(t *testing.T) {
	dir, err := os.MkdirTemp("/dev/shm", "audit-yield-test-")
	if err != nil {
		t.Fatalf("this test needs tmpfs at /dev/shm (a flush that does not wait): %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))

	k := newTestKeys(t)
	cfg := testConfig(dir)
	cfg.SegmentMaxBytes = 8 << 20
	cfg.CheckpointInterval = time.Hour
	var records, batches atomic.Int64
	opts := k.options()
	opts.Reporter = batchFunc(func(n int) {
		records.Add(int64(n))
		batches.Add(1)
	})
	l := openLog(t, cfg, opts)
	defer l.Close()

	const appenders, each = 8, 100
	appendConcurrently(t, l, appenders, each)
	avg := float64(records.Load()) / float64(batches.Load())
	t.Logf("%d records in %d batches: %.1f per batch", records.Load(), batches.Load(), avg)
	if avg < appenders/2 {
		t.Fatalf("%.1f records per batch with %d appenders and one P, want at least %d: the writer took the queue before the released waiters appended", avg, appenders, appenders/2)
	}
}
