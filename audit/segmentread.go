package audit

import (
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"strconv"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// Reading finished segments from outside the package (audit/export).
// Only a finished segment is never written again, so only its copies
// (an export, an upload) can be complete.

// LeafHash is the Merkle leaf hash of a record's line (without its
// newline): what the tree, every checkpoint and every inclusion proof
// commit to for that record.
func LeafHash(line []byte) tlog.Hash { return tlog.RecordHash(line) }

// SegmentState says whether a segment is finished.
type SegmentState int

// The segment states.
const (
	// SegmentOpen is the newest segment of a live log, or of a crashed one
	// before its next start (recovery may still append its seal).
	SegmentOpen SegmentState = iota
	// SegmentSealed ends with its seal record.
	SegmentSealed
	// SegmentAbandoned is named by the next segment's recover record; only
	// its first valid_bytes are part of the log.
	SegmentAbandoned
)

func (s SegmentState) String() string {
	switch s {
	case SegmentSealed:
		return "sealed"
	case SegmentAbandoned:
		return "abandoned"
	}
	return "open"
}

// ReadSegment calls fn with every line (without newline, valid only
// during the call) of segs[i] that is part of the log, in order, and
// returns the segment's state. segs is the whole list from ListSegments:
// whether segs[i] was abandoned is said by segs[i+1]. A torn last line is
// not part of the log and is not passed.
func ReadSegment(fsys fs.FS, segs []SegmentInfo, i int, fn func(line []byte) error) (SegmentState, error) {
	seg := segs[i]
	if !seg.HasRecords {
		return SegmentOpen, fmt.Errorf("%s: no records file", seg.Name)
	}
	limit := int64(-1)
	if i+1 < len(segs) && segs[i+1].HasRecords {
		rec, err := firstRecord(fsys, segs[i+1].Name)
		if err == nil && rec.Kind == KindLifecycle && rec.Event == EventRecover && rec.Detail["abandoned"] == seg.Name {
			if n, err := strconv.ParseInt(rec.Detail["valid_bytes"], 10, 64); err == nil && n >= 0 {
				limit = n
			}
		}
	}
	var last []byte
	err := eachLine(fsys, seg.Name, limit, func(line []byte, _ int64, _ int) error {
		last = append(last[:0], line...)
		return fn(line)
	})
	switch {
	case err != nil:
		return SegmentOpen, err
	case limit >= 0:
		return SegmentAbandoned, nil
	case isSeal(last):
		return SegmentSealed, nil
	}
	return SegmentOpen, nil
}

// isSeal says whether a line is a seal record: the cheap test first (the
// field order is fixed), then the decoder, so that a reason or key that
// merely contains the words does not count.
func isSeal(line []byte) bool {
	if !bytes.Contains(line, []byte(`,"kind":"lifecycle","event":"seal",`)) {
		return false
	}
	rec, err := DecodeRecord(line)
	return err == nil && rec.Kind == KindLifecycle && rec.Event == EventSeal
}

// ReadCheckpoints parses a checkpoints file and checks every checkpoint's
// signatures against verifiers, in file order. A torn last line (a crash
// while writing it) is skipped; anything else wrong is an error naming the
// line.
func ReadCheckpoints(r io.Reader, verifiers note.Verifiers) ([]*Checkpoint, error) {
	entries, _, err := readCheckpointEntries(r)
	if err != nil {
		return nil, err
	}
	out := make([]*Checkpoint, 0, len(entries))
	for _, e := range entries {
		cp, err := OpenCheckpoint([]byte(e.Note), verifiers)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", e.line, err)
		}
		out = append(out, cp)
	}
	return out, nil
}
