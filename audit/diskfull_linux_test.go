package audit

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestRealDiskFull fills a small tmpfs: write(2) then fails with ENOSPC
// for real, and frees it again. It needs root (mount); elsewhere it is
// skipped and the injected faults of fault_test.go cover the same paths.
func TestRealDiskFull(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root")
	}
	mnt := t.TempDir()
	if err := unix.Mount("tmpfs", mnt, "tmpfs", 0, "size=4m"); err != nil {
		t.Skipf("cannot mount a tmpfs here: %v", err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(mnt, 0); err != nil {
			unix.Unmount(mnt, unix.MNT_DETACH)
		}
	})
	k := newTestKeys(t)
	dir := filepath.Join(mnt, "audit")
	cfg := testConfig(dir)
	cfg.SegmentMaxBytes = 256 << 10 // preallocated segments fit, several of them
	opts := k.options()
	opts.RetryInterval = 20 * time.Millisecond
	if os.Getenv("AUDIT_DEBUG") != "" {
		opts.Logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	l := openLog(t, cfg, opts)
	ld := startLoad(t, l, 8)
	waitFor(t, func() bool { return l.Stats().Records > 50 })

	// Fill the file system: the log's next write fails with ENOSPC.
	filler := filepath.Join(mnt, "filler")
	f, err := os.Create(filler)
	if err != nil {
		t.Fatal(err)
	}
	chunk := make([]byte, 4096)
	for {
		if _, err := f.Write(chunk); err != nil {
			break
		}
	}
	f.Close()
	waitFor(t, func() bool { return l.Healthy() != nil })
	if err := l.Healthy(); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("Healthy: %v, want ENOSPC", err)
	}
	if err := l.Append(context.Background(), accessRecord(1)); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Append on a full disk: %v", err)
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return l.Healthy() == nil })
	n := l.Stats().Records
	waitFor(t, func() bool { return l.Stats().Records > n+50 })
	acked := ld.halt()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	res := verifyDir(t, dir, k)
	checkAcked(t, dir, acked)
	t.Logf("acked %d, failed %d, abandoned %+v", len(acked), ld.failed.Load(), res.Abandoned)
}
