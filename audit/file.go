package audit

import "os"

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

// Sync is datasync for files (fdatasync on Linux, file_linux.go) and
// fsync for directories, whose entries are their data.
func (f *osFile) Sync() error {
	if f.dir {
		return f.File.Sync()
	}
	return f.datasync()
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
