// Package export writes an audit log's finished segments as Parquet, for
// SQL engines (Trino, Athena, Spark, DuckDB), and checks such an export
// against the segments.
//
// Layout: one file per finished segment,
//
//	<out>/node=<node id>/day=<YYYY-MM-DD>/seg-<first seq, 20 digits>.parquet
//
// Hive-partitioned by node and day. day is the UTC day of the segment's
// first record: a segment is one file, tied to one segment file and its
// checkpoints, so a segment that spans midnight (at most
// audit.segment_max_age, an hour by default) lands whole in the day it
// started. A query for day D prunes with day BETWEEN D-1 AND D and filters
// on time. Each row carries seq and the Merkle leaf hash of its record's
// line, which the node's signed checkpoints commit to, so Check (and an
// auditor with an inclusion proof) ties every row to the signed log.
//
// Only finished segments are exported (sealed, or abandoned after a
// failure, up to their valid bytes): the open one is still written and is
// skipped. A file already present is left alone, so running export again
// (from cron) writes only the segments sealed since; Check tells whether
// what is there is right.
package export

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/countersign/countersign/audit"
	"github.com/parquet-go/parquet-go"
)

// Metadata keys written into each file's footer, so that a file found on
// its own says which segment it is.
const (
	MetaSegment = "countersign.segment"
	MetaState   = "countersign.segment_state"
	MetaRecords = "countersign.records"
)

// File is one segment's export.
type File struct {
	// Segment is the segment file's name, Path the export file's path
	// (under the output directory).
	Segment, Path string
	// Records is the number of rows.
	Records int
	// State is the segment's (sealed or abandoned).
	State audit.SegmentState
}

// Result is what Export did.
type Result struct {
	// Written were exported now; Existing were already there (left alone).
	Written, Existing []File
	// Open are the segments skipped because they are not finished.
	Open []string
}

// Path is where a segment's export goes, relative to the output
// directory: node and day partitions, then the segment's first seq.
func Path(node string, day time.Time, first uint64) string {
	return filepath.Join("node="+node, "day="+day.UTC().Format(time.DateOnly),
		strings.TrimSuffix(audit.SegmentName(first), ".jsonl")+".parquet")
}

// batchRows bounds the rows buffered before each Write.
const batchRows = 4096

// errExists stops reading a segment whose export is already there.
var errExists = errors.New("export exists")

// Export writes every finished segment of the log in fsys into out.
func Export(fsys fs.FS, out string) (*Result, error) {
	segs, err := audit.ListSegments(fsys)
	if err != nil {
		return nil, err
	}
	res := &Result{}
	for i, seg := range segs {
		if !seg.HasRecords {
			continue
		}
		f, err := exportSegment(fsys, segs, i, out)
		switch {
		case errors.Is(err, errExists):
			res.Existing = append(res.Existing, *f)
		case err != nil:
			return res, err
		case f == nil:
			res.Open = append(res.Open, seg.Name)
		default:
			res.Written = append(res.Written, *f)
		}
	}
	return res, nil
}

// exportSegment writes one segment to a temporary file and renames it into
// place once the segment turned out finished, so a file at its final path
// is always a whole segment. It returns nil, nil for an open segment.
func exportSegment(fsys fs.FS, segs []audit.SegmentInfo, i int, out string) (*File, error) {
	seg := segs[i]
	var (
		file  *File
		tmp   *os.File
		w     *parquet.GenericWriter[Row]
		batch []Row
	)
	defer func() {
		if tmp != nil { // not renamed: an open segment or an error
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	state, err := audit.ReadSegment(fsys, segs, i, func(line []byte) error {
		rec, err := audit.DecodeRecord(line)
		if err != nil {
			return fmt.Errorf("%s: seq after %d: %w (run countersign audit verify)", seg.Name, seg.First+uint64(file.recordsOrZero()), err)
		}
		if file == nil {
			file = &File{Segment: seg.Name, Path: filepath.Join(out, Path(rec.Node, rec.Time, seg.First))}
			if _, err := os.Stat(file.Path); err == nil {
				return errExists
			}
			if err := os.MkdirAll(filepath.Dir(file.Path), 0o755); err != nil {
				return err
			}
			if tmp, err = os.CreateTemp(filepath.Dir(file.Path), ".seg-*.parquet.tmp"); err != nil {
				return err
			}
			w = parquet.NewGenericWriter[Row](tmp, parquet.Compression(&parquet.Zstd), parquet.KeyValueMetadata(MetaSegment, seg.Name))
		}
		batch = append(batch, NewRow(rec, line))
		file.Records++
		if len(batch) == batchRows {
			if _, err := w.Write(batch); err != nil {
				return err
			}
			batch = batch[:0]
		}
		return nil
	})
	if errors.Is(err, errExists) {
		return file, err
	}
	if err != nil {
		return nil, err
	}
	if state == audit.SegmentOpen && laterSegment(segs, i) {
		return nil, fmt.Errorf("%s is neither sealed nor abandoned, yet later segments exist: it was truncated or damaged (run countersign audit verify)", seg.Name)
	}
	if state == audit.SegmentOpen || file == nil {
		return nil, nil
	}
	file.State = state
	if _, err := w.Write(batch); err != nil {
		return nil, err
	}
	w.SetKeyValueMetadata(MetaState, state.String())
	w.SetKeyValueMetadata(MetaRecords, strconv.Itoa(file.Records))
	if err := w.Close(); err != nil {
		return nil, fmt.Errorf("%s: %w", file.Path, err)
	}
	if err := tmp.Sync(); err != nil {
		return nil, fmt.Errorf("%s: %w", file.Path, err)
	}
	if err := tmp.Close(); err != nil {
		return nil, fmt.Errorf("%s: %w", file.Path, err)
	}
	if err := os.Rename(tmp.Name(), file.Path); err != nil {
		return nil, err
	}
	tmp = nil
	return file, nil
}

func (f *File) recordsOrZero() int {
	if f == nil {
		return 0
	}
	return f.Records
}

// laterSegment reports whether a segment with records follows segs[i]:
// only the newest segment of a log may be open.
func laterSegment(segs []audit.SegmentInfo, i int) bool {
	for _, s := range segs[i+1:] {
		if s.HasRecords {
			return true
		}
	}
	return false
}
