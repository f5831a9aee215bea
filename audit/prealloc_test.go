package audit

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// writeBackFile records the ranges written back before the final Sync.
type writeBackFile struct {
	File
	wb     writeBacker
	mu     *sync.Mutex
	ranges *[][2]int64
	synced *bool
}

func (f *writeBackFile) WriteBack(off, n int64) error {
	f.mu.Lock()
	if !*f.synced {
		*f.ranges = append(*f.ranges, [2]int64{off, n})
	}
	f.mu.Unlock()
	return f.wb.WriteBack(off, n)
}

func (f *writeBackFile) Sync() error {
	f.mu.Lock()
	*f.synced = true
	f.mu.Unlock()
	return f.File.Sync()
}

// TestPrepareWritesBackEachChunk: the next segment's zeros go to the device
// a chunk at a time, in order and all of them, before the final fdatasync
// (prealloc.go says why), and the file is all zeros.
func TestPrepareWritesBackEachChunk(t *testing.T) {
	k := newTestKeys(t)
	dir := t.TempDir()
	cfg := testConfig(dir)
	var (
		mu     sync.Mutex
		ranges [][2]int64
		synced bool
	)
	opts := k.options()
	opts.OpenFile = func(name string, flag int, perm os.FileMode) (File, error) {
		f, err := openOSFile(name, flag, perm)
		if err != nil || !strings.HasSuffix(name, preallocName) {
			return f, err
		}
		mu.Lock()
		ranges, synced = nil, false
		mu.Unlock()
		return &writeBackFile{File: f, wb: f.(writeBacker), mu: &mu, ranges: &ranges, synced: &synced}, nil
	}
	l := openLog(t, cfg, opts)
	defer l.Close()
	waitFor(t, func() bool { return l.prep.ready.Load() })

	size := l.preallocSize()
	mu.Lock()
	got := append([][2]int64(nil), ranges...)
	mu.Unlock()
	if len(got) < 2 {
		t.Fatalf("%d ranges written back for a %d-byte file: want one per chunk", len(got), size)
	}
	var next int64
	for _, r := range got {
		if r[0] != next || r[1] <= 0 || r[1] > 256<<10 {
			t.Fatalf("written back %v after %d bytes: want contiguous chunks of at most 256 KB", r, next)
		}
		next += r[1]
	}
	if next != size {
		t.Fatalf("written back %d of %d bytes", next, size)
	}
	b, err := os.ReadFile(filepath.Join(dir, preallocName))
	if err != nil {
		t.Fatal(err)
	}
	if int64(len(b)) != size || !bytes.Equal(b, make([]byte, size)) {
		t.Fatalf("prepared file: %d bytes, all zeros %v", len(b), bytes.Equal(b, make([]byte, len(b))))
	}
}
