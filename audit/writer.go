package audit

import (
	"crypto/rand"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"time"

	"golang.org/x/mod/sumdb/tlog"
)

// The writer goroutine owns the files. Its loop:
//
//  1. yield once, so the waiters the last batch released can append
//     again, then take everything queued (group commit: whatever arrived
//     while the previous batch was being synced; there is no timer and,
//     unless Config.CommitDelay says so, no delay);
//  2. sequence it (seq, id, time), build the lines in one buffer, hash the
//     leaves into the tree's frontier;
//  3. one write(2), one fdatasync(2); then release every waiter;
//  4. rotate if the segment is full, write a checkpoint if one is due;
//  5. when idle: heartbeat, age rotation, pending checkpoint, or — when
//     unhealthy — a recovery attempt.
//
// A failed write or sync is never retried on the same file: the segment is
// abandoned (closed, never written again), the batch's waiters and
// everything queued get ErrUnavailable, new Appends fail at once, and every
// RetryInterval the writer tries to open a new segment. The tree and seq
// roll back to the last durable record, so the failed batch's records,
// whatever part of them reached the file, are not in the log: their seqs
// are reused in the new segment, whose first record ("recover") names the
// abandoned segment and how many of its bytes are the log (valid_bytes,
// the durable size). Verify reads an abandoned segment up to valid_bytes
// and reports the rest as ignored.

type writer struct {
	seg          *segment // nil while unhealthy
	tree         frontier
	lastTime     time.Time // time of the newest record; records never go back
	lastActivity time.Time // last batch, for heartbeats
	cpSize       uint64    // tree size of the newest checkpoint
	cpAt         time.Time
	buf          []byte // the batch being written
	ts           []byte // the batch's formatted time
	spare        []*request
	lastBatch    int     // records in the previous batch
	own          request // the writer's own records
	digest       hash.Hash
	zero         [1]byte
	sum          [sha256Size]byte

	// After a fault, until a new segment is open:
	recovery  *recoveryInfo
	cleanup   []string  // files of a failed segment that holds no record
	nextProbe time.Time // when to try again
	scanned   int64     // bytes read by startup recovery (tests)
}

const sha256Size = 32

// segment is the open segment.
type segment struct {
	first   uint64
	name    string
	f, chk  File
	size    int64  // durable bytes
	records uint64 // durable records
	nonce   [8]byte
	opened  time.Time
	ix      *indexBuilder // nil when the segment was not written from its start by this Log
}

// recoveryInfo is what the "recover" record will say.
type recoveryInfo struct {
	reason     string
	abandoned  string // segment whose tail is not part of the log ("" if none)
	validBytes int64
	records    uint64
}

func (w *writer) closeSegment() {
	if w.seg != nil {
		w.seg.f.Close()
		w.seg.chk.Close()
		w.seg = nil
	}
}

// commitSiblings is how many records the previous batch must have had for
// Config.CommitDelay to apply: a lone client never waits.
const commitSiblings = 4

// run is the writer goroutine.
func (l *Log) run() {
	defer close(l.done)
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	released := false // the last iteration committed a batch and released its waiters
	for {
		if released {
			// The previous batch's waiters are runnable now, most on this
			// P's queue: let them run before taking the queue, so the
			// records they append next join this batch instead of waiting
			// a whole commit cycle. No timer and no delay when nothing
			// else is runnable (bench/README.md, issue 19: batches on
			// tmpfs 1.4 -> 29 records, CPU per record -47%).
			runtime.Gosched()
			released = false
		}
		batch, closing := l.take()
		if len(batch) > 0 && l.cfg.CommitDelay > 0 && !closing && l.w.lastBatch >= commitSiblings {
			// Busy: let the batch grow for a moment, so one fdatasync
			// carries more records.
			time.Sleep(l.cfg.CommitDelay)
			more, c := l.take()
			batch, closing = append(batch, more...), c
		}
		if len(batch) > 0 {
			n := 0
			for _, r := range batch {
				n += len(r.ends)
			}
			l.w.lastBatch = n
			l.commitRequests(batch)
			clear(batch)
			l.w.spare = batch[:0]
			l.afterBatch()
			released = true
			continue
		}
		if closing {
			l.doneErr = l.shutdown()
			return
		}
		l.tick()
		timer.Reset(l.nextDeadline())
		select {
		case <-l.wake:
		case <-timer.C:
		case <-l.closing:
		}
	}
}

