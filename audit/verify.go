package audit

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/countersign/countersign/internal/strictjson"
)

// VerifyOptions configures Verify.
type VerifyOptions struct {
	// Verifiers are the checkpoint verifier keys (required). Give every key
	// the log was signed with when the checkpoint key was rotated.
	Verifiers note.Verifiers
	// Origin, if set, is the origin every checkpoint must have
	// ("countersign/<node>").
	Origin string
	// Partial accepts a log whose first segment starts after seq 0 (the
	// earlier ones were uploaded and removed). Verification then starts
	// from that segment's opening checkpoint: signed, and its frontier
	// must hash to the signed root.
	Partial bool
	// Trusted are checkpoints held outside the log (a monitor's copy, the
	// uploaded one). The log must contain each: same root at that size.
	// This is what detects a log cut short after its last checkpoint
	// (without an outside copy, removing the newest records and
	// checkpoints together leaves a shorter but consistent log).
	Trusted [][]byte
}

// VerifyResult summarizes a verified log.
type VerifyResult struct {
	Origin      string
	Segments    int
	First, Next uint64 // the records verified are seqs First..Next-1
	Checkpoints int    // checkpoints checked (signature, root, consistency)
	Indexes     int    // segment indexes rebuilt from the records and found equal
	Latest      *Checkpoint
	// Uncovered is the number of records after the latest checkpoint:
	// normal for a live log (at most about checkpoint_interval of records),
	// but nothing signed protects them yet.
	Uncovered uint64
	Abandoned []AbandonedSegment
	// Artefacts are what a crash or a full disk leaves at the end of a
	// log, each explained: a torn final line or checkpoint, a segment
	// whose creation failed (no record in it), a seal whose checkpoint was
	// never written. None of them hides or changes a record a checkpoint
	// covers (that is a *VerifyError); the next Open repairs them.
	Artefacts []string
	Warnings  []string
}

// AbandonedSegment is a segment cut off by a failure; its bytes after
// ValidBytes were never acknowledged and are not part of the log.
type AbandonedSegment struct {
	Name         string
	ValidBytes   int64
	IgnoredBytes int64
}

// VerifyError names the first place where the log is wrong: something no
// crash or full disk leaves (those are VerifyResult.Artefacts), so the log
// was altered, truncated or damaged.
type VerifyError struct {
	File string // segment or checkpoints file
	Line int    // 1-based, 0 if not about a line
	Seq  int64  // the seq expected there, -1 if not about a record
	Msg  string
}

func (e *VerifyError) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
	}
	if e.Seq >= 0 {
		fmt.Fprintf(&b, ": seq %d", e.Seq)
	}
	b.WriteString(": ")
	b.WriteString(e.Msg)
	return b.String()
}

// Verify checks a whole log directory (or any fs.FS holding its files):
// every segment file in order, seq continuity across segments, every
// record's JSON and id, time never going back, every checkpoint's
// signature and origin, the tree root recomputed from the records against
// every checkpoint, a consistency proof (tlog.ProveTree/CheckTree) between
// each checkpoint and the next, the seal of every finished segment, and
// abandoned segments exactly as their "recover" record describes them. It
// stops at the first problem and returns a *VerifyError naming it.
func Verify(fsys fs.FS, opts VerifyOptions) (*VerifyResult, error) {
	if opts.Verifiers == nil {
		return nil, errors.New("audit verify: no verifier key")
	}
	segs, err := ListSegments(fsys)
	if err != nil {
		return nil, err
	}
	if len(segs) == 0 {
		return nil, errors.New("audit verify: no segments")
	}
	v := &verifier{fsys: fsys, opts: opts, res: &VerifyResult{Segments: len(segs), First: segs[0].First}}
	for _, t := range opts.Trusted {
		cp, err := OpenCheckpoint(t, opts.Verifiers)
		if err != nil {
			return nil, fmt.Errorf("trusted checkpoint: %w", err)
		}
		v.trusted = append(v.trusted, cp)
	}
	slices.SortFunc(v.trusted, func(a, b *Checkpoint) int { return cmp.Compare(a.Size, b.Size) })
	// Where the log ends. A last segment holding no complete record is a
	// segment whose creation failed (a crash, or a full disk: its
	// checkpoints file may even be empty); Open removes it. The segment
	// before it then is the log's end, whose torn tail and missing seal
	// are a crash's, not a finished segment's. Nothing in the empty one is
	// skipped: its seq and checkpoints are still checked against the rest.
	v.last = len(segs) - 1
	if v.last > 0 && !holdsRecord(fsys, segs[v.last]) {
		v.last--
	}
	for i := range segs {
		if err := v.segment(segs, i); err != nil {
			return v.res, err
		}
	}
	for _, t := range v.trusted[v.ti:] {
		if uint64(t.Size) > v.next {
			return v.res, &VerifyError{File: segs[len(segs)-1].Name, Seq: int64(v.next), Msg: fmt.Sprintf(
				"the log ends at %d records but a trusted checkpoint covers %d: records were removed", v.next, t.Size)}
		}
	}
	v.res.Next = v.next
	if v.res.Latest != nil {
		v.res.Uncovered = v.next - uint64(v.res.Latest.Size)
	}
	return v.res, nil
}

