package audit

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"time"

	"github.com/countersign/countersign/internal/jsonstr"
)

// Filter selects records; every set field must match. The zero Filter
// matches every record.
type Filter struct {
	// Principal is the principal id (principal.id) exactly.
	Principal string
	// Bucket is the bucket exactly.
	Bucket string
	// Key is the object key exactly; KeyPrefix a prefix of it (list
	// records, whose key is empty, match neither).
	Key       string
	KeyPrefix string
	// Since and Until bound the record time: Since <= time < Until.
	Since, Until time.Time
	// Decision is the decision exactly.
	Decision Decision
	// Kind is the record kind exactly.
	Kind Kind
}

// Query calls fn with every record of the log in fsys that matches f, in
// seq order, with its line (valid only during the call). It answers "every
// object principal P touched between T1 and T2" (Principal, Since, Until)
// and "every principal that touched key K" (Key).
//
// It is a streaming scan, made fast by what the format guarantees:
// record times never go back, so segments wholly outside [Since, Until)
// are skipped after reading their first and last line, and the scan stops
// at the first record at or after Until; and field order is fixed, so a
// line is only decoded (encoding/json) if it contains the encoded filter
// values at their place (a byte search). Abandoned tails are not part of
// the log and are skipped. No index is kept: on this machine a scan runs
// at about a million records a second (see the package benchmarks).
func Query(ctx context.Context, fsys fs.FS, f Filter, fn func(rec *Record, line []byte) error) error {
	return QueryWith(ctx, fsys, f, QueryOptions{}, fn)
}

// QueryOptions tune QueryWith.
type QueryOptions struct {
	// NoIndex scans every segment even where an index could skip blocks
	// (to measure the index, or to distrust it).
	NoIndex bool
	// Stats, if set, receives what the query read.
	Stats *QueryStats
}

// QueryStats says what a query read.
type QueryStats struct {
	Segments        int   // segments with records
	Indexed         int   // of them, read through their index
	Blocks          int   // index blocks of those segments
	BlocksRead      int   // of them, read because they could match
	BytesRead       int64 // segment bytes read, scans and blocks
	SegmentsSkipped int   // skipped whole by their first and last time
	// Unreadable counts lines that could have matched but are not
	// records (damage verify reports): the query shows what is readable.
	Unreadable int
}

