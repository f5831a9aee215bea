package audit

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/mod/sumdb/tlog"
)

// Startup recovery. Segment files are append-only: countersign never
// truncates, rewrites or renames one, not even to repair a crash. What a
// crash can leave, and what Open does about it:
//
//   - A clean tail (every line complete and valid): the records are kept
//     (including any that were written but never acknowledged: the log may
//     over-record, never under-record), made durable with fdatasync, and
//     the segment is sealed by appending a "seal" record and a checkpoint.
//   - A torn tail (a final line without newline, or a final line that does
//     not parse — the write of a batch that was never acknowledged): the
//     segment is abandoned as it is. The new segment's first record is
//     "recover" with detail abandoned=<segment>, valid_bytes=<end of the
//     last good line>; verify reads that segment only up to valid_bytes and
//     reports the torn bytes as ignored. The torn bytes stay on disk for
//     inspection. (Truncating them would be simpler for readers but would
//     make "segments are never truncated" untrue, and a torn tail is
//     indistinguishable from a tampered one without this explicit,
//     signed-over statement.)
//   - A segment with no complete record at all (the process died while
//     creating it, or right after): its files hold nothing that was ever
//     acknowledged, so they are removed and the previous segment is
//     examined instead. This is the only removal the log ever does (the
//     writer also removes such a segment when its creation fails, and
//     before Close returns while the log is unavailable). Verify accepts
//     such a segment at the end of the log by the same rule.
//   - Anything else — an invalid line followed by more lines, a segment
//     shorter than its own last checkpoint, seqs out of order — is damage or
//     tampering, not a crash: Open refuses, naming the file and line, and
//     leaves everything as it is for "countersign audit verify".
//
// Startup reads only the newest segment's checkpoints file and the records
// after its last checkpoint (whose frontier restores the tree, checked
// against its signed root): about one checkpoint interval of records,
// whatever the size of the log.

// scanState is what startup learned about the newest segment.
type scanState struct {
	empty      bool // no record in this segment: remove it, look at the previous one
	origin     string
	signer     string // key of its last checkpoint, "name+hash"
	cpSize     uint64 // tree size of its last checkpoint
	tree       frontier
	validBytes int64 // end of the last good line
	torn       bool  // bytes after validBytes in the segment, or a torn checkpoints line
	last       *Record
}

