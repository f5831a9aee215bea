package audit

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestAppendExpiresWhileTheDiskHangs: Appends waiting for durability end
// with their context's error when it expires — those in the batch the
// writer holds in a hung fdatasync and those queued behind it, sharing one
// context as the server's requests share a deadline, and one with a
// context of its own — while one with no deadline keeps waiting; when the
// disk returns, the writer finishes everything, later Appends succeed, and
// the log verifies with every record written.
func TestAppendExpiresWhileTheDiskHangs(t *testing.T) {
	k := newTestKeys(t)
	dir := t.TempDir()
	cfg := testConfig(dir)
	gate := newSyncGate()
	opts := k.options()
	opts.OpenFile = gate.open
	l := openLog(t, cfg, opts)
	defer l.Close()
	// Runs before Close, also when the test fails: Close waits for the
	// writer, which waits for the disk.
	defer gate.release()
	gate.blocking.Store(true)

	shared, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	own, cancelOwn := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancelOwn()
	errs := make(chan error, 8)
	forever := make(chan error, 1)
	go func() { errs <- l.Append(shared, accessRecord(0)) }()
	<-gate.inSync // the writer holds that batch, blocked in fdatasync
	for i := 1; i < 4; i++ {
		go func() { errs <- l.Append(shared, accessRecord(i)) }()
	}
	go func() { errs <- l.Append(own, accessRecord(4)) }()
	go func() { forever <- l.Append(context.Background(), accessRecord(5)) }()
	waitFor(t, func() bool { return l.Stats().QueueDepth == 5 })

	start := time.Now()
	for range 5 {
		select {
		case err := <-errs:
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("Append while the disk hangs: %v, want the context's deadline", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("an Append outlived its context by 10 s")
		}
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the Appends ended %v after their deadline", d)
	}
	select {
	case err := <-forever:
		t.Fatalf("an Append without a deadline returned while the disk hangs: %v", err)
	default:
	}
	if err := l.Append(shared, accessRecord(6)); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Append with an expired context: %v, want its error", err)
	}

	gate.release()
	if err := <-forever; err != nil {
		t.Fatalf("Append without a deadline after the disk returned: %v", err)
	}
	for i := 7; i < 10; i++ {
		ctx, c := context.WithTimeout(context.Background(), 10*time.Second)
		if err := l.Append(ctx, accessRecord(i)); err != nil {
			t.Fatalf("Append after the disk returned: %v", err)
		}
		c()
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	verifyDir(t, dir, k)
	var access int
	for _, r := range readLog(t, dir) {
		if r.Kind == KindAccess {
			access++
		}
	}
	// All ten were queued and are written, although six of them failed
	// (the log may hold records of requests that failed, never the
	// reverse).
	if access != 10 {
		t.Errorf("%d access records, want 10", access)
	}
}