// take returns everything queued and makes room in the queue.
func (l *Log) take() ([]*request, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	batch := l.pending
	l.pending = l.w.spare
	l.w.spare = nil
	l.queued = 0
	if l.space != nil {
		close(l.space)
		l.space = nil
	}
	return batch, l.closed
}

// commitRequests writes a batch of Append calls, or fails it if the log
// is unhealthy (requests queued before the fault was noticed).
func (l *Log) commitRequests(batch []*request) {
	if l.w.seg == nil {
		err := l.unhealthyErr()
		for _, r := range batch {
			r.err = err
			r.done <- struct{}{}
		}
		return
	}
	l.commit(batch)
}

// unhealthyErr is the fault that made the log unhealthy.
func (l *Log) unhealthyErr() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err != nil {
		return l.err
	}
	return fmt.Errorf("%w: no open segment", ErrUnavailable)
}

// commitOwn writes the log's own records as one batch.
func (l *Log) commitOwn(recs ...*Record) error {
	r := &l.w.own
	r.buf, r.ends, r.err = r.buf[:0], r.ends[:0], nil
	for _, rec := range recs {
		if err := rec.validate(true); err != nil {
			return err
		}
		r.buf = appendTail(r.buf, rec, l.node, l.mac)
		r.ends = append(r.ends, len(r.buf))
	}
	return l.commit([]*request{r})
}

// commit sequences, writes and syncs one batch, then releases its waiters.
// On failure it rolls the tree back, faults the log and fails the batch.
func (l *Log) commit(batch []*request) error {
	w := &l.w
	seg := w.seg
	if seg == nil {
		return fmt.Errorf("%w: no open segment", ErrUnavailable)
	}
	saved := w.tree
	now := l.now().UTC()
	if now.Before(w.lastTime) {
		// A wall clock step backwards: keep time monotonic in seq order, so
		// a time range is a contiguous run of records (query relies on it).
		now = w.lastTime
	}
	w.ts = now.AppendFormat(w.ts[:0], time.RFC3339Nano)
	buf := w.buf[:0]
	seq := w.tree.n
	records := 0
	nowNano := now.UnixNano()
	for _, req := range batch {
		req.first, req.time, req.nonce = seq, now, seg.nonce
		start := 0
		for i, end := range req.ends {
			lineStart := len(buf)
			buf = appendHead(buf, seq, &seg.nonce, w.ts)
			headLen := len(buf) - lineStart
			buf = append(buf, req.buf[start:end]...)
			line := buf[lineStart:]
			w.tree.append(l.leafHash(line))
			if ix := seg.ix; ix != nil {
				if i < len(req.fields) {
					p, bk, k, ok := req.fields[i].locate(line, headLen)
					ix.addFields(line, seg.size+int64(lineStart), seq, nowNano, p, bk, k, ok)
				} else {
					ix.add(line, seg.size+int64(lineStart), seq, nowNano)
				}
			}
			buf = append(buf, '\n')
			seq++
			start = end
			records++
		}
	}
	w.buf = buf

	n, err := seg.f.WriteAt(buf, seg.size)
	if err == nil && n != len(buf) {
		err = io.ErrShortWrite
	}
	var syncDur time.Duration
	if err == nil {
		t1 := time.Now()
		err = seg.f.Sync()
		syncDur = time.Since(t1)
	}
	if err != nil {
		w.tree = saved
		err = l.fault(fmt.Errorf("segment %s: %w", seg.name, err))
		for _, r := range batch {
			r.err = err
			if r.done != nil {
				r.done <- struct{}{}
			}
		}
		return err
	}
	seg.size += int64(len(buf))
	seg.records += uint64(records)
	w.lastTime = now
	w.lastActivity = now
	l.mu.Lock()
	l.stats.Records += uint64(records)
	l.stats.Batches++
	l.stats.TreeSize = w.tree.n
	l.mu.Unlock()
	for _, r := range batch {
		if r.done != nil {
			r.done <- struct{}{}
		}
	}
	if l.opts.Reporter != nil {
		l.opts.Reporter.AuditBatch(records, syncDur)
	}
	return nil
}

// leafHash is tlog.RecordHash(line) without its allocation.
func (l *Log) leafHash(line []byte) tlog.Hash {
	d := l.w.digest
	d.Reset()
	d.Write(l.w.zero[:])
	d.Write(line)
	var h tlog.Hash
	copy(h[:], d.Sum(l.w.sum[:0]))
	return h
}