type verifier struct {
	fsys     fs.FS
	opts     VerifyOptions
	res      *VerifyResult
	store    *hashStore
	origin   string
	node     string
	next     uint64
	lastTime time.Time
	prev     *Checkpoint
	// Where the records after the previous checkpoint start, for naming
	// the range an altered record is in.
	rangeFile string
	rangeLine int
	trusted   []*Checkpoint
	ti        int
	last      int // index of the segment that ends the log (see Verify)
	json      strictjson.Checker
	leaf      leafHasher
}

// artefact records what a crash or a full disk left.
func (v *verifier) artefact(format string, args ...any) {
	v.res.Artefacts = append(v.res.Artefacts, fmt.Sprintf(format, args...))
}

// holdsRecord reports whether a segment file has a complete first record.
func holdsRecord(fsys fs.FS, seg SegmentInfo) bool {
	if !seg.HasRecords {
		return false
	}
	_, err := firstRecord(fsys, seg.Name)
	return err == nil
}

func (v *verifier) segment(segs []SegmentInfo, i int) error {
	seg := segs[i]
	if i > v.last {
		return v.failedSegment(seg)
	}
	isLast := i == v.last
	if !seg.HasCheckpoints {
		return &VerifyError{File: seg.Name, Seq: -1, Msg: "missing its checkpoints file " + seg.CheckpointsName}
	}
	if i == 0 {
		v.next = seg.First
		if seg.First != 0 && !v.opts.Partial {
			return &VerifyError{File: seg.Name, Seq: 0, Msg: fmt.Sprintf(
				"the log starts at seq %d: segments before it are missing (if they were uploaded, verify those too, or use -partial)", seg.First)}
		}
	} else if seg.First != v.next {
		msg := fmt.Sprintf("first seq %d, expected %d: records %d..%d are missing (segment dropped or truncated)", seg.First, v.next, v.next, seg.First-1)
		if seg.First < v.next {
			msg = fmt.Sprintf("first seq %d, expected %d: overlaps the previous segment", seg.First, v.next)
		}
		return &VerifyError{File: seg.Name, Line: 1, Seq: int64(v.next), Msg: msg}
	}

	// Is this segment abandoned? The next segment's first record says so.
	validBytes := int64(-1)
	if !isLast && segs[i+1].HasRecords {
		if rec, err := firstRecord(v.fsys, segs[i+1].Name); err == nil && rec.Kind == KindLifecycle && rec.Event == EventRecover && rec.Detail["abandoned"] == seg.Name {
			n, err := strconv.ParseInt(rec.Detail["valid_bytes"], 10, 64)
			if err != nil || n < 0 {
				return &VerifyError{File: segs[i+1].Name, Line: 1, Seq: int64(rec.Seq), Msg: "recover record with invalid valid_bytes"}
			}
			validBytes = n
		}
	}
	abandoned := validBytes >= 0

	entries, cps, err := v.checkpoints(seg, isLast || abandoned)
	if err != nil {
		return err
	}
	if len(cps) == 0 || cps[0].Size != int64(seg.First) {
		return &VerifyError{File: seg.CheckpointsName, Line: 1, Seq: -1, Msg: fmt.Sprintf("does not start with the opening checkpoint (size %d)", seg.First)}
	}
	if i == 0 {
		v.origin = cps[0].Origin
		v.node = strings.TrimPrefix(v.origin, OriginPrefix)
		v.res.Origin = v.origin
		v.store, err = newHashStore(int64(seg.First), entries[0].Frontier)
		if err != nil {
			return &VerifyError{File: seg.CheckpointsName, Line: 1, Seq: -1, Msg: err.Error()}
		}
	}

	if !seg.HasRecords {
		if isLast && len(cps) == 1 {
			v.artefact("%s: missing; a segment whose creation failed (crash or full disk); Open removes it", seg.Name)
			_, err := v.checkCheckpoints(seg, entries, cps, 0, 0)
			return err
		}
		return &VerifyError{File: seg.Name, Seq: int64(seg.First), Msg: "segment file missing"}
	}

	f, err := v.fsys.Open(seg.Name)
	if err != nil {
		return err
	}
	defer f.Close()
	// The opening checkpoint (and any at the same size).
	k, err := v.checkCheckpoints(seg, entries, cps, 0, 0)
	if err != nil {
		return err
	}
	v.rangeFile, v.rangeLine = seg.Name, 1
	var ib *indexBuilder // rebuilds the segment's index, to compare
	if seg.HasIndex {
		ib = newIndexBuilder(seg.First)
	}
	lr := newLineReader(f, 0, 1)
	var last *Record
	lastLine := 0
	var end, ignoredEnd int64
	for {
		line, off, num, complete, err := lr.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return &VerifyError{File: seg.Name, Line: num, Seq: int64(v.next), Msg: err.Error()}
		}
		if abandoned && off >= validBytes {
			ignoredEnd = off + int64(len(line))
			if complete {
				ignoredEnd++
			}
			break
		}
		if !complete {
			if isLast {
				v.artefact("%s:%d: torn final line (%d bytes): a write cut short by a crash or a full disk, never acknowledged; the next start abandons it", seg.Name, num, len(line))
				break
			}
			return &VerifyError{File: seg.Name, Line: num, Seq: int64(v.next), Msg: "incomplete last line in a finished segment: truncated"}
		}
		end = off + int64(len(line)) + 1
		if abandoned && end > validBytes {
			return &VerifyError{File: seg.Name, Line: num, Seq: int64(v.next), Msg: fmt.Sprintf("valid_bytes %d of its recover record is not at a line end", validBytes)}
		}
		if last != nil && last.Kind == KindLifecycle && last.Event == EventSeal {
			return &VerifyError{File: seg.Name, Line: num, Seq: int64(v.next), Msg: "record after the seal record"}
		}
		rec, err := decodeHead(&v.json, line)
		if err != nil {
			return &VerifyError{File: seg.Name, Line: num, Seq: int64(v.next), Msg: err.Error()}
		}
		if rec.seq != v.next {
			return &VerifyError{File: seg.Name, Line: num, Seq: int64(v.next), Msg: fmt.Sprintf("found seq %d: a record was deleted, inserted or moved", rec.seq)}
		}
		if string(rec.node) != v.node {
			return &VerifyError{File: seg.Name, Line: num, Seq: int64(v.next), Msg: fmt.Sprintf("node %q in a log of %q", rec.node, v.origin)}
		}
		if rec.time.Before(v.lastTime) {
			return &VerifyError{File: seg.Name, Line: num, Seq: int64(v.next), Msg: "time earlier than the previous record's"}
		}
		if err := v.store.appendLeaf(v.leaf.hash(line)); err != nil {
			return &VerifyError{File: seg.Name, Line: num, Seq: int64(v.next), Msg: err.Error()}
		}
		if ib != nil {
			ib.add(line, off, rec.seq, rec.time.UnixNano())
		}
		v.next++
		v.lastTime = rec.time
		last, lastLine = rec.rec, num
		if k, err = v.checkCheckpoints(seg, entries, cps, k, end); err != nil {
			return err
		}
		if k > 0 && cps[k-1].Size == int64(v.next) {
			v.rangeFile, v.rangeLine = seg.Name, num+1
		}
	}
	if abandoned {
		if end != validBytes {
			return &VerifyError{File: seg.Name, Seq: int64(v.next), Msg: fmt.Sprintf(
				"abandoned segment has %d bytes of records, its recover record says %d: truncated", end, validBytes)}
		}
		// The ignored tail: whatever follows, up to the zero padding.
		for {
			line, off, _, complete, err := lr.next()
			if err != nil {
				break
			}
			ignoredEnd = off + int64(len(line))
			if complete {
				ignoredEnd++
			}
		}
		v.res.Abandoned = append(v.res.Abandoned, AbandonedSegment{Name: seg.Name, ValidBytes: validBytes, IgnoredBytes: max(0, ignoredEnd-validBytes)})
	} else if at, err := lr.nonZeroAfter(); err != nil || at >= 0 {
		return &VerifyError{File: seg.Name, Seq: -1, Msg: fmt.Sprintf("data after the zero padding at byte %d: not part of the log", at)}
	}
	if k < len(cps) {
		return &VerifyError{File: seg.CheckpointsName, Line: entries[k].line, Seq: int64(v.next), Msg: fmt.Sprintf(
			"checkpoint of %d records, but %s ends at %d: records were removed or the segment truncated", cps[k].Size, seg.Name, v.next)}
	}
	sealed := last != nil && last.Kind == KindLifecycle && last.Event == EventSeal
	switch {
	case !isLast && !abandoned && !sealed:
		return &VerifyError{File: seg.Name, Line: lastLine, Seq: int64(v.next), Msg: "a finished segment must end with a seal record: its end was removed"}
	case sealed && cps[len(cps)-1].Size != int64(v.next):
		if !isLast || abandoned {
			return &VerifyError{File: seg.CheckpointsName, Seq: int64(v.next), Msg: "no checkpoint covers the seal record"}
		}
		v.artefact("%s: sealed but its final checkpoint is missing (a crash or a full disk while closing); Open adds it", seg.Name)
	}
	if isLast && sealed && !abandoned && last.Detail["reason"] != "close" {
		// A rotation seals the segment and then opens the next; a log that
		// ends on one either stopped in between or lost its newest
		// segments, and only a checkpoint kept elsewhere tells which.
		v.res.Warnings = append(v.res.Warnings, fmt.Sprintf(
			"%s, the newest segment, is sealed for rotation (reason %q) and no segment follows it: the writer stopped between sealing it and opening the next, or the newest segments were removed; verify against a checkpoint kept outside the log (-trusted) to tell which",
			seg.Name, last.Detail["reason"]))
	}
	if ib != nil {
		return v.checkIndex(seg, ib, sealed && !abandoned)
	}
	return nil
}

