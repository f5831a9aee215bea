package upload

import (
	"errors"
	"io/fs"
	"slices"
	"strings"
)

// UnionFS overlays file systems: a name is opened from the first layer
// that has it, and a directory lists the union of the layers' entries (the
// first layer's entry wins a name). With the local log directory first and
// the bucket second, it is the whole log of a node that uploads: the
// uploaded (and locally removed) segments from the bucket, the newest ones
// from the disk, so
//
//	audit.Verify(UnionFS(os.DirFS(dir), bucket), audit.VerifyOptions{...})
//
// checks every record from seq 0 to the current one without Partial.
// Local first: a segment that is in both is the same bytes (it is only
// removed after its upload was verified), and reading the disk is cheaper.
// A segment removed locally between listing and opening is then found in
// the bucket. Any error other than "does not exist" is returned, never
// hidden by another layer: a bucket that cannot be listed must not make
// the log look shorter.
func UnionFS(layers ...fs.FS) fs.FS { return unionFS(slices.Clone(layers)) }

type unionFS []fs.FS

var (
	_ fs.ReadDirFS = unionFS(nil)
	_ fs.StatFS    = unionFS(nil)
)

func (u unionFS) Open(name string) (fs.File, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrInvalid}
	}
	for _, l := range u {
		f, err := l.Open(name)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		fi, err := f.Stat()
		if err != nil {
			f.Close()
			return nil, err
		}
		if fi.IsDir() {
			return &unionDir{File: f, fsys: u, name: name}, nil
		}
		return f, nil
	}
	return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
}

func (u unionFS) Stat(name string) (fs.FileInfo, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "stat", Path: name, Err: fs.ErrInvalid}
	}
	for _, l := range u {
		fi, err := fs.Stat(l, name)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		return fi, err
	}
	return nil, &fs.PathError{Op: "stat", Path: name, Err: fs.ErrNotExist}
}

func (u unionFS) ReadDir(name string) ([]fs.DirEntry, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: fs.ErrInvalid}
	}
	var out []fs.DirEntry
	seen := map[string]bool{}
	found := false
	for _, l := range u {
		ents, err := fs.ReadDir(l, name)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		found = true
		for _, e := range ents {
			if !seen[e.Name()] {
				seen[e.Name()] = true
				out = append(out, e)
			}
		}
	}
	if !found {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: fs.ErrNotExist}
	}
	slices.SortFunc(out, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return out, nil
}

// unionDir is a directory opened from the first layer that has it, whose
// entries are those of every layer.
type unionDir struct {
	fs.File
	fsys unionFS
	name string
	dirPager
}

func (d *unionDir) ReadDir(n int) ([]fs.DirEntry, error) {
	return d.page(n, func() ([]fs.DirEntry, error) { return d.fsys.ReadDir(d.name) })
}
