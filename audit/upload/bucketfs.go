package upload

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// BucketFS is a read-only fs.FS over the objects under prefix in bucket:
// "." is the prefix, "a/b" the key prefix+"a/b", directories are the
// "/"-delimited common prefixes. It is what audit.Verify, audit.Query and
// audit.Prove need to read an uploaded log: ReadDir lists (ListObjectsV2),
// Open streams an object (GetObject, resumed with a ranged GET if the
// connection breaks), and files support ReadAt (ranged GETs, one cached
// 64 KiB block) for Query's first/last-record probes.
//
// fs.FS has no context: every request uses ctx (and a per-request
// timeout), so cancelling ctx fails the reads in progress. It checks once
// that the prefix can be listed.
func BucketFS(ctx context.Context, client *s3.Client, bucket, prefix string) (fs.FS, error) {
	b := &bucketFS{ctx: ctx, client: client, bucket: bucket, prefix: prefix}
	rctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	_, err := client.ListObjectsV2(rctx, &s3.ListObjectsV2Input{
		Bucket: aws.String(bucket), Prefix: aws.String(prefix), MaxKeys: aws.Int32(1),
	})
	if err != nil {
		return nil, fmt.Errorf("s3://%s/%s: %w", bucket, prefix, err)
	}
	return b, nil
}

type bucketFS struct {
	ctx    context.Context
	client *s3.Client
	bucket string
	prefix string
}

var (
	_ fs.ReadDirFS = (*bucketFS)(nil)
	_ fs.StatFS    = (*bucketFS)(nil)
)

// readBlock is ReadAt's unit of transfer and cache: small enough that a
// binary search's probes cost little, large enough that the last steps of
// one, and a backward scan for a line start, hit the cache.
const readBlock = 64 << 10

// maxResume is how many times one open file resumes a broken download.
const maxResume = 3

func (b *bucketFS) key(name string) string {
	if name == "." {
		return b.prefix
	}
	return b.prefix + name
}

// dirPrefix is the key prefix of the entries of directory name.
func (b *bucketFS) dirPrefix(name string) string {
	if name == "." {
		return b.prefix
	}
	return b.prefix + name + "/"
}

func (b *bucketFS) Open(name string) (fs.File, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrInvalid}
	}
	if name == "." {
		return &dirFile{fsys: b, name: name}, nil
	}
	f := &objectFile{fsys: b, name: name, key: b.key(name)}
	out, err := f.get(-1, -1)
	if isStatus(err, http.StatusNotFound) {
		if ok, derr := b.isDir(name); derr != nil {
			return nil, &fs.PathError{Op: "open", Path: name, Err: derr}
		} else if ok {
			return &dirFile{fsys: b, name: name}, nil
		}
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	f.body = out.Body
	f.size = aws.ToInt64(out.ContentLength)
	f.modTime = modTime(out.LastModified)
	f.version = aws.ToString(out.VersionId)
	f.etag = aws.ToString(out.ETag)
	return f, nil
}

func (b *bucketFS) Stat(name string) (fs.FileInfo, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "stat", Path: name, Err: fs.ErrInvalid}
	}
	if name == "." {
		return dirInfo{name: "."}, nil
	}
	ctx, cancel := context.WithTimeout(b.ctx, opTimeout)
	defer cancel()
	out, err := b.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(b.bucket), Key: aws.String(b.key(name))})
	if isStatus(err, http.StatusNotFound) {
		if ok, derr := b.isDir(name); derr != nil {
			return nil, &fs.PathError{Op: "stat", Path: name, Err: derr}
		} else if ok {
			return dirInfo{name: path.Base(name)}, nil
		}
		return nil, &fs.PathError{Op: "stat", Path: name, Err: fs.ErrNotExist}
	}
	if err != nil {
		return nil, &fs.PathError{Op: "stat", Path: name, Err: err}
	}
	return fileInfo{name: path.Base(name), size: aws.ToInt64(out.ContentLength), modTime: modTime(out.LastModified)}, nil
}

// isDir reports whether any key starts with name's directory prefix.
func (b *bucketFS) isDir(name string) (bool, error) {
	ctx, cancel := context.WithTimeout(b.ctx, opTimeout)
	defer cancel()
	out, err := b.client.ListObjectsV2(ctx, &s3.ListObjectsV2Input{
		Bucket: aws.String(b.bucket), Prefix: aws.String(b.dirPrefix(name)), MaxKeys: aws.Int32(1),
	})
	if err != nil {
		return false, err
	}
	return len(out.Contents) > 0 || len(out.CommonPrefixes) > 0, nil
}

func (b *bucketFS) ReadDir(name string) ([]fs.DirEntry, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: fs.ErrInvalid}
	}
	ents, err := b.list(name)
	if err != nil {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: err}
	}
	if len(ents) == 0 && name != "." {
		// S3 has no empty directories: nothing under it means no such
		// directory ("." is the prefix, which exists even when empty).
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: fs.ErrNotExist}
	}
	return ents, nil
}

