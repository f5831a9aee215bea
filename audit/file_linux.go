package audit

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// datasync is fdatasync(2): appends change the size, which fdatasync does
// flush, but not the mtime, which the log does not need, so it can skip
// one metadata write per batch. EINTR is the call being interrupted, not a
// failed writeback, so it is retried (as os.File.Sync does); any other
// error is final: the caller never syncs that file again.
func (f *osFile) datasync() error {
	for {
		err := unix.Fdatasync(f.fd)
		if !errors.Is(err, unix.EINTR) {
			if err != nil {
				return &os.PathError{Op: "fdatasync", Path: f.Name(), Err: err}
			}
			return nil
		}
	}
}

// WriteBack writes the file's dirty pages in [off, off+n) to the device
// and waits for them, without flushing the device's cache or the file's
// metadata (sync_file_range(2)); prepare uses it to zero-fill the next
// segment a chunk at a time (see prealloc.go).
func (f *osFile) WriteBack(off, n int64) error {
	return unix.SyncFileRange(f.fd, off, n, unix.SYNC_FILE_RANGE_WAIT_BEFORE|unix.SYNC_FILE_RANGE_WRITE|unix.SYNC_FILE_RANGE_WAIT_AFTER)
}
