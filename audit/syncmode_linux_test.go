package audit

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestSyncModeValidated(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.SyncMode = "raw"
	err := cfg.Validate()
	if err == nil || !strings.Contains(err.Error(), "audit.sync_mode") || !strings.Contains(err.Error(), SyncKeepP) {
		t.Fatalf("sync_mode raw: error %v, want one naming audit.sync_mode and its values", err)
	}
	for _, mode := range []string{"", SyncKeepP, SyncSyscall} {
		cfg.SyncMode = mode
		if err := cfg.Validate(); err != nil {
			t.Errorf("sync_mode %q: %v", mode, err)
		}
	}
}

// openedFiles records the production files a Log opens, by base name;
// read them after Close (the writer owns them until then).
type openedFiles struct {
	mu    sync.Mutex
	files map[string]*osFile
}

func (o *openedFiles) open(name string, flag int, perm os.FileMode) (File, error) {
	f, err := openOSFile(name, flag, perm)
	if err == nil {
		o.mu.Lock()
		if o.files == nil {
			o.files = map[string]*osFile{}
		}
		o.files[filepath.Base(name)] = f.(*osFile)
		o.mu.Unlock()
	}
	return f, err
}

// Only the writer's segment files keep their P: not the checkpoints file
// (synced rarely), and not with sync_mode syscall.
func TestKeepPOnlyForSegments(t *testing.T) {
	for _, mode := range []string{"", SyncSyscall} {
		k := newTestKeys(t)
		cfg := testConfig(t.TempDir())
		cfg.SyncMode = mode
		var opened openedFiles
		opts := k.options()
		opts.OpenFile = opened.open
		l := openLog(t, cfg, opts)
		if err := l.Append(context.Background(), accessRecord(1)); err != nil {
			t.Fatal(err)
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		seg, chk := opened.files[SegmentName(0)], opened.files[CheckpointsName(0)]
		if seg == nil || chk == nil {
			t.Fatalf("files opened: %v", opened.files)
		}
		wantRaw := mode == ""
		if seg.keepP != wantRaw || (seg.rawSyncs > 0) != wantRaw {
			t.Errorf("sync_mode %q: segment keepP %v after %d raw flushes, want keepP %v", mode, seg.keepP, seg.rawSyncs, wantRaw)
		}
		if chk.keepP || chk.rawSyncs != 0 {
			t.Errorf("sync_mode %q: the checkpoints file keeps its P (%d raw flushes)", mode, chk.rawSyncs)
		}
		verifyDir(t, cfg.Dir, k)
	}
}

// A flush at or past the threshold makes the next ones ordinary blocking
// calls, until one is fast again.
func TestKeepPSlowFlushHandsOff(t *testing.T) {
	name := filepath.Join(t.TempDir(), "f")
	f, err := openOSFile(name, os.O_WRONLY|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	of := f.(*osFile)
	keepPWhileFast(f, 0) // every flush counts as slow
	sync := func(wantRaw int, wantSlow bool) {
		t.Helper()
		if _, err := f.Write([]byte("x")); err != nil {
			t.Fatal(err)
		}
		if err := f.Sync(); err != nil {
			t.Fatal(err)
		}
		if of.rawSyncs != wantRaw || of.slow != wantSlow {
			t.Fatalf("after a flush: %d raw, slow %v; want %d raw, slow %v", of.rawSyncs, of.slow, wantRaw, wantSlow)
		}
	}
	sync(1, true) // raw, and slow
	sync(1, true) // so the blocking call, still slow
	of.slowAfter = time.Hour
	sync(1, false) // blocking, and fast
	sync(2, false) // raw again
}

// A stop-the-world waits for a P in a raw fdatasync to return: many
// collections while 32 appenders commit must neither deadlock nor lose a
// record.
func TestKeepPWithCollections(t *testing.T) {
	k := newTestKeys(t)
	cfg := testConfig(t.TempDir())
	var opened openedFiles
	opts := k.options()
	opts.OpenFile = opened.open
	l := openLog(t, cfg, opts)
	var stop atomic.Bool
	var gcs int
	done := make(chan struct{})
	go func() {
		defer close(done)
		for !stop.Load() {
			runtime.GC()
			gcs++
		}
	}()
	const writers, perWriter = 32, 50
	appendConcurrently(t, l, writers, perWriter)
	stop.Store(true)
	<-done
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	raw := 0
	for name, f := range opened.files {
		if strings.HasPrefix(name, "seg-") {
			raw += f.rawSyncs
		}
	}
	if raw == 0 {
		t.Fatal("no raw flush: the test did not exercise keep_p")
	}
	t.Logf("%d collections during %d raw flushes", gcs, raw)
	if got := len(readLog(t, cfg.Dir)); got < writers*perWriter {
		t.Fatalf("%d records in the log, want at least %d", got, writers*perWriter)
	}
	verifyDir(t, cfg.Dir, k)
}
