package audit

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"slices"
	"strconv"
	"strings"
)

// A segment is one file of records, seg-<first seq, 20 digits>.jsonl, and
// its checkpoints file, seg-<first seq>.checkpoints. The log is the
// segments in order of first seq. Only the newest segment is ever written;
// every older one is finished: sealed (its last record is a "seal"
// lifecycle record and its last checkpoint covers it) or abandoned after a
// failure (the next segment's first record, "abandon", names it and says
// how many of its bytes are part of the log). Segment files are only ever
// appended to: never rewritten, truncated or renamed.

const (
	segmentPrefix  = "seg-"
	segmentExt     = ".jsonl"
	checkpointsExt = ".checkpoints"
	segmentDigits  = 20
	lockName       = "LOCK"
	readBufferSize = 256 << 10
)

// SegmentName is the file name of the segment whose first record is seq.
func SegmentName(first uint64) string {
	return fmt.Sprintf("%s%0*d%s", segmentPrefix, segmentDigits, first, segmentExt)
}

// CheckpointsName is the file name of that segment's checkpoints.
func CheckpointsName(first uint64) string {
	return fmt.Sprintf("%s%0*d%s", segmentPrefix, segmentDigits, first, checkpointsExt)
}

// parseSegmentFile returns the first seq and the extension of a
// segment's file: segmentExt, checkpointsExt or indexExt.
func parseSegmentFile(name string) (first uint64, ext string, ok bool) {
	rest, found := strings.CutPrefix(name, segmentPrefix)
	if !found || len(rest) < segmentDigits {
		return 0, "", false
	}
	digits, ext := rest[:segmentDigits], rest[segmentDigits:]
	switch ext {
	case segmentExt, checkpointsExt, indexExt:
	default:
		return 0, "", false
	}
	n, err := strconv.ParseUint(digits, 10, 64)
	if err != nil {
		return 0, "", false
	}
	return n, ext, true
}

// SegmentInfo describes one segment.
type SegmentInfo struct {
	// First is the seq of its first record.
	First uint64
	// Name, CheckpointsName and IndexName are its files, relative to the
	// log's dir.
	Name            string
	CheckpointsName string
	IndexName       string
	// HasRecords, HasCheckpoints and HasIndex say whether each file
	// exists (only sealed segments written by one run have an index).
	HasRecords, HasCheckpoints, HasIndex bool
	// Records is the number of records, when known (OnSeal); else 0.
	Records uint64
}

// ListSegments lists the segments of a log directory in order. Every
// segment but the last is finished (never written again) and may be
// uploaded; the last one is finished once the Log is closed.
func ListSegments(fsys fs.FS) ([]SegmentInfo, error) {
	ents, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return nil, err
	}
	byFirst := map[uint64]*SegmentInfo{}
	for _, e := range ents {
		if !e.Type().IsRegular() {
			continue
		}
		first, ext, ok := parseSegmentFile(e.Name())
		if !ok {
			continue
		}
		s := byFirst[first]
		if s == nil {
			s = &SegmentInfo{First: first, Name: SegmentName(first), CheckpointsName: CheckpointsName(first), IndexName: IndexName(first)}
			byFirst[first] = s
		}
		switch ext {
		case checkpointsExt:
			s.HasCheckpoints = true
		case indexExt:
			s.HasIndex = true
		default:
			s.HasRecords = true
		}
	}
	out := make([]SegmentInfo, 0, len(byFirst))
	for _, s := range byFirst {
		if s.HasRecords || s.HasCheckpoints { // an index alone is no segment
			out = append(out, *s)
		}
	}
	slices.SortFunc(out, func(a, b SegmentInfo) int {
		switch {
		case a.First < b.First:
			return -1
		case a.First > b.First:
			return 1
		}
		return 0
	})
	return out, nil
}

// lineReader reads a segment line by line, tracking byte offsets. A
// segment's records may be followed by zero padding (preallocated space,
// see prealloc.go): the content ends at the first NUL byte, which no
// record contains (the encoder escapes control characters).
type lineReader struct {
	br      *bufio.Reader
	off     int64 // offset of the next line
	line    int   // number of the next line, 1-based
	buf     []byte
	padding int64 // offset of the first NUL, once seen; -1 before
	hidden  int64 // a non-NUL byte seen after the padding started; -1 if none
	scanned int64 // padding checked up to here
}

func newLineReader(r io.Reader, off int64, line int) *lineReader {
	return &lineReader{br: bufio.NewReaderSize(r, readBufferSize), off: off, line: line, padding: -1, hidden: -1}
}

// errLineTooLong is a line longer than any record can be.
var errLineTooLong = errors.New("line longer than the maximum record size")