// checkIndex compares a segment's index with the one rebuilt from its
// records: an index that differs could make a query skip records.
func (v *verifier) checkIndex(seg SegmentInfo, ib *indexBuilder, sealed bool) error {
	if !sealed {
		return &VerifyError{File: seg.IndexName, Seq: -1, Msg: "an index of a segment that is not sealed: the log writes none"}
	}
	f, err := v.fsys.Open(seg.IndexName)
	if err != nil {
		return err
	}
	got, err := io.ReadAll(f)
	f.Close()
	if err != nil {
		return err
	}
	if !bytes.Equal(got, ib.finish()) {
		if bytes.HasPrefix(got, []byte(indexMagicOld)) {
			return &VerifyError{File: seg.IndexName, Seq: -1, Msg: "an index in an earlier format (countersign-index-1), which queries ignore: remove it to scan the segment"}
		}
		return &VerifyError{File: seg.IndexName, Seq: -1, Msg: fmt.Sprintf(
			"the index does not describe %s's records (altered or corrupt): queries using it could miss records; remove it to scan the segment", seg.Name)}
	}
	v.res.Indexes++
	return nil
}

// checkpoints reads and signature-checks a segment's checkpoints file.
func (v *verifier) checkpoints(seg SegmentInfo, tornOK bool) ([]checkpointEntry, []*Checkpoint, error) {
	f, err := v.fsys.Open(seg.CheckpointsName)
	if err != nil {
		return nil, nil, err
	}
	entries, torn, err := readCheckpointEntries(f)
	f.Close()
	if err != nil {
		return nil, nil, &VerifyError{File: seg.CheckpointsName, Seq: -1, Msg: err.Error()}
	}
	if torn >= 0 {
		if !tornOK {
			return nil, nil, &VerifyError{File: seg.CheckpointsName, Line: len(entries) + 1, Seq: -1, Msg: "incomplete last line in a finished segment's checkpoints"}
		}
		v.artefact("%s:%d: torn final checkpoint line (crash or full disk), ignored", seg.CheckpointsName, len(entries)+1)
	}
	cps := make([]*Checkpoint, len(entries))
	for j, e := range entries {
		cp, err := OpenCheckpoint([]byte(e.Note), v.opts.Verifiers)
		if err != nil {
			return nil, nil, &VerifyError{File: seg.CheckpointsName, Line: e.line, Seq: -1, Msg: err.Error()}
		}
		want := v.opts.Origin
		if want == "" {
			want = v.origin
		}
		if want != "" && cp.Origin != want {
			return nil, nil, &VerifyError{File: seg.CheckpointsName, Line: e.line, Seq: -1, Msg: fmt.Sprintf("origin %q, expected %q", cp.Origin, want)}
		}
		if cp.Size != e.Size || (j > 0 && cp.Size < cps[j-1].Size) {
			return nil, nil, &VerifyError{File: seg.CheckpointsName, Line: e.line, Seq: -1, Msg: "checkpoint sizes out of order"}
		}
		cps[j] = cp
	}
	return entries, cps, nil
}