// list returns a directory's entries, sorted by name.
func (b *bucketFS) list(name string) ([]fs.DirEntry, error) {
	p := b.dirPrefix(name)
	pages := s3.NewListObjectsV2Paginator(b.client, &s3.ListObjectsV2Input{
		Bucket: aws.String(b.bucket), Prefix: aws.String(p), Delimiter: aws.String("/"),
	})
	byName := map[string]fs.DirEntry{}
	for pages.HasMorePages() {
		ctx, cancel := context.WithTimeout(b.ctx, opTimeout)
		out, err := pages.NextPage(ctx)
		cancel()
		if err != nil {
			return nil, err
		}
		for _, o := range out.Contents {
			n := strings.TrimPrefix(aws.ToString(o.Key), p)
			if !validName(n) {
				continue // a "folder" marker (key ending in "/"), or not a file name
			}
			byName[n] = fs.FileInfoToDirEntry(fileInfo{name: n, size: aws.ToInt64(o.Size), modTime: modTime(o.LastModified)})
		}
		for _, cp := range out.CommonPrefixes {
			n := strings.TrimSuffix(strings.TrimPrefix(aws.ToString(cp.Prefix), p), "/")
			if _, dup := byName[n]; dup || !validName(n) {
				continue // an object and a "directory" of one name: the object wins
			}
			byName[n] = fs.FileInfoToDirEntry(dirInfo{name: n})
		}
	}
	ents := make([]fs.DirEntry, 0, len(byName))
	for _, e := range byName {
		ents = append(ents, e)
	}
	slices.SortFunc(ents, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return ents, nil
}

func validName(n string) bool {
	return n != "" && n != "." && n != ".." && !strings.Contains(n, "/") && fs.ValidPath(n)
}

// modTime truncates to seconds: listings report milliseconds, HEAD and
// GET only seconds, and one object should have one time.
func modTime(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.UTC().Truncate(time.Second)
}

type fileInfo struct {
	name    string
	size    int64
	modTime time.Time
}

func (i fileInfo) Name() string       { return i.name }
func (i fileInfo) Size() int64        { return i.size }
func (i fileInfo) Mode() fs.FileMode  { return 0o444 }
func (i fileInfo) ModTime() time.Time { return i.modTime }
func (i fileInfo) IsDir() bool        { return false }
func (i fileInfo) Sys() any           { return nil }

type dirInfo struct{ name string }

func (i dirInfo) Name() string       { return i.name }
func (i dirInfo) Size() int64        { return 0 }
func (i dirInfo) Mode() fs.FileMode  { return fs.ModeDir | 0o555 }
func (i dirInfo) ModTime() time.Time { return time.Time{} }
func (i dirInfo) IsDir() bool        { return true }
func (i dirInfo) Sys() any           { return nil }

// dirFile is an open directory: its entries are listed on first ReadDir.
type dirFile struct {
	fsys *bucketFS
	name string
	dirPager
}

func (d *dirFile) Stat() (fs.FileInfo, error) { return dirInfo{name: path.Base(d.name)}, nil }
func (d *dirFile) Read([]byte) (int, error) {
	return 0, &fs.PathError{Op: "read", Path: d.name, Err: errors.New("is a directory")}
}
func (d *dirFile) Close() error { return nil }

func (d *dirFile) ReadDir(n int) ([]fs.DirEntry, error) {
	return d.page(n, func() ([]fs.DirEntry, error) {
		ents, err := d.fsys.list(d.name)
		if err != nil {
			return nil, &fs.PathError{Op: "readdir", Path: d.name, Err: err}
		}
		return ents, nil
	})
}

// dirPager is fs.ReadDirFile's paging over entries listed on first use,
// for the directories of bucketFS and unionFS.
type dirPager struct {
	ents   []fs.DirEntry
	listed bool
	off    int
}

// page returns the next n entries (all the rest if n <= 0), listing them
// first if that has not been done.
func (d *dirPager) page(n int, list func() ([]fs.DirEntry, error)) ([]fs.DirEntry, error) {
	if !d.listed {
		ents, err := list()
		if err != nil {
			return nil, err
		}
		d.ents, d.listed = ents, true
	}
	rest := d.ents[d.off:]
	if n <= 0 {
		d.off = len(d.ents)
		return rest, nil
	}
	if len(rest) == 0 {
		return nil, io.EOF
	}
	rest = rest[:min(n, len(rest))]
	d.off += len(rest)
	return rest, nil
}

// objectFile is an open object. Read streams it; ReadAt uses ranged GETs
// pinned to the version (or ETag) that Open saw, so an object replaced
// meanwhile fails the read instead of mixing two objects' bytes.
type objectFile struct {
	fsys          *bucketFS
	name, key     string
	size          int64
	modTime       time.Time
	version, etag string

	body    io.ReadCloser
	pos     int64
	resumed int
	closed  bool

	mu       sync.Mutex // the ReadAt cache (ReadAt may be called concurrently)
	blockOff int64
	block    []byte
}

func (f *objectFile) Stat() (fs.FileInfo, error) {
	return fileInfo{name: path.Base(f.name), size: f.size, modTime: f.modTime}, nil
}

func (f *objectFile) Close() error {
	if f.closed {
		return &fs.PathError{Op: "close", Path: f.name, Err: fs.ErrClosed}
	}
	f.closed = true
	if f.body != nil {
		f.body.Close()
		f.body = nil
	}
	return nil
}

// get issues a GetObject for bytes [start, end] (-1, -1: the whole
// object, with checksum validation by the SDK when the server reports
// one; end -1: to the end).
func (f *objectFile) get(start, end int64) (*s3.GetObjectOutput, error) {
	in := &s3.GetObjectInput{Bucket: aws.String(f.fsys.bucket), Key: aws.String(f.key)}
	switch {
	case start < 0:
		in.ChecksumMode = types.ChecksumModeEnabled
	case end < 0:
		in.Range = aws.String(fmt.Sprintf("bytes=%d-", start))
	default:
		in.Range = aws.String(fmt.Sprintf("bytes=%d-%d", start, end))
	}
	if f.version != "" {
		in.VersionId = aws.String(f.version)
	} else if f.etag != "" {
		in.IfMatch = aws.String(f.etag)
	}
	// The body outlives this call: the timeout is the whole transfer's.
	ctx, cancel := context.WithTimeout(f.fsys.ctx, opTimeout)
	out, err := f.fsys.client.GetObject(ctx, in)
	if err != nil {
		cancel()
		return nil, err
	}
	out.Body = &cancelOnClose{ReadCloser: out.Body, cancel: cancel}
	return out, nil
}

type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (c *cancelOnClose) Close() error {
	err := c.ReadCloser.Close()
	c.cancel()
	return err
}

func (f *objectFile) Read(p []byte) (int, error) {
	if f.closed {
		return 0, &fs.PathError{Op: "read", Path: f.name, Err: fs.ErrClosed}
	}
	for {
		if f.pos >= f.size {
			return 0, io.EOF
		}
		if len(p) == 0 {
			return 0, nil
		}
		if f.body == nil {
			out, err := f.get(f.pos, -1)
			if err != nil {
				return 0, &fs.PathError{Op: "read", Path: f.name, Err: err}
			}
			f.body = out.Body
		}
		n, err := f.body.Read(p)
		f.pos += int64(n)
		switch {
		case err == nil:
			return n, nil
		case err == io.EOF && f.pos == f.size:
			return n, io.EOF
		case err == io.EOF:
			err = io.ErrUnexpectedEOF
		}
		// A broken connection: resume from here with a ranged GET. Any
		// other error (a checksum mismatch found at the end) is final.
		if !resumable(err) || f.resumed >= maxResume {
			return n, &fs.PathError{Op: "read", Path: f.name, Err: err}
		}
		f.resumed++
		f.body.Close()
		f.body = nil
		if n > 0 {
			return n, nil
		}
	}
}

func resumable(err error) bool {
	var ne net.Error
	return errors.Is(err, io.ErrUnexpectedEOF) || errors.As(err, &ne)
}

func (f *objectFile) ReadAt(p []byte, off int64) (int, error) {
	if f.closed {
		return 0, &fs.PathError{Op: "readat", Path: f.name, Err: fs.ErrClosed}
	}
	if off < 0 {
		return 0, &fs.PathError{Op: "readat", Path: f.name, Err: fs.ErrInvalid}
	}
	if off >= f.size {
		return 0, io.EOF
	}
	want := int(min(int64(len(p)), f.size-off))
	var n int
	if want > readBlock {
		b, err := f.rangeBytes(off, off+int64(want)-1)
		if err != nil {
			return 0, err
		}
		n = copy(p, b)
	} else {
		f.mu.Lock()
		for n < want {
			at := off + int64(n)
			blockOff := at - at%readBlock
			if f.block == nil || f.blockOff != blockOff {
				b, err := f.rangeBytes(blockOff, min(blockOff+readBlock, f.size)-1)
				if err != nil {
					f.mu.Unlock()
					return n, err
				}
				f.block, f.blockOff = b, blockOff
			}
			n += copy(p[n:want], f.block[at-blockOff:])
		}
		f.mu.Unlock()
	}
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// rangeBytes reads bytes [start, end] of the object.
func (f *objectFile) rangeBytes(start, end int64) ([]byte, error) {
	out, err := f.get(start, end)
	if err != nil {
		return nil, &fs.PathError{Op: "read", Path: f.name, Err: err}
	}
	defer out.Body.Close()
	b := make([]byte, end-start+1)
	if _, err := io.ReadFull(out.Body, b); err != nil {
		return nil, &fs.PathError{Op: "read", Path: f.name, Err: err}
	}
	return b, nil
}