// afterBatch rotates a full or old segment and writes a due checkpoint.
func (l *Log) afterBatch() {
	w := &l.w
	if w.seg == nil {
		return
	}
	now := l.now()
	switch {
	case w.seg.size >= l.cfg.SegmentMaxBytes:
		l.rotate("size")
	case now.Sub(w.seg.opened) >= l.cfg.SegmentMaxAge:
		l.rotate("age")
	case w.tree.n > w.cpSize && now.Sub(w.cpAt) >= l.cfg.CheckpointInterval:
		l.checkpoint()
	}
}

// tick does the time-driven work while no batch is waiting.
func (l *Log) tick() {
	w := &l.w
	now := l.now()
	if w.seg == nil {
		if !now.Before(w.nextProbe) {
			l.probe()
		}
		return
	}
	switch {
	case now.Sub(w.seg.opened) >= l.cfg.SegmentMaxAge:
		l.rotate("age")
	case now.Sub(w.lastActivity) >= l.cfg.HeartbeatInterval:
		if l.commitOwn(&Record{Kind: KindLifecycle, Event: EventHeartbeat}) == nil {
			l.checkpoint()
		}
	case w.tree.n > w.cpSize && now.Sub(w.cpAt) >= l.cfg.CheckpointInterval:
		l.checkpoint()
	}
}

// nextDeadline is how long the writer may sleep when idle. It is capped
// at a second so an injected clock that jumps is noticed.
func (l *Log) nextDeadline() time.Duration {
	w := &l.w
	now := l.now()
	d := time.Second
	min := func(t time.Time) {
		if u := t.Sub(now); u < d {
			d = u
		}
	}
	if w.seg == nil {
		min(w.nextProbe)
	} else {
		min(w.seg.opened.Add(l.cfg.SegmentMaxAge))
		min(w.lastActivity.Add(l.cfg.HeartbeatInterval))
		if w.tree.n > w.cpSize {
			min(w.cpAt.Add(l.cfg.CheckpointInterval))
		}
	}
	if d < time.Millisecond {
		d = time.Millisecond
	}
	return d
}

// checkpoint signs the current tree and appends it to the segment's
// checkpoints file.
func (l *Log) checkpoint() error {
	w := &l.w
	seg := w.seg
	if seg == nil {
		return fmt.Errorf("%w: no open segment", ErrUnavailable)
	}
	entry, err := l.checkpointEntry(seg.size)
	if err != nil {
		return l.fault(err)
	}
	b := appendCheckpointEntry(nil, entry)
	n, err := seg.chk.Write(b)
	if err == nil && n != len(b) {
		err = io.ErrShortWrite
	}
	if err == nil {
		err = seg.chk.Sync()
	}
	if err != nil {
		return l.fault(fmt.Errorf("checkpoints of %s: %w", seg.name, err))
	}
	w.cpSize, w.cpAt = w.tree.n, entry.Time
	l.mu.Lock()
	l.stats.LastCheckpoint, l.stats.LastCheckpointSize = entry.Time, w.tree.n
	l.mu.Unlock()
	return nil
}

func (l *Log) checkpointEntry(offset int64) (*checkpointEntry, error) {
	w := &l.w
	size := int64(w.tree.n)
	msg, err := signCheckpoint(l.signer, l.origin, size, w.tree.root())
	if err != nil {
		return nil, fmt.Errorf("signing checkpoint: %w", err)
	}
	return &checkpointEntry{
		Size:     size,
		Time:     l.now().UTC(),
		Offset:   offset,
		Frontier: w.tree.hashes(),
		Note:     string(msg),
	}, nil
}