// recover brings the log to a state where the writer can start: a fresh
// segment, opened with a "start" record.
func (l *Log) recover() error {
	fsys := os.DirFS(l.cfg.Dir)
	for {
		segs, err := ListSegments(fsys)
		if err != nil {
			return fmt.Errorf("audit.dir: %w", err)
		}
		if len(segs) == 0 {
			return l.startNew()
		}
		last := segs[len(segs)-1]
		st, err := l.scanLast(fsys, last)
		if err != nil {
			return fmt.Errorf("audit: %s: %w; the log is left untouched: run \"countersign audit verify -dir %s\"", last.Name, err, l.cfg.Dir)
		}
		if !st.empty {
			return l.resume(last, st)
		}
		for _, name := range []string{last.Name, last.CheckpointsName} {
			if err := os.Remove(filepath.Join(l.cfg.Dir, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("audit: removing empty segment: %w", err)
			}
		}
		l.log.Warn("audit: removed a segment that holds no record (crash while it was being created)", "segment", last.Name)
	}
}

// startNew creates a new log.
func (l *Log) startNew() error {
	node := l.cfg.NodeID
	if node == "" {
		var err error
		if node, err = defaultNodeID(); err != nil {
			return err
		}
	}
	l.node, l.origin = node, OriginPrefix+node
	return l.openFresh("new", nil)
}

// openFresh creates the segment at the current tree size and writes its
// first records: recover (if any), checkpoint_key (if changed), start.
func (l *Log) openFresh(previous string, keyChange *Record) error {
	w := &l.w
	seg, err := l.createSegment(w.tree.n)
	if err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	l.setSegment(seg)
	var recs []*Record
	if w.recovery != nil {
		recs = append(recs, l.recoverRecord())
	}
	if keyChange != nil {
		recs = append(recs, keyChange)
	}
	recs = append(recs, &Record{Kind: KindLifecycle, Event: EventStart, Detail: map[string]string{"previous": previous}})
	if err := l.commitOwn(recs...); err != nil {
		return err
	}
	if err := l.checkpoint(); err != nil {
		return err
	}
	w.recovery = nil
	return nil
}

// resume continues a log whose newest segment is last.
func (l *Log) resume(last SegmentInfo, st *scanState) error {
	node := strings.TrimPrefix(st.origin, OriginPrefix)
	if l.cfg.NodeID != "" && l.cfg.NodeID != node {
		return fmt.Errorf("audit.node_id is %q but the log in %s belongs to node %q (origin %q); a log keeps its node id", l.cfg.NodeID, l.cfg.Dir, node, st.origin)
	}
	l.node, l.origin = node, st.origin
	w := &l.w
	w.tree = st.tree
	w.lastTime = st.last.Time
	w.cpSize = st.cpSize

	segPath := filepath.Join(l.cfg.Dir, last.Name)
	// What was read must be durable before anything is built on it: after
	// kill -9 the last records may still be only in the page cache.
	f, err := l.openFile(segPath, os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("audit: syncing %s: %w", last.Name, err)
	}

	previous := "unclean"
	sealed := st.last.Kind == KindLifecycle && st.last.Event == EventSeal
	if sealed && st.last.Detail["reason"] == "close" {
		previous = "clean"
	}
	records := w.tree.n - last.First
	if st.torn {
		f.Close()
		w.recovery = &recoveryInfo{
			reason:     "torn tail found at startup (a batch that was never acknowledged)",
			abandoned:  last.Name,
			validBytes: st.validBytes,
			records:    records,
		}
		l.log.Warn("audit: abandoning a segment with a torn tail", "segment", last.Name, "valid_bytes", st.validBytes)
	} else {
		chk, err := l.openFile(filepath.Join(l.cfg.Dir, last.CheckpointsName), os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			f.Close()
			return fmt.Errorf("audit: %w", err)
		}
		l.keepP(f)
		seg := &segment{first: last.First, name: last.Name, f: f, chk: chk, size: st.validBytes, records: records, opened: l.now()}
		if b, err := hex.DecodeString(st.last.ID[:16]); err == nil {
			copy(seg.nonce[:], b)
		}
		l.setSegment(seg)
		switch {
		case !sealed:
			if err := l.seal("restart"); err != nil {
				return err
			}
		case st.cpSize != w.tree.n:
			// Sealed, but the process died before the seal's checkpoint
			// (and maybe before its padding was dropped).
			if err := dropPadding(f, st.validBytes); err != nil {
				return fmt.Errorf("audit: %s: %w", last.Name, err)
			}
			if err := l.checkpoint(); err != nil {
				return err
			}
			fallthrough
		default:
			w.closeSegment()
			if l.opts.OnSeal != nil {
				l.opts.OnSeal(SegmentInfo{First: last.First, Name: last.Name, CheckpointsName: last.CheckpointsName,
					HasRecords: true, HasCheckpoints: true, Records: records})
			}
		}
	}
	var keyChange *Record
	if st.signer != l.signerID {
		keyChange = &Record{Kind: KindLifecycle, Event: EventCheckpointKey, Detail: map[string]string{
			"previous": st.signer, "current": l.signerID,
		}}
	}
	return l.openFresh(previous, keyChange)
}

// scanLast examines the newest segment (see the comment at the top).
func (l *Log) scanLast(fsys fs.FS, seg SegmentInfo) (*scanState, error) {
	st := &scanState{}
	// Whether the segment holds anything: a preallocated file is all
	// zeros until the first record is written.
	var segSize int64
	hasContent := false
	if seg.HasRecords {
		f, err := fsys.Open(seg.Name)
		if err != nil {
			return nil, err
		}
		var b [1]byte
		n, _ := f.Read(b[:])
		hasContent = n == 1 && b[0] != 0
		if fi, err := f.Stat(); err == nil {
			segSize = fi.Size()
		}
		f.Close()
	}
	if !seg.HasCheckpoints {
		if hasContent {
			return nil, fmt.Errorf("records but no checkpoints file %s", seg.CheckpointsName)
		}
		st.empty = true
		return st, nil
	}
	cf, err := fsys.Open(seg.CheckpointsName)
	if err != nil {
		return nil, err
	}
	entries, torn, err := readCheckpointEntries(cf)
	cf.Close()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", seg.CheckpointsName, err)
	}
	if len(entries) == 0 {
		if hasContent {
			return nil, fmt.Errorf("records but no checkpoint in %s", seg.CheckpointsName)
		}
		st.empty = true
		return st, nil
	}
	st.torn = torn >= 0
	e := entries[len(entries)-1]
	origin, size, root, signer, err := openCheckpointUnverified([]byte(e.Note))
	if err != nil {
		return nil, fmt.Errorf("%s line %d: %w", seg.CheckpointsName, e.line, err)
	}
	if size != e.Size || uint64(size) < seg.First {
		return nil, fmt.Errorf("%s line %d: checkpoint size %d does not fit the segment", seg.CheckpointsName, e.line, size)
	}
	st.origin, st.signer, st.cpSize = origin, signer, uint64(size)
	st.tree, err = frontierFrom(uint64(size), e.Frontier)
	if err != nil || st.tree.root() != root {
		return nil, fmt.Errorf("%s line %d: the frontier does not hash to the checkpoint's root", seg.CheckpointsName, e.line)
	}
	if !seg.HasRecords {
		if uint64(size) == seg.First {
			st.empty = true
			return st, nil
		}
		return nil, fmt.Errorf("checkpoints for %d records but no segment file", uint64(size)-seg.First)
	}
	if e.Offset > segSize {
		return nil, fmt.Errorf("%d bytes, shorter than its last checkpoint says (%d): truncated", segSize, e.Offset)
	}

	f, err := fsys.Open(seg.Name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	ra, ok := f.(io.ReaderAt)
	if !ok {
		return nil, errors.New("segment file does not support ReadAt")
	}
	lr := newLineReader(io.NewSectionReader(ra, e.Offset, segSize-e.Offset), e.Offset, 0)
	next := uint64(size)
	st.validBytes = e.Offset
	badLine := -1
	for {
		line, off, num, complete, err := lr.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		if badLine >= 0 {
			return nil, fmt.Errorf("invalid record %d lines after the last checkpoint, followed by more records", badLine)
		}
		if !complete {
			st.torn = true
			break
		}
		rec, err := DecodeRecord(line)
		if err != nil || rec.Seq != next {
			// Only the final line may be bad (a torn batch write).
			badLine = num + 1
			st.torn = true
			continue
		}
		st.tree.append(tlog.RecordHash(line))
		st.last = rec
		next++
		st.validBytes = off + int64(len(line)) + 1
	}
	l.w.scanned += lr.off - e.Offset
	if st.last == nil {
		if uint64(size) == seg.First {
			// No complete record in this segment: nothing in it was ever
			// acknowledged.
			st.empty = true
			return st, nil
		}
		line, err := lineBefore(ra, e.Offset)
		if err != nil {
			return nil, err
		}
		if st.last, err = DecodeRecord(line); err != nil || st.last.Seq != uint64(size)-1 {
			return nil, fmt.Errorf("the record before offset %d is not seq %d", e.Offset, size-1)
		}
	}
	return st, nil
}

// lineBefore returns the line that ends (with its newline) at end.
func lineBefore(r io.ReaderAt, end int64) ([]byte, error) {
	if end <= 0 {
		return nil, errors.New("no line before the start of the file")
	}
	const chunk = 64 << 10
	var line []byte
	pos := end - 1 // the newline
	var nl [1]byte
	if _, err := r.ReadAt(nl[:], pos); err != nil || nl[0] != '\n' {
		return nil, fmt.Errorf("offset %d is not at a line boundary", end)
	}
	for pos > 0 {
		n := min(int64(chunk), pos)
		b := make([]byte, n)
		if _, err := r.ReadAt(b, pos-n); err != nil {
			return nil, err
		}
		if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
			return append(b[i+1:], line...), nil
		}
		line = append(b, line...)
		pos -= n
		if len(line) > MaxRecordBytes {
			return nil, errLineTooLong
		}
	}
	return line, nil
}
