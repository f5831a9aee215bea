package policy

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/open-policy-agent/opa/v1/loader"
)

// snapshot is one read of every file under the configured paths that the
// loader would read, _test.rego files included, held in memory. The change
// check hashes these bytes and the policy is compiled (and its tests run)
// from these same bytes: a file rewritten between the check and the
// compile cannot give a policy other than the one that was hashed.
type snapshot struct {
	paths   []string
	entries map[string]*snapEntry // by filepath.Clean'd name
	hash    string
	tests   bool // some file is a *_test.rego
}

type snapEntry struct {
	info     fs.FileInfo
	data     []byte        // files
	children []fs.DirEntry // directories, sorted by name
}

// readSnapshot reads paths (loader prefixes allowed: "a.b:/dir") once.
// Hidden entries below a path are left out, as Load leaves them out; so are
// files inside directories that the loader would ignore (unknown
// extensions), so an editor's swap file does not count as a change.
func readSnapshot(paths []string, readFile func(string) ([]byte, error)) (*snapshot, error) {
	s := &snapshot{paths: paths, entries: map[string]*snapEntry{}}
	h := sha256.New()
	for _, p := range paths {
		_, p = loader.SplitPrefix(p)
		p = filepath.Clean(p)
		fmt.Fprintf(h, "path\x00%s\x00", p)
		if err := s.read(h, readFile, p, 0); err != nil {
			return nil, err
		}
	}
	s.hash = hex.EncodeToString(h.Sum(nil)[:8])
	return s, nil
}

func (s *snapshot) read(h io.Writer, readFile func(string) ([]byte, error), path string, depth int) error {
	info, err := os.Stat(path) // follows symlinks, as the loader does
	if err != nil {
		return err
	}
	if skipHidden(path, info, depth) {
		return nil
	}
	if !info.IsDir() {
		if depth > 0 && !policyFile(info.Name()) {
			return nil // the loader ignores unknown files inside directories
		}
		data, err := readFile(path)
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "file\x00%s\x00%d\x00", path, len(data))
		h.Write(data)
		s.entries[path] = &snapEntry{info: snapInfo{name: info.Name(), size: int64(len(data)), mode: info.Mode().Perm(), mod: info.ModTime()}, data: data}
		s.tests = s.tests || isTestFile(info.Name())
		return nil
	}
	des, err := os.ReadDir(path)
	if err != nil {
		return err
	}
	dir := &snapEntry{info: snapInfo{name: info.Name(), mode: fs.ModeDir | info.Mode().Perm(), mod: info.ModTime()}}
	s.entries[path] = dir
	for _, de := range des {
		child := filepath.Join(path, de.Name())
		if err := s.read(h, readFile, child, depth+1); err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				// Gone since the listing: a deployment tool's temporary
				// file renamed into place, or a file removed. Not part of
				// this snapshot; the settle rounds read the directory
				// again, so a change is still seen whole.
				continue
			}
			return err
		}
		if e, ok := s.entries[child]; ok {
			dir.children = append(dir.children, fs.FileInfoToDirEntry(e.info))
		}
	}
	slices.SortFunc(dir.children, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return nil
}

// fsys serves the snapshot to OPA's loader under the same names the paths
// have on disk (absolute or relative), so errors name the real files.
func (s *snapshot) fsys() fs.FS { return snapFS{s} }

type snapFS struct{ s *snapshot }

func (f snapFS) lookup(op, name string) (*snapEntry, error) {
	e, ok := f.s.entries[filepath.Clean(name)]
	if !ok {
		return nil, &fs.PathError{Op: op, Path: name, Err: fs.ErrNotExist}
	}
	return e, nil
}

func (f snapFS) Open(name string) (fs.File, error) {
	e, err := f.lookup("open", name)
	if err != nil {
		return nil, err
	}
	return &snapFile{e: e, r: bytes.NewReader(e.data)}, nil
}

func (f snapFS) Stat(name string) (fs.FileInfo, error) {
	e, err := f.lookup("stat", name)
	if err != nil {
		return nil, err
	}
	return e.info, nil
}

func (f snapFS) ReadFile(name string) ([]byte, error) {
	e, err := f.lookup("read", name)
	if err != nil {
		return nil, err
	}
	if e.info.IsDir() {
		return nil, &fs.PathError{Op: "read", Path: name, Err: fs.ErrInvalid}
	}
	return slices.Clone(e.data), nil
}

func (f snapFS) ReadDir(name string) ([]fs.DirEntry, error) {
	e, err := f.lookup("readdir", name)
	if err != nil {
		return nil, err
	}
	if !e.info.IsDir() {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: fs.ErrInvalid}
	}
	return slices.Clone(e.children), nil
}

type snapFile struct {
	e *snapEntry
	r *bytes.Reader
}

func (f *snapFile) Stat() (fs.FileInfo, error) { return f.e.info, nil }
func (f *snapFile) Read(p []byte) (int, error) { return f.r.Read(p) }
func (f *snapFile) Close() error               { return nil }
func (f *snapFile) ReadDir(int) ([]fs.DirEntry, error) {
	return slices.Clone(f.e.children), nil
}

type snapInfo struct {
	name string
	size int64
	mode fs.FileMode
	mod  time.Time
}

func (i snapInfo) Name() string       { return i.name }
func (i snapInfo) Size() int64        { return i.size }
func (i snapInfo) Mode() fs.FileMode  { return i.mode }
func (i snapInfo) ModTime() time.Time { return i.mod }
func (i snapInfo) IsDir() bool        { return i.mode.IsDir() }
func (i snapInfo) Sys() any           { return nil }

func policyFile(name string) bool {
	switch filepath.Ext(name) {
	case ".rego", ".json", ".yaml", ".yml":
		return true
	}
	return strings.HasSuffix(name, ".tar.gz")
}