// QueryWith is Query with options.
//
// A sealed segment with an index (index.go) is read only in the blocks
// that can hold a match: the index's time range, principal and bucket
// sets, key range and key filter decide, and only those byte ranges are
// read. Segments without an index, or whose index does not describe
// them, are scanned.
func QueryWith(ctx context.Context, fsys fs.FS, f Filter, opts QueryOptions, fn func(rec *Record, line []byte) error) error {
	segs, err := ListSegments(fsys)
	if err != nil {
		return err
	}
	limits := validLimits(fsys, segs)
	needles := f.needles()
	bq := f.blockQuery()
	st := opts.Stats
	if st == nil {
		st = &QueryStats{}
	}
	done := false
	each := func(line []byte, _ int64, _ int) error {
		st.BytesRead += int64(len(line)) + 1
		if !f.Until.IsZero() {
			if t, ok := lineTime(line); ok && !t.Before(f.Until) {
				done = true
				return errStop
			}
		}
		for _, n := range needles {
			if !bytes.Contains(line, n) {
				return nil
			}
		}
		rec, err := DecodeRecord(line)
		if err != nil {
			st.Unreadable++ // verify reports it; a query shows what is readable
			return nil
		}
		if !f.match(rec) {
			return nil
		}
		return fn(rec, line)
	}
	for i, seg := range segs {
		if !seg.HasRecords {
			continue
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		st.Segments++
		if !opts.NoIndex && seg.HasIndex && limits[i] < 0 && bq.prunes() {
			if used, err := queryIndexed(fsys, seg, &bq, st, each); used || err != nil {
				if err != nil || done {
					return err
				}
				continue
			}
		}
		if !f.Since.IsZero() || !f.Until.IsZero() {
			first, last, ok := segmentTimes(fsys, seg.Name)
			if ok && !f.Until.IsZero() && !first.Before(f.Until) {
				return nil // this and every later segment is too late
			}
			if ok && !f.Since.IsZero() && last.Before(f.Since) {
				st.SegmentsSkipped++
				continue
			}
		}
		if err := eachLine(fsys, seg.Name, limits[i], each); err != nil || done {
			return err
		}
	}
	return nil
}

// queryIndexed reads the blocks of seg that its index says can match,
// calling each for their lines. used is false when the index cannot be
// used (unreadable, not this segment's, a file without ranged reads): the
// caller then scans.
func queryIndexed(fsys fs.FS, seg SegmentInfo, q *blockQuery, st *QueryStats, each func([]byte, int64, int) error) (used bool, err error) {
	idx, err := readIndex(fsys, seg.First)
	if err != nil || idx == nil || idx.first != seg.First {
		return false, nil
	}
	f, err := fsys.Open(seg.Name)
	if err != nil {
		return false, nil
	}
	defer f.Close()
	fi, err := f.Stat()
	ra, ok := f.(io.ReaderAt)
	if err != nil || !ok || fi.Size() != idx.size {
		return false, nil
	}
	var n uint64
	for i := range idx.blocks {
		n += idx.blocks[i].records
	}
	if n != idx.records {
		return false, nil
	}
	blocks := idx.blocks
	st.Indexed++
	st.Blocks += len(blocks)
	var br *bufio.Reader
	for i := 0; i < len(blocks); {
		if !q.mayMatch(&blocks[i]) {
			i++
			continue
		}
		// A run of blocks that may match: one read.
		j := i + 1
		for j < len(blocks) && q.mayMatch(&blocks[j]) {
			j++
		}
		st.BlocksRead += j - i
		start, end := blocks[i].offset, blocks[j-1].offset+blocks[j-1].length
		sr := io.NewSectionReader(ra, start, end-start)
		if br == nil {
			br = bufio.NewReaderSize(sr, 64<<10)
		} else {
			br.Reset(sr)
		}
		lr := &lineReader{br: br, off: start, padding: -1, hidden: -1}
		for {
			line, off, num, complete, rerr := lr.next()
			if rerr == io.EOF {
				break
			}
			if rerr != nil {
				return true, fmt.Errorf("%s: %w", seg.Name, rerr)
			}
			if !complete {
				break
			}
			if err := each(line, off, num); err != nil {
				if err == errStop {
					return true, nil
				}
				return true, err
			}
		}
		i = j
	}
	return true, nil
}

// needles are byte strings a matching line must contain, as the encoder
// writes them (field name, encoded value, and the neighbour that makes the
// match exact where the order allows).
func (f *Filter) needles() [][]byte {
	var out [][]byte
	if f.Principal != "" {
		b := append([]byte(`,"id":`), jsonstr.Append(nil, f.Principal)...)
		out = append(out, append(b, `,"groups":`...))
	}
	if f.Bucket != "" {
		b := append([]byte(`,"bucket":`), jsonstr.Append(nil, f.Bucket)...)
		out = append(out, append(b, ','))
	}
	if f.Key != "" {
		b := append([]byte(`,"key":`), jsonstr.Append(nil, f.Key)...)
		out = append(out, append(b, ','))
	} else if f.KeyPrefix != "" {
		out = append(out, jsonstr.AppendBody([]byte(`,"key":"`), f.KeyPrefix))
	}
	if f.Decision != "" {
		out = append(out, jsonstr.Append([]byte(`,"decision":`), string(f.Decision)))
	}
	if f.Kind != "" {
		out = append(out, jsonstr.Append([]byte(`,"kind":`), string(f.Kind)))
	}
	return out
}

func (f *Filter) match(r *Record) bool {
	switch {
	case f.Principal != "" && (r.Principal == nil || r.Principal.ID != f.Principal),
		f.Bucket != "" && r.Bucket != f.Bucket,
		f.Key != "" && r.Key != f.Key,
		f.KeyPrefix != "" && (r.Key == "" || !strings.HasPrefix(r.Key, f.KeyPrefix)),
		f.Decision != "" && r.Decision != f.Decision,
		f.Kind != "" && r.Kind != f.Kind,
		!f.Since.IsZero() && r.Time.Before(f.Since),
		!f.Until.IsZero() && !r.Time.Before(f.Until):
		return false
	}
	return true
}

// lineTime reads a record's time from its fixed-position head without
// decoding the line.
func lineTime(line []byte) (time.Time, bool) {
	const key = `,"time":"`
	head := line[:min(len(line), 160)]
	i := bytes.Index(head, []byte(key))
	if i < 0 {
		return time.Time{}, false
	}
	rest := head[i+len(key):]
	j := bytes.IndexByte(rest, '"')
	if j < 0 {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339Nano, string(rest[:j]))
	return t, err == nil
}

// segmentTimes returns the times of a segment's first and last complete
// records.
func segmentTimes(fsys fs.FS, name string) (first, last time.Time, ok bool) {
	f, err := fsys.Open(name)
	if err != nil {
		return first, last, false
	}
	defer f.Close()
	line, _, _, complete, err := newLineReader(f, 0, 1).next()
	if err != nil || !complete {
		return first, last, false
	}
	if first, ok = lineTime(line); !ok {
		return first, last, false
	}
	ra, isRA := f.(interface {
		ReadAt([]byte, int64) (int, error)
	})
	fi, err := f.Stat()
	if !isRA || err != nil {
		return first, last, false
	}
	// The last complete line: past the content's end (padding) and any
	// torn tail, back to the last newline.
	end, err := contentEnd(ra, fi.Size())
	if err != nil {
		return first, last, false
	}
	var b [1]byte
	for end > 0 {
		if _, err := ra.ReadAt(b[:], end-1); err != nil {
			return first, last, false
		}
		if b[0] == '\n' {
			break
		}
		end--
		if fi.Size()-end > MaxRecordBytes {
			return first, last, false
		}
	}
	lb, err := lineBefore(ra, end)
	if err != nil {
		return first, last, false
	}
	last, ok = lineTime(lb)
	return first, last, ok
}
