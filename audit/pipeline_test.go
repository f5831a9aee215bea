package audit

import (
	"context"
	"errors"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// scriptedSyncs controls the segment fdatasyncs made after arm: the first
// blocks until release is closed; the second fails with EIO if failSecond.
type scriptedSyncs struct {
	armed      atomic.Bool
	calls      atomic.Int32
	returned   atomic.Int32 // syncs that finished
	failSecond bool
	first      chan struct{} // receives when the first sync blocks
	release    chan struct{}
}

func newScriptedSyncs(failSecond bool) *scriptedSyncs {
	return &scriptedSyncs{failSecond: failSecond, first: make(chan struct{}, 1), release: make(chan struct{})}
}

func (s *scriptedSyncs) open(name string, flag int, perm os.FileMode) (File, error) {
	f, err := openOSFile(name, flag, perm)
	if err != nil || !strings.HasSuffix(name, ".jsonl") {
		return f, err
	}
	return &scriptedFile{File: f, s: s}, nil
}

type scriptedFile struct {
	File
	s *scriptedSyncs
}

func (f *scriptedFile) Sync() error {
	s := f.s
	if !s.armed.Load() {
		return f.File.Sync()
	}
	defer s.returned.Add(1)
	switch s.calls.Add(1) {
	case 1:
		s.first <- struct{}{}
		<-s.release
	case 2:
		if s.failSecond {
			return &os.PathError{Op: "fdatasync", Path: f.Name(), Err: syscall.EIO}
		}
	}
	return f.File.Sync()
}

// TestSyncsOverlapAndAckInOrder: with SyncConcurrency 2, a second batch is
// written and synced while the first batch's fdatasync is still running,
// and it is not acknowledged before the first (acknowledgements follow seq
// order).
func TestSyncsOverlapAndAckInOrder(t *testing.T) {
	k := newTestKeys(t)
	dir := t.TempDir()
	cfg := testConfig(dir)
	cfg.SyncConcurrency = 2
	cfg.CheckpointInterval = time.Hour // no checkpoint drains the pipeline mid-test
	s := newScriptedSyncs(false)
	opts := k.options()
	opts.OpenFile = s.open
	l := openLog(t, cfg, opts)
	s.armed.Store(true)

	type acked struct {
		name string
		rec  *Record
		err  error
	}
	order := make(chan acked, 2)
	a, b := accessRecord(1), accessRecord(2)
	go func() { err := l.Append(context.Background(), a); order <- acked{"a", a, err} }()
	<-s.first // a's batch is in its fdatasync, held there
	go func() { err := l.Append(context.Background(), b); order <- acked{"b", b, err} }()
	waitFor(t, func() bool { return s.returned.Load() == 1 }) // b's sync is done
	select {
	case got := <-order:
		t.Fatalf("%s acknowledged while the first batch's fdatasync was still running", got.name)
	case <-time.After(50 * time.Millisecond):
	}
	close(s.release)
	for range 2 {
		if got := <-order; got.err != nil {
			t.Fatalf("Append %s: %v", got.name, got.err)
		}
	}
	if b.Seq != a.Seq+1 {
		t.Fatalf("seqs %d, %d: want consecutive", a.Seq, b.Seq)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	checkAcked(t, dir, map[uint64]string{a.Seq: a.ID, b.Seq: b.ID})
	if res := verifyDir(t, dir, k); len(res.Warnings) > 0 {
		t.Fatalf("verify warnings: %v", res.Warnings)
	}
}

// TestSyncFailureFailsEveryBatchInFlight: when a batch's fdatasync fails
// while an earlier batch's is still running, both fail (the earlier one's
// records may be durable, but it is not acknowledged after the segment
// faulted), the log recovers into a new segment without either record,
// and verifies.
func TestSyncFailureFailsEveryBatchInFlight(t *testing.T) {
	k := newTestKeys(t)
	dir := t.TempDir()
	cfg := testConfig(dir)
	cfg.SyncConcurrency = 2
	cfg.CheckpointInterval = time.Hour
	s := newScriptedSyncs(true)
	opts := k.options()
	opts.OpenFile = s.open
	opts.RetryInterval = 10 * time.Millisecond
	l := openLog(t, cfg, opts)
	s.armed.Store(true)

	errs := make(chan error, 2)
	a, b := accessRecord(1), accessRecord(2)
	go func() { errs <- l.Append(context.Background(), a) }()
	<-s.first
	go func() { errs <- l.Append(context.Background(), b) }()
	waitFor(t, func() bool { return s.returned.Load() == 1 }) // b's sync failed
	close(s.release)
	for range 2 {
		if err := <-errs; !errors.Is(err, ErrUnavailable) || !errors.Is(err, syscall.EIO) {
			t.Fatalf("Append in flight at the failure: %v, want ErrUnavailable wrapping EIO", err)
		}
	}
	waitFor(t, func() bool { return l.Healthy() == nil })
	c := accessRecord(3)
	if err := l.Append(context.Background(), c); err != nil {
		t.Fatalf("Append after recovery: %v", err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	recs := checkAcked(t, dir, map[uint64]string{c.Seq: c.ID})
	for _, r := range recs {
		if r.Key == a.Key || r.Key == b.Key {
			t.Fatalf("record %s of a failed Append is in the log (seq %d)", r.Key, r.Seq)
		}
	}
	if !strings.Contains(events(recs), "recover") {
		t.Fatalf("no recover record: %s", events(recs))
	}
	verifyDir(t, dir, k)
}