// next returns the next line without its newline, its offset and number,
// and whether it was complete (ended with a newline; only the last line
// of the content can be incomplete). It returns io.EOF after the last
// line. The line is valid until the next call.
func (lr *lineReader) next() (line []byte, off int64, num int, complete bool, err error) {
	off, num = lr.off, lr.line
	if lr.padding >= 0 {
		return nil, off, num, false, io.EOF
	}
	lr.buf = lr.buf[:0]
	for {
		b, rerr := lr.br.ReadSlice('\n')
		if i := bytes.IndexByte(b, 0); i >= 0 {
			lr.buf = append(lr.buf, b[:i]...)
			lr.padding = off + int64(len(lr.buf))
			lr.scanned = lr.padding + int64(len(b)-i)
			for j, c := range b[i:] {
				if c != 0 {
					lr.hidden = lr.padding + int64(j)
					break
				}
			}
			if len(lr.buf) == 0 {
				return nil, off, num, false, io.EOF
			}
			lr.off = lr.padding
			lr.line++
			return lr.buf, off, num, false, nil
		}
		lr.buf = append(lr.buf, b...)
		if rerr == bufio.ErrBufferFull {
			if len(lr.buf) > MaxRecordBytes+1 {
				return nil, off, num, false, errLineTooLong
			}
			continue
		}
		if len(lr.buf) == 0 {
			if rerr == nil {
				rerr = io.EOF
			}
			return nil, off, num, false, rerr
		}
		if rerr != nil && rerr != io.EOF {
			return nil, off, num, false, rerr
		}
		lr.off += int64(len(lr.buf))
		lr.line++
		if lr.buf[len(lr.buf)-1] == '\n' {
			return lr.buf[:len(lr.buf)-1], off, num, true, nil
		}
		return lr.buf, off, num, false, nil
	}
}

// nonZeroAfter returns the offset of the first non-NUL byte after the
// content's padding started, or -1 if the padding is all zeros (or there
// is none). Verify uses it: nothing may hide after the padding.
func (lr *lineReader) nonZeroAfter() (int64, error) {
	if lr.padding < 0 || lr.hidden >= 0 {
		return lr.hidden, nil
	}
	off := lr.scanned
	buf := make([]byte, 64<<10)
	for {
		n, err := lr.br.Read(buf)
		for i, c := range buf[:n] {
			if c != 0 {
				return off + int64(i), nil
			}
		}
		off += int64(n)
		if err == io.EOF {
			return -1, nil
		}
		if err != nil {
			return -1, err
		}
	}
}

// contentEnd finds where a segment's content ends (the first NUL of its
// padding, or its size) by binary search: the content holds no NUL and
// the padding nothing else (verify checks both).
func contentEnd(ra io.ReaderAt, size int64) (int64, error) {
	var b [1]byte
	lo, hi := int64(0), size // the first NUL is in [lo, hi]
	for lo < hi {
		mid := lo + (hi-lo)/2
		if _, err := ra.ReadAt(b[:], mid); err != nil {
			return 0, err
		}
		if b[0] == 0 {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo, nil
}

// validLimits returns, for each segment, how many of its bytes are part
// of the log: -1 (all of it) unless the next segment's first record is a
// "recover" naming it as abandoned, with valid_bytes.
func validLimits(fsys fs.FS, segs []SegmentInfo) []int64 {
	limits := make([]int64, len(segs))
	for i := range segs {
		limits[i] = -1
		if i+1 < len(segs) && segs[i+1].HasRecords {
			rec, err := firstRecord(fsys, segs[i+1].Name)
			if err == nil && rec.Kind == KindLifecycle && rec.Event == EventRecover && rec.Detail["abandoned"] == segs[i].Name {
				if n, err := strconv.ParseInt(rec.Detail["valid_bytes"], 10, 64); err == nil && n >= 0 {
					limits[i] = n
				}
			}
		}
	}
	return limits
}

// eachLine calls fn for every complete line of a segment within limit
// (-1: no limit), stopping early if fn returns errStop.
func eachLine(fsys fs.FS, name string, limit int64, fn func(line []byte, off int64, num int) error) error {
	f, err := fsys.Open(name)
	if err != nil {
		return err
	}
	defer f.Close()
	lr := newLineReader(f, 0, 1)
	for {
		line, off, num, complete, err := lr.next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s:%d: %w", name, num, err)
		}
		if !complete || (limit >= 0 && off+int64(len(line)) >= limit) {
			return nil
		}
		if err := fn(line, off, num); err != nil {
			if err == errStop {
				return nil
			}
			return err
		}
	}
}

// errStop ends eachLine early without error.
var errStop = errors.New("stop")