// checkCheckpoints checks the checkpoints from cps[k] on whose size is the
// current tree size (and the trusted ones), at byte offset off of the
// segment. It returns the index of the next unchecked checkpoint.
func (v *verifier) checkCheckpoints(seg SegmentInfo, entries []checkpointEntry, cps []*Checkpoint, k int, off int64) (int, error) {
	for ; k < len(cps) && cps[k].Size == int64(v.next); k++ {
		if err := v.checkOne(seg, cps[k], &entries[k], off); err != nil {
			return k, err
		}
	}
	for ; v.ti < len(v.trusted) && v.trusted[v.ti].Size <= int64(v.next); v.ti++ {
		t := v.trusted[v.ti]
		if t.Size != int64(v.next) {
			v.res.Warnings = append(v.res.Warnings, fmt.Sprintf("trusted checkpoint of size %d lies before the records verified here; not checked", t.Size))
			continue
		}
		root, err := v.store.root()
		if err != nil {
			return k, err
		}
		if root != t.Root {
			return k, &VerifyError{File: seg.Name, Seq: int64(v.next), Msg: fmt.Sprintf(
				"the tree of %d records does not match the trusted checkpoint: the log was rewritten", t.Size)}
		}
	}
	return k, nil
}

// checkOne checks one checkpoint against the records so far.
func (v *verifier) checkOne(seg SegmentInfo, cp *Checkpoint, e *checkpointEntry, off int64) error {
	root, err := v.store.root()
	if err != nil {
		return &VerifyError{File: seg.CheckpointsName, Line: e.line, Seq: -1, Msg: err.Error()}
	}
	if root != cp.Root {
		from := uint64(v.res.First)
		if v.prev != nil {
			from = uint64(v.prev.Size)
		}
		if uint64(cp.Size) == from {
			return &VerifyError{File: seg.CheckpointsName, Line: e.line, Seq: -1, Msg: fmt.Sprintf(
				"checkpoint of %d records does not match the records before it", cp.Size)}
		}
		return &VerifyError{File: v.rangeFile, Line: v.rangeLine, Seq: int64(from), Msg: fmt.Sprintf(
			"the tree of %d records does not match the signed checkpoint at %s:%d: one of records %d..%d (from this line on) was altered, inserted or removed",
			cp.Size, seg.CheckpointsName, e.line, from, cp.Size-1)}
	}
	fr, err := v.store.frontier()
	if err != nil {
		return &VerifyError{File: seg.CheckpointsName, Line: e.line, Seq: -1, Msg: err.Error()}
	}
	if !hashesEqual(fr, e.Frontier) || e.Offset != off {
		return &VerifyError{File: seg.CheckpointsName, Line: e.line, Seq: -1, Msg: "the checkpoint entry's frontier or offset is wrong (the file was edited)"}
	}
	if p := v.prev; p != nil && p.Size > 0 && p.Size < cp.Size {
		proof, err := tlog.ProveTree(cp.Size, p.Size, v.store)
		if err == nil {
			err = tlog.CheckTree(proof, cp.Size, cp.Root, p.Size, p.Root)
		}
		if err != nil {
			return &VerifyError{File: seg.CheckpointsName, Line: e.line, Seq: -1, Msg: fmt.Sprintf(
				"checkpoint of %d records is not consistent with the previous one (%d): %v", cp.Size, p.Size, err)}
		}
	}
	// Only what comes after this checkpoint is needed from now on.
	if v.store, err = newHashStore(cp.Size, fr); err != nil {
		return err
	}
	v.prev = cp
	v.res.Checkpoints++
	v.res.Latest = cp
	return nil
}

