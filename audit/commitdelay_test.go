package audit

import (
	"context"
	"sync"
	"testing"
	"time"
)

// TestCommitDelayGroupsABusyBatch: after a busy batch (4 records or more),
// the writer waits CommitDelay before the next one, so Appends arriving in
// that window share one fdatasync; after a batch of one record (a lone
// client) it does not wait.
func TestCommitDelayGroupsABusyBatch(t *testing.T) {
	k := newTestKeys(t)
	cfg := testConfig(t.TempDir())
	cfg.CommitDelay = time.Second // far above any scheduling noise
	cfg.CheckpointInterval = time.Hour
	var mu sync.Mutex
	var batches []int
	opts := k.options()
	opts.Reporter = batchFunc(func(records int) {
		mu.Lock()
		batches = append(batches, records)
		mu.Unlock()
	})
	l := openLog(t, cfg, opts)
	defer l.Close()
	ctx := context.Background()

	// A lone client: the previous batch was Open's own, one record.
	start := time.Now()
	if err := l.Append(ctx, accessRecord(0)); err != nil {
		t.Fatal(err)
	}
	lone := time.Since(start)

	// A busy batch of 4, then an Append, and another 50 ms later: without
	// the delay the first would be written long before the second
	// arrives; with it, the second joins the first's batch.
	if err := l.Append(ctx, accessRecord(1), accessRecord(2), accessRecord(3), accessRecord(4)); err != nil {
		t.Fatal(err)
	}
	// The Reporter is called after the batch's Appends are released: wait for it.
	var before int
	waitFor(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		before = len(batches)
		return before > 0 && batches[before-1] == 4
	})
	var wg sync.WaitGroup
	for i := range 2 {
		if i > 0 {
			time.Sleep(50 * time.Millisecond)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := l.Append(ctx, accessRecord(10+i)); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	// Again the Reporter runs after the Appends return: wait until it has
	// seen both records, in one batch or two.
	waitFor(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		n := 0
		for _, b := range batches[before:] {
			n += b
		}
		return n >= 2
	})
	mu.Lock()
	defer mu.Unlock()
	if got := batches[before:]; len(got) != 1 || got[0] != 2 {
		t.Fatalf("after a busy batch, two close Appends were written as batches %v, want one batch of 2", got)
	}
	if lone >= cfg.CommitDelay {
		t.Fatalf("a lone Append waited %v: the delay applies only after a busy batch", lone)
	}
}
