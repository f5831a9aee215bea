package audit

import (
	"context"
	"errors"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// faults injects failures at the narrowest seam: the Write and Sync calls
// of the files the log opens (Options.OpenFile). Used where a real fault
// cannot be produced (chmod does not stop root, and an open file keeps
// its write permission anyway), and to hit exact points (a checkpoint's
// sync, a partial write).
type faults struct {
	suffix        string       // which files fail: ".jsonl" or ".checkpoints"
	failSync      atomic.Bool  // Sync returns EIO
	failWrite     atomic.Bool  // Write writes half, then returns EIO
	failOpen      atomic.Bool  // creating files fails (the disk stays broken)
	syncAfterFail atomic.Int32 // Syncs on a file whose Sync already failed
	failed        atomic.Int32
}

func (fz *faults) open(name string, flag int, perm os.FileMode) (File, error) {
	if fz.failOpen.Load() && flag&os.O_CREATE != 0 {
		return nil, &os.PathError{Op: "open", Path: name, Err: syscall.EIO}
	}
	f, err := openOSFile(name, flag, perm)
	if err != nil || !strings.HasSuffix(name, fz.suffix) {
		return f, err
	}
	return &faultyFile{File: f, fz: fz}, nil
}

type faultyFile struct {
	File
	fz         *faults
	syncFailed bool
}

func (f *faultyFile) Write(p []byte) (int, error) {
	if f.fz.failWrite.Load() {
		f.fz.failed.Add(1)
		n, _ := f.File.Write(p[:len(p)/2])
		return n, &os.PathError{Op: "write", Path: f.Name(), Err: syscall.EIO}
	}
	return f.File.Write(p)
}

func (f *faultyFile) WriteAt(p []byte, off int64) (int, error) {
	if f.fz.failWrite.Load() {
		f.fz.failed.Add(1)
		n, _ := f.File.WriteAt(p[:len(p)/2], off)
		return n, &os.PathError{Op: "write", Path: f.Name(), Err: syscall.EIO}
	}
	return f.File.WriteAt(p, off)
}

func (f *faultyFile) Sync() error {
	if f.syncFailed {
		f.fz.syncAfterFail.Add(1)
	}
	if f.fz.failSync.Load() {
		f.fz.failed.Add(1)
		f.syncFailed = true
		return &os.PathError{Op: "fdatasync", Path: f.Name(), Err: syscall.EIO}
	}
	return f.File.Sync()
}

// load runs appenders until stop, recording what was acknowledged.
type load struct {
	l      *Log
	mu     sync.Mutex
	acked  map[uint64]string
	failed atomic.Int64
	stop   chan struct{}
	wg     sync.WaitGroup
}

func startLoad(t *testing.T, l *Log, writers int) *load {
	ld := &load{l: l, acked: map[uint64]string{}, stop: make(chan struct{})}
	for g := range writers {
		ld.wg.Add(1)
		go func() {
			defer ld.wg.Done()
			for i := 0; ; i++ {
				select {
				case <-ld.stop:
					return
				default:
				}
				r := accessRecord(g*100000 + i)
				err := l.Append(context.Background(), r)
				switch {
				case err == nil:
					ld.mu.Lock()
					ld.acked[r.Seq] = r.ID
					ld.mu.Unlock()
				case errors.Is(err, ErrUnavailable):
					ld.failed.Add(1)
					time.Sleep(time.Millisecond)
				default:
					t.Errorf("Append: %v", err)
					return
				}
			}
		}()
	}
	return ld
}

func (ld *load) halt() map[uint64]string {
	close(ld.stop)
	ld.wg.Wait()
	return ld.acked
}

// checkAcked: every acknowledged record is in the verified log, by seq
// and id.
func checkAcked(t *testing.T, dir string, acked map[uint64]string) []*Record {
	t.Helper()
	recs := readLog(t, dir)
	for seq, id := range acked {
		if seq >= uint64(len(recs)) || recs[seq].ID != id {
			t.Fatalf("acknowledged record seq %d id %s is not in the log", seq, id)
		}
	}
	return recs
}

func TestFaultInjectedRecoversIntoNewSegment(t *testing.T) {
	for _, tc := range []struct {
		name, suffix string
		partial      bool
	}{
		{"segment sync fails", ".jsonl", false},
		{"segment write fails halfway", ".jsonl", true},
		{"checkpoint sync fails", ".checkpoints", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := newTestKeys(t)
			dir := t.TempDir()
			cfg := testConfig(dir)
			cfg.CheckpointInterval = 5 * time.Millisecond
			fz := &faults{suffix: tc.suffix}
			opts := k.options()
			opts.OpenFile = fz.open
			opts.RetryInterval = 20 * time.Millisecond
			var batches atomic.Int64
			opts.Reporter = batchFunc(func(int) { batches.Add(1) })
			l := openLog(t, cfg, opts)
			ld := startLoad(t, l, 16)
			waitFor(t, func() bool { return batches.Load() > 20 })

			// The disk fails, and stays failed (new files fail too).
			fz.failOpen.Store(true)
			if tc.partial {
				fz.failWrite.Store(true)
			} else {
				fz.failSync.Store(true)
			}
			waitFor(t, func() bool { return l.Healthy() != nil })
			if err := l.Healthy(); !errors.Is(err, ErrUnavailable) || !errors.Is(err, syscall.EIO) {
				t.Fatalf("Healthy: %v; want ErrUnavailable wrapping the cause", err)
			}
			// While unhealthy, Append fails at once.
			start := time.Now()
			if err := l.Append(context.Background(), accessRecord(1)); !errors.Is(err, ErrUnavailable) {
				t.Fatalf("Append while unhealthy: %v", err)
			}
			// Fast means without waiting for the disk (which stays failed:
			// an Append that waited would never return): the bound is far
			// above scheduling noise on a loaded machine.
			if d := time.Since(start); d > 5*time.Second {
				t.Fatalf("Append while unhealthy took %v; must fail fast", d)
			}
			time.Sleep(100 * time.Millisecond) // several failed probes
			if l.Healthy() == nil {
				t.Fatal("recovered while the disk was still failing")
			}

			// The fault clears: the next probe opens a new segment.
			fz.failSync.Store(false)
			fz.failWrite.Store(false)
			fz.failOpen.Store(false)
			waitFor(t, func() bool { return l.Healthy() == nil })
			b := batches.Load()
			waitFor(t, func() bool { return batches.Load() > b+20 })
			acked := ld.halt()
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			if ld.failed.Load() == 0 {
				t.Fatal("no Append failed during the fault")
			}
			if n := fz.syncAfterFail.Load(); n != 0 {
				t.Fatalf("a failed fsync was retried on the same file %d times", n)
			}
			if st := l.Stats(); st.Failures == 0 {
				t.Fatal("Stats.Failures is 0")
			}

			res := verifyDir(t, dir, k)
			recs := checkAcked(t, dir, acked)
			var rec *Record
			for _, r := range recs {
				if r.Event == EventRecover {
					rec = r
				}
			}
			if rec == nil {
				t.Fatal("no recover record")
			}
			if tc.suffix == ".jsonl" {
				if len(res.Abandoned) != 1 || rec.Detail["abandoned"] != res.Abandoned[0].Name {
					t.Fatalf("abandoned %+v, recover record %v", res.Abandoned, rec.Detail)
				}
				if tc.partial && res.Abandoned[0].IgnoredBytes == 0 {
					t.Fatal("the half-written batch should remain as an ignored tail")
				}
			}
			t.Logf("acked %d, failed %d, recover %v, abandoned %+v", len(acked), ld.failed.Load(), rec.Detail, res.Abandoned)
		})
	}
}
