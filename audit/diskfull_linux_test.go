package audit

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
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
	mnt := mountTmpfs(t)
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
	filler := fill(t, mnt)
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

// mountTmpfs mounts a 4 MiB tmpfs for the test (root only).
func mountTmpfs(t *testing.T) string {
	t.Helper()
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
	return mnt
}

// fill writes mnt/filler until the file system is full.
func fill(t *testing.T, mnt string) string {
	t.Helper()
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
	return filler
}

// TestRealDiskFullCleanStop stops the log while the disk is still full
// (SIGTERM during the episode), and snapshots it while failed recoveries
// are going on (what kill -9 would leave): verify must accept both,
// naming what it finds as crash or disk-full artefacts, and must still
// call a cut into checkpointed records tampering.
func TestRealDiskFullCleanStop(t *testing.T) {
	mnt := mountTmpfs(t)
	k := newTestKeys(t)
	dir := filepath.Join(mnt, "audit")
	cfg := testConfig(dir)
	cfg.SegmentMaxBytes = 256 << 10
	opts := k.options()
	opts.RetryInterval = 20 * time.Millisecond
	l := openLog(t, cfg, opts)
	ld := startLoad(t, l, 8)
	waitFor(t, func() bool { return l.Stats().Records > 50 })
	filler := fill(t, mnt)
	waitFor(t, func() bool { return l.Healthy() != nil })

	// Let recovery fail a few times, then copy the directory as a crash
	// would leave it: mid-episode, with a failed segment creation in it.
	// (The copy goes to the test's disk, which has room.)
	crashed := t.TempDir()
	waitFor(t, func() bool {
		return snapshot(t, dir, crashed) && failedCreation(t, crashed)
	})
	acked := ld.halt()

	// The clean stop: Close reports that it could not seal.
	err := l.Close()
	if !errors.Is(err, ErrUnavailable) || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("Close on a full disk: %v, want the ENOSPC it could not seal through", err)
	}
	if failedCreation(t, dir) {
		t.Fatalf("Close left a failed segment creation behind: %v", segmentFiles(t, dir))
	}
	for name, d := range map[string]string{"clean stop": dir, "crash": crashed} {
		res, err := Verify(os.DirFS(d), VerifyOptions{Verifiers: k.verifiers})
		if err != nil {
			t.Fatalf("%s on a full disk: verify: %v", name, err)
		}
		if len(res.Artefacts) == 0 && name == "crash" {
			t.Fatalf("%s: verify names no artefact; the copy has a failed segment creation", name)
		}
		t.Logf("%s: %d records, artefacts %q", name, res.Next, res.Artefacts)
		checkAcked(t, d, acked)
	}

	// A real truncation: cut the newest records a signed checkpoint
	// covers. Verify names it as an error, not an artefact.
	cut := t.TempDir()
	copyDir(t, crashed, cut)
	seg, cp := lastCheckpointed(t, cut)
	if err := os.Truncate(filepath.Join(cut, seg), cp.Offset-1); err != nil {
		t.Fatal(err)
	}
	var ve *VerifyError
	if _, err := Verify(os.DirFS(cut), VerifyOptions{Verifiers: k.verifiers}); !errors.As(err, &ve) {
		t.Fatalf("verify of a log cut into its checkpointed records: %v, want a VerifyError", err)
	}
	t.Logf("cut: %v", ve)

	// Space comes back: the next start recovers from either state.
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{dir, crashed} {
		c := cfg
		c.Dir = d
		l := openLog(t, c, opts)
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		res := verifyDir(t, d, k)
		if len(res.Artefacts) != 0 {
			t.Errorf("%s after a restart with space: artefacts %q", d, res.Artefacts)
		}
		checkAcked(t, d, acked)
	}
}

// snapshot copies the log's segment files from src to dst, as a crash
// at one moment would leave them, and reports false when the writer moved
// on while it copied (try again). Files are read one after the other, so
// the copy is a state the writer was in only if the directory's names and
// every checkpoints file are the same after the last read as before the
// first: the writer adds a checkpoint only after the records it covers
// are durable, and creates a segment's checkpoints file before its
// records file. Without that check a segment's checkpoints file could be
// copied after the checkpoint of its first record and its records file
// not at all (listed before it was created): a state no crash leaves.
func snapshot(t *testing.T, src, dst string) bool {
	t.Helper()
	old, _ := filepath.Glob(filepath.Join(dst, "seg-*"))
	for _, f := range old {
		os.Remove(f)
	}
	names, err := filepath.Glob(filepath.Join(src, "seg-*"))
	if err != nil {
		t.Fatal(err)
	}
	contents := make([][]byte, len(names))
	for i, name := range names {
		b, err := os.ReadFile(name)
		if errors.Is(err, os.ErrNotExist) {
			return false
		}
		if err != nil {
			t.Fatal(err)
		}
		contents[i] = b
	}
	after, err := filepath.Glob(filepath.Join(src, "seg-*"))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(names, after) {
		return false
	}
	for i, name := range names {
		if !strings.HasSuffix(name, ".checkpoints") {
			continue
		}
		b, err := os.ReadFile(name)
		if err != nil || !bytes.Equal(b, contents[i]) {
			return false
		}
	}
	for i, name := range names {
		if err := os.WriteFile(filepath.Join(dst, filepath.Base(name)), contents[i], 0o640); err != nil {
			t.Fatal(err)
		}
	}
	return true
}

func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	if !snapshot(t, src, dst) {
		t.Fatal("a file vanished while copying")
	}
}

// failedCreation reports whether the newest segment holds no record: a
// checkpoints file without a segment file, or with an empty one.
func failedCreation(t *testing.T, dir string) bool {
	t.Helper()
	segs, err := ListSegments(os.DirFS(dir))
	if err != nil {
		t.Fatal(err)
	}
	if len(segs) < 2 {
		return false
	}
	last := segs[len(segs)-1]
	_, err = firstRecord(os.DirFS(dir), last.Name)
	return !last.HasRecords || err != nil
}

// lastCheckpointed returns the newest segment with records and its last
// checkpoint that covers records of it.
func lastCheckpointed(t *testing.T, dir string) (string, checkpointEntry) {
	t.Helper()
	segs, err := ListSegments(os.DirFS(dir))
	if err != nil {
		t.Fatal(err)
	}
	for i := len(segs) - 1; i >= 0; i-- {
		f, err := os.Open(filepath.Join(dir, segs[i].CheckpointsName))
		if err != nil {
			continue
		}
		entries, _, err := readCheckpointEntries(f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		if n := len(entries); n > 0 && entries[n-1].Offset > 0 {
			return segs[i].Name, entries[n-1]
		}
	}
	t.Fatal("no checkpoint covers a record")
	return "", checkpointEntry{}
}