// seal ends the current segment: a "seal" record, a checkpoint covering
// it, close. The segment is then final and may be uploaded.
func (l *Log) seal(reason string, extra ...*Record) error {
	w := &l.w
	seg := w.seg
	rec := &Record{Kind: KindLifecycle, Event: EventSeal, Detail: map[string]string{
		"reason":  reason,
		"records": strconv.FormatUint(seg.records+uint64(len(extra))+1, 10),
	}}
	if err := l.commitOwn(append(extra, rec)...); err != nil {
		return err
	}
	if err := dropPadding(seg.f, seg.size); err != nil {
		return l.fault(fmt.Errorf("segment %s: %w", seg.name, err))
	}
	if err := l.checkpoint(); err != nil {
		return err
	}
	hasIndex := l.writeIndex(seg)
	info := SegmentInfo{First: seg.first, Name: seg.name, CheckpointsName: CheckpointsName(seg.first), IndexName: IndexName(seg.first),
		HasRecords: true, HasCheckpoints: true, HasIndex: hasIndex, Records: seg.records}
	// Both files are durable (fdatasync'ed); a close error cannot lose data.
	w.closeSegment()
	l.dropSealed(filepath.Join(l.cfg.Dir, info.Name))
	l.log.Info("audit segment sealed", "segment", info.Name, "records", info.Records, "reason", reason)
	if l.opts.OnSeal != nil {
		l.opts.OnSeal(info)
	}
	return nil
}

// rotate seals the current segment and opens the next.
func (l *Log) rotate(reason string) error {
	if err := l.seal(reason); err != nil {
		return err
	}
	seg, err := l.createSegment(l.w.tree.n)
	if err != nil {
		return l.fault(err)
	}
	l.setSegment(seg)
	return nil
}

func (l *Log) setSegment(seg *segment) {
	l.w.seg = seg
	l.mu.Lock()
	l.stats.Segment = ""
	if seg != nil {
		l.stats.Segment = seg.name
	}
	l.mu.Unlock()
}

// createSegment creates the segment starting at seq first: its
// checkpoints file with the opening checkpoint (durable before the segment
// file exists, so a segment file always has a checkpoint to start from),
// then the empty segment file, then the directory entries.
func (l *Log) createSegment(first uint64) (*segment, error) {
	w := &l.w
	seg := &segment{first: first, name: SegmentName(first), opened: l.now(), ix: newIndexBuilder(first)}
	if _, err := rand.Read(seg.nonce[:]); err != nil {
		return nil, err
	}
	dir := l.cfg.Dir
	chkPath := filepath.Join(dir, CheckpointsName(first))
	segPath := filepath.Join(dir, seg.name)
	const flags = os.O_WRONLY | os.O_CREATE | os.O_EXCL | os.O_APPEND
	chk, err := l.openFile(chkPath, flags, 0o640)
	if err != nil {
		return nil, fmt.Errorf("creating %s: %w", CheckpointsName(first), err)
	}
	// Until the segment holds a record, the files created here are
	// removable leftovers (only those: O_EXCL says they are ours).
	w.cleanup = []string{chkPath}
	entry, err := l.checkpointEntry(0)
	if err != nil {
		chk.Close()
		return nil, err
	}
	b := appendCheckpointEntry(nil, entry)
	if n, err := chk.Write(b); err != nil || n != len(b) {
		chk.Close()
		return nil, fmt.Errorf("writing %s: %w", CheckpointsName(first), errOr(err, io.ErrShortWrite))
	}
	if err := chk.Sync(); err != nil {
		chk.Close()
		return nil, fmt.Errorf("syncing %s: %w", CheckpointsName(first), err)
	}
	var f File
	if l.takePrepared(segPath) {
		f, err = l.openFile(segPath, os.O_WRONLY, 0)
	} else {
		f, err = l.openFile(segPath, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o640)
	}
	if err != nil {
		chk.Close()
		return nil, fmt.Errorf("creating %s: %w", seg.name, err)
	}
	w.cleanup = append(w.cleanup, segPath)
	if err := syncDir(l.openFile, dir); err != nil {
		chk.Close()
		f.Close()
		return nil, fmt.Errorf("syncing %s: %w", dir, err)
	}
	l.keepP(f)
	seg.f, seg.chk = f, chk
	w.cpSize, w.cpAt = w.tree.n, entry.Time
	w.lastActivity = l.now()
	return seg, nil
}

// keepP applies Config.SyncMode to a segment file the writer will sync.
func (l *Log) keepP(f File) {
	if l.cfg.SyncMode == SyncKeepP {
		keepPWhileFast(f, l.slowSync)
	}
}

func errOr(err, alt error) error {
	if err != nil {
		return err
	}
	return alt
}

