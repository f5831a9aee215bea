package audit

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// File is what the log needs of a file it writes: append, make durable,
// close. It is the fault-injection seam (Options.OpenFile): tests wrap the
// real file and fail Write or Sync the way a full or failing disk does.
type File interface {
	// Write appends (checkpoints files); WriteAt writes a batch at its
	// offset in a preallocated segment (prealloc.go).
	Write(p []byte) (int, error)
	WriteAt(p []byte, off int64) (int, error)
	// Truncate drops a sealed segment's unused zero padding, never a
	// record byte.
	Truncate(size int64) error
	// Sync makes everything written so far durable: fdatasync(2) for
	// segment and checkpoint files, fsync(2) for directories (the entry of
	// a newly created file).
	Sync() error
	Close() error
	Name() string
}

// osFile is the production File.
type osFile struct {
	*os.File
	fd  int
	dir bool
}

// openOSFile is the default Options.OpenFile.
func openOSFile(name string, flag int, perm os.FileMode) (File, error) {
	f, err := os.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	// Fd is taken once: it puts the descriptor in blocking mode, which
	// regular files and directories are anyway.
	return &osFile{File: f, fd: int(f.Fd()), dir: fi.IsDir()}, nil
}

// Sync uses fdatasync for files: appends change the size, which fdatasync
// does flush, but not the mtime, which the log does not need, so it can
// skip one metadata write per batch. Directories need fsync for their
// entries. EINTR is the call being interrupted, not a failed writeback, so
// it is retried (as os.File.Sync does); any other error is final: the
// caller never syncs that file again.
func (f *osFile) Sync() error {
	if f.dir {
		return f.File.Sync()
	}
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

// syncDir makes the directory entries of newly created files durable.
func syncDir(open func(string, int, os.FileMode) (File, error), dir string) error {
	d, err := open(dir, os.O_RDONLY, 0)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}
