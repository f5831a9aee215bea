package audit

import (
	"errors"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// rawDatasyncAvailable: Config.SyncMode keep_p has its raw call here.
const rawDatasyncAvailable = true

// datasync is fdatasync(2): appends change the size, which fdatasync does
// flush, but not the mtime, which the log does not need, so it can skip
// one metadata write per batch. EINTR is the call being interrupted, not a
// failed writeback, so it is retried (as os.File.Sync does); any other
// error is final: the caller never syncs that file again.
//
// With keepP it is a raw system call while flushes are fast. A goroutine
// in an ordinary blocking call keeps its P only until the runtime's
// monitor notices (20 µs on); on a busy server the monitor then hands
// the P to another thread, and when the call returns the writer's thread
// finds no P, queues the goroutine and parks: thread wake-ups, a park and
// the monitor polling every 20 µs, once per group commit. Raw, the P
// stays (serve adds one to GOMAXPROCS for it), and nothing else happens.
// The price: a stop-the-world waits for the flush to return, which is why
// a slow flush (slowAfter) turns the next ones into the ordinary call
// until one is fast again.
func (f *osFile) datasync() error {
	for {
		var err error
		if f.keepP {
			start := time.Now()
			if f.slow {
				err = unix.Fdatasync(f.fd)
			} else {
				err = rawFdatasync(f.fd)
				f.rawSyncs++
			}
			f.slow = time.Since(start) >= f.slowAfter
		} else {
			err = unix.Fdatasync(f.fd)
		}
		if !errors.Is(err, unix.EINTR) {
			if err != nil {
				return &os.PathError{Op: "fdatasync", Path: f.Name(), Err: err}
			}
			return nil
		}
	}
}

// rawFdatasync is fdatasync(2) without telling the scheduler: the calling
// goroutine keeps its P through the wait.
func rawFdatasync(fd int) error {
	if _, _, e := unix.RawSyscall(unix.SYS_FDATASYNC, uintptr(fd), 0, 0); e != 0 {
		return e
	}
	return nil
}

// WriteBack writes the file's dirty pages in [off, off+n) to the device
// and waits for them, without flushing the device's cache or the file's
// metadata (sync_file_range(2)); prepare uses it to zero-fill the next
// segment a chunk at a time (see prealloc.go).
func (f *osFile) WriteBack(off, n int64) error {
	return unix.SyncFileRange(f.fd, off, n, unix.SYNC_FILE_RANGE_WAIT_BEFORE|unix.SYNC_FILE_RANGE_WRITE|unix.SYNC_FILE_RANGE_WAIT_AFTER)
}

// dropCachedPages drops a file's clean cached pages (posix_fadvise
// POSIX_FADV_DONTNEED; dirty ones stay). The preparer drops sealed
// segments with it, which are fdatasync'ed: nothing is lost, and a later
// read takes the bytes from the device (prealloc.go says why). It opens
// the file itself, read-only, not through Options.OpenFile: the advice
// writes nothing a fault could be injected into.
func dropCachedPages(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED)
}