// fault makes the log unhealthy after a failed write or sync: the segment
// is abandoned (never written again), queued requests fail, and recovery
// is scheduled. It returns the error Appends now get.
func (l *Log) fault(cause error) error {
	w := &l.w
	if seg := w.seg; seg != nil {
		seg.f.Close()
		seg.chk.Close()
		if seg.records > 0 {
			w.recovery = &recoveryInfo{abandoned: seg.name, validBytes: seg.size, records: seg.records}
			w.cleanup = nil
		} else {
			// Nothing of this segment is in the log: remove it before the
			// new segment takes its name (same first seq). An earlier
			// abandoned segment, if any, is still the one to name.
			w.cleanup = []string{filepath.Join(l.cfg.Dir, CheckpointsName(seg.first)), filepath.Join(l.cfg.Dir, seg.name)}
		}
		l.setSegment(nil)
	}
	if w.recovery == nil {
		w.recovery = &recoveryInfo{}
	}
	if w.recovery.reason == "" {
		// The fault that started it all, not the last failed probe.
		w.recovery.reason = cause.Error()
	}
	w.nextProbe = l.now().Add(l.opts.RetryInterval)
	err := fmt.Errorf("%w: %w", ErrUnavailable, cause)

	l.mu.Lock()
	first := l.err == nil
	l.err = err
	l.stats.Failures++
	queued := l.pending
	l.pending = nil
	l.queued = 0
	if l.space != nil {
		close(l.space)
		l.space = nil
	}
	l.mu.Unlock()
	for _, r := range queued {
		r.err = err
		r.done <- struct{}{}
	}
	if first {
		l.log.Error("audit log unavailable: refusing to sign until it recovers", "err", cause)
	} else {
		l.log.Warn("audit log recovery failed", "err", cause)
	}
	return err
}

// probe tries to resume in a new segment. The first record says what was
// abandoned; once it and a checkpoint are durable, the log is healthy.
func (l *Log) probe() {
	w := &l.w
	if err := l.removeFailedSegment(); err != nil {
		l.fault(err)
		return
	}
	seg, err := l.createSegment(w.tree.n)
	if err != nil {
		l.fault(err)
		return
	}
	l.setSegment(seg)
	if err := l.commitOwn(l.recoverRecord()); err != nil {
		return // commit faulted again
	}
	if err := l.checkpoint(); err != nil {
		return
	}
	info := w.recovery
	w.recovery = nil
	l.mu.Lock()
	l.err = nil
	l.mu.Unlock()
	l.log.Info("audit log recovered", "segment", seg.name, "abandoned", info.abandoned, "valid_bytes", info.validBytes)
}

// recoverRecord describes the pending recovery.
func (l *Log) recoverRecord() *Record {
	info := l.w.recovery
	d := map[string]string{"reason": info.reason}
	if info.abandoned != "" {
		d["abandoned"] = info.abandoned
		d["valid_bytes"] = strconv.FormatInt(info.validBytes, 10)
		d["records"] = strconv.FormatUint(info.records, 10)
	}
	return &Record{Kind: KindLifecycle, Event: EventRecover, Detail: d}
}

// shutdown runs when Close was called and the queue is empty: stop record,
// seal, release the directory.
func (l *Log) shutdown() error {
	defer l.lock.Close()
	defer l.stopPreparer()
	w := &l.w
	if w.seg == nil {
		// Closed while unavailable (a full disk): nothing can be sealed,
		// and the next Open recovers. But a segment whose creation failed
		// (an empty checkpoints file) must not outlive the process: it
		// would stand after the abandoned segment as if that one were
		// finished. Removing frees space, so it works on a full disk.
		err := l.unhealthyErr()
		if rerr := l.removeFailedSegment(); rerr != nil {
			err = fmt.Errorf("%w; %w", err, rerr)
		}
		return fmt.Errorf("closed while unavailable, not sealed (the next start recovers): %w", err)
	}
	stop := &Record{Kind: KindLifecycle, Event: EventStop, Detail: map[string]string{"reason": "shutdown"}}
	if err := l.seal("close", stop); err != nil {
		return err
	}
	return nil
}

// removeFailedSegment removes the files of a segment whose creation or
// first write failed (w.cleanup: they hold no record) and makes the
// removal durable.
func (l *Log) removeFailedSegment() error {
	w := &l.w
	if len(w.cleanup) == 0 {
		return nil
	}
	for _, name := range w.cleanup {
		if err := os.Remove(name); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("removing failed segment file: %w", err)
		}
	}
	w.cleanup = nil
	if err := syncDir(l.openFile, l.cfg.Dir); err != nil {
		return fmt.Errorf("syncing %s: %w", l.cfg.Dir, err)
	}
	return nil
}
