package audit

import "golang.org/x/sys/unix"

// WriteBack writes the file's dirty pages in [off, off+n) to the device
// and waits for them, without flushing the device's cache or the file's
// metadata (sync_file_range(2)); prepare uses it to zero-fill the next
// segment a chunk at a time (see prealloc.go).
func (f *osFile) WriteBack(off, n int64) error {
	return unix.SyncFileRange(f.fd, off, n, unix.SYNC_FILE_RANGE_WAIT_BEFORE|unix.SYNC_FILE_RANGE_WRITE|unix.SYNC_FILE_RANGE_WAIT_AFTER)
}