// firstRecord reads a segment's first record.
func firstRecord(fsys fs.FS, name string) (*Record, error) {
	f, err := fsys.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	line, _, _, complete, err := newLineReader(f, 0, 1).next()
	if err != nil {
		return nil, err
	}
	if !complete {
		return nil, errors.New("incomplete first line")
	}
	return DecodeRecord(line)
}

// failedSegment checks a last segment that holds no record: one whose
// creation, or the write of its first batch, failed (a full disk, a
// crash). The writer creates a segment at the durable tree size, so it
// starts at or after the last checkpoint and at or before the end of the
// previous segment: records of the previous segment after its start
// belong to the batch that failed (written, never acknowledged; Open
// keeps them, the log may over-record). Its checkpoints, if any, are
// only the opening one, which must match the records before it; its
// records file, if any, holds at most a torn first line and padding.
func (v *verifier) failedSegment(seg SegmentInfo) error {
	low := v.res.First
	if v.prev != nil {
		low = uint64(v.prev.Size)
	}
	switch {
	case seg.First > v.next:
		return &VerifyError{File: seg.Name, Seq: int64(v.next), Msg: fmt.Sprintf(
			"first seq %d, expected %d: records %d..%d are missing (segment dropped or truncated)", seg.First, v.next, v.next, seg.First-1)}
	case seg.First < low:
		return &VerifyError{File: seg.Name, Seq: int64(seg.First), Msg: fmt.Sprintf(
			"first seq %d lies before the previous checkpoint (%d records): overlaps the previous segment", seg.First, low)}
	}
	var cps []*Checkpoint
	if seg.HasCheckpoints {
		entries, c, err := v.checkpoints(seg, true)
		if err != nil {
			return err
		}
		cps = c
		for j, cp := range cps {
			if cp.Size != int64(seg.First) {
				return &VerifyError{File: seg.CheckpointsName, Line: entries[j].line, Seq: -1, Msg: fmt.Sprintf(
					"checkpoint of %d records, but %s holds no record: records were removed", cp.Size, seg.Name)}
			}
			root, err := tlog.TreeHash(cp.Size, v.store)
			if err != nil || root != cp.Root {
				return &VerifyError{File: seg.CheckpointsName, Line: entries[j].line, Seq: -1, Msg: fmt.Sprintf(
					"checkpoint of %d records does not match the records before it", cp.Size)}
			}
			v.res.Checkpoints++
		}
	}
	if seg.HasRecords {
		f, err := v.fsys.Open(seg.Name)
		if err != nil {
			return err
		}
		defer f.Close()
		lr := newLineReader(f, 0, 1)
		line, _, _, complete, err := lr.next()
		switch {
		case err == io.EOF:
		case err != nil:
			return &VerifyError{File: seg.Name, Line: 1, Seq: int64(seg.First), Msg: err.Error()}
		case complete:
			return &VerifyError{File: seg.Name, Line: 1, Seq: int64(seg.First), Msg: "invalid record"}
		case len(cps) == 0:
			return &VerifyError{File: seg.Name, Line: 1, Seq: int64(seg.First), Msg: "bytes in a segment that has no checkpoint"}
		default:
			v.artefact("%s:1: torn first line (%d bytes): a write cut short by a crash or a full disk, never acknowledged", seg.Name, len(line))
		}
		if at, err := lr.nonZeroAfter(); err != nil || at >= 0 {
			return &VerifyError{File: seg.Name, Seq: -1, Msg: fmt.Sprintf("data after the zero padding at byte %d: not part of the log", at)}
		}
	}
	v.artefact("%s: holds no record: a segment whose creation failed (crash or full disk); Open removes it", seg.Name)
	if seg.First < v.next {
		v.artefact("records %d..%d at the end of the previous segment were written by the batch that failed, never acknowledged; Open keeps them (the log may hold records of requests that failed, never the reverse)", seg.First, v.next-1)
	}
	return nil
}
