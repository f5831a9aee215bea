package export

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/countersign/countersign/audit"
	"github.com/parquet-go/parquet-go"
)

// Problem is one way an export differs from its log.
type Problem struct {
	// File is the export file (or the one that should be there).
	File string
	// Seq is the row's seq; -1 when the problem is the file's.
	Seq int64
	Msg string
}

func (p Problem) String() string {
	if p.Seq < 0 {
		return p.File + ": " + p.Msg
	}
	return fmt.Sprintf("%s: seq %d: %s", p.File, p.Seq, p.Msg)
}

// CheckResult is what Check found.
type CheckResult struct {
	// Files and Rows were checked and match; Problems are the rest.
	Files, Rows int
	// Open segments have no export (and must not have one).
	Open []string
	// Earlier are files of segments before the log's first (uploaded and
	// removed from the directory): not checked, not extra.
	Earlier  []string
	Problems []Problem
}

// maxProblems bounds the list: past it, the export is wrong anyway.
const maxProblems = 100

// Check compares the export in out with the log in fsys: every finished
// segment has its file, and the file holds exactly one row per record of
// the segment, with that record's seq, the leaf hash of its line and every
// column as NewRow makes it from the record; no row is missing or extra,
// and no other file is in the log's node partitions. It does not verify the
// log itself (audit.Verify does: run both).
func Check(fsys fs.FS, out string) (*CheckResult, error) {
	segs, err := audit.ListSegments(fsys)
	if err != nil {
		return nil, err
	}
	res := &CheckResult{}
	add := func(p Problem) {
		if len(res.Problems) < maxProblems {
			res.Problems = append(res.Problems, p)
		}
	}
	expected := map[string]bool{} // export paths of finished segments
	nodes := map[string]bool{}
	var first uint64
	if len(segs) > 0 {
		first = segs[0].First
	}
	for i, seg := range segs {
		if !seg.HasRecords {
			continue
		}
		var rows []Row
		state, err := audit.ReadSegment(fsys, segs, i, func(line []byte) error {
			rec, err := audit.DecodeRecord(line)
			if err != nil {
				return fmt.Errorf("%s: %w (run countersign audit verify)", seg.Name, err)
			}
			rows = append(rows, NewRow(rec, line))
			return nil
		})
		if err != nil {
			return res, err
		}
		if len(rows) == 0 {
			continue
		}
		path := filepath.Join(out, Path(rows[0].Node, rows[0].Time, seg.First))
		nodes[rows[0].Node] = true
		if state == audit.SegmentOpen && laterSegment(segs, i) {
			return res, fmt.Errorf("%s is neither sealed nor abandoned, yet later segments exist: it was truncated or damaged (run countersign audit verify)", seg.Name)
		}
		if state == audit.SegmentOpen {
			res.Open = append(res.Open, seg.Name)
			continue // a file at its path is reported as extra below
		}
		expected[path] = true
		before := len(res.Problems)
		checkFile(path, rows, add)
		if len(res.Problems) == before {
			res.Files++
			res.Rows += len(rows)
		}
	}
	for node := range nodes {
		root := filepath.Join(out, "node="+node)
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !d.Type().IsRegular() || !strings.HasSuffix(path, ".parquet") || expected[path] {
				return nil
			}
			if n, ok := fileFirst(d.Name()); ok && n < first {
				res.Earlier = append(res.Earlier, path)
				return nil
			}
			add(Problem{File: path, Seq: -1, Msg: "extra file: no finished segment of this log exports to it"})
			return nil
		})
		if err != nil && !os.IsNotExist(err) {
			return res, err
		}
	}
	return res, nil
}

// checkFile compares one file's rows with the segment's.
func checkFile(path string, want []Row, add func(Problem)) {
	got, err := parquet.ReadFile[Row](path)
	if err != nil {
		if os.IsNotExist(err) {
			add(Problem{File: path, Seq: -1, Msg: fmt.Sprintf("missing: the segment's %d records (seq %d..%d) are not exported (run countersign audit export)", len(want), want[0].Seq, want[len(want)-1].Seq)})
		} else {
			add(Problem{File: path, Seq: -1, Msg: "unreadable: " + err.Error()})
		}
		return
	}
	bySeq := make(map[int64]int, len(got))
	for i := range got {
		if _, dup := bySeq[got[i].Seq]; dup {
			add(Problem{File: path, Seq: got[i].Seq, Msg: "extra row: the seq appears more than once"})
			continue
		}
		bySeq[got[i].Seq] = i
	}
	for i := range want {
		w := &want[i]
		j, ok := bySeq[w.Seq]
		if !ok {
			add(Problem{File: path, Seq: w.Seq, Msg: "missing row: the record with this seq has no row"})
			continue
		}
		delete(bySeq, w.Seq)
		g := &got[j]
		if g.LeafHash != w.LeafHash {
			add(Problem{File: path, Seq: w.Seq, Msg: fmt.Sprintf("leaf_hash %s, the record's is %s", g.LeafHash, w.LeafHash)})
			continue
		}
		if col := diffColumn(g, w); col != "" {
			add(Problem{File: path, Seq: w.Seq, Msg: fmt.Sprintf("column %s differs from the record (leaf hash %s)", col, w.LeafHash)})
		}
	}
	extra := make([]int64, 0, len(bySeq))
	for seq := range bySeq {
		extra = append(extra, seq)
	}
	slices.Sort(extra)
	for _, seq := range extra {
		add(Problem{File: path, Seq: seq, Msg: "extra row: no record of the segment has this seq"})
	}
}

// diffColumn names the first column in which two rows differ, "" if none.
// Times compare as instants; a NULL list or map differs from an empty one.
func diffColumn(a, b *Row) string {
	va, vb := reflect.ValueOf(a).Elem(), reflect.ValueOf(b).Elem()
	t := va.Type()
	for i := range t.NumField() {
		fa, fb := va.Field(i), vb.Field(i)
		var same bool
		if ta, ok := fa.Interface().(time.Time); ok {
			same = ta.Equal(fb.Interface().(time.Time))
		} else {
			same = reflect.DeepEqual(fa.Interface(), fb.Interface())
		}
		if !same {
			name, _, _ := strings.Cut(t.Field(i).Tag.Get("parquet"), ",")
			return name
		}
	}
	return ""
}

// fileFirst is the first seq in an export file's name.
func fileFirst(name string) (uint64, bool) {
	digits, ok := strings.CutPrefix(strings.TrimSuffix(name, ".parquet"), "seg-")
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseUint(digits, 10, 64)
	return n, err == nil
}
