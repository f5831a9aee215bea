package audit

import (
	"os"
	"time"
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
	// keepP: datasync is the raw call while flushes are fast
	// (Config.SyncMode, file_linux.go); slow: the last one was not.
	keepP, slow bool
	slowAfter   time.Duration
	rawSyncs    int // raw calls made (tests)
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

// Sync is datasync for files (fdatasync on Linux, file_linux.go) and
// fsync for directories, whose entries are their data.
func (f *osFile) Sync() error {
	if f.dir {
		return f.File.Sync()
	}
	return f.datasync()
}

// keepPWhileFast makes f's fdatasync keep the calling goroutine's P while
// flushes take less than slowAfter (Config.SyncMode "keep_p"). Only the
// writer's segment files get it: the writer is the only goroutine that
// syncs them, and the preparer's 70 MB zero-fill must not hold a P.
func keepPWhileFast(f File, slowAfter time.Duration) {
	if of, ok := f.(*osFile); ok && rawDatasyncAvailable {
		of.keepP, of.slowAfter = true, slowAfter
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
