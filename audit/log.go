package audit

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/sys/unix"
)

var (
	// ErrUnavailable means records cannot be made durable: a write or sync
	// failed (the log then refuses every Append until it has recovered into
	// a new segment) or the log is closed. Callers answer 503 with
	// Retry-After and sign nothing. Errors wrap it together with the cause.
	ErrUnavailable = errors.New("audit: log unavailable")
	// ErrClosed is returned by Append after Close. It wraps ErrUnavailable.
	ErrClosed = fmt.Errorf("%w: closed", ErrUnavailable)
)

// Log is a node's audit log: durable, group-committed, tamper-evident.
// Append is safe for concurrent use; everything else about the files is
// done by one writer goroutine.
type Log struct {
	cfg      Config
	opts     Options
	log      *slog.Logger
	now      func() time.Time
	openFile func(string, int, os.FileMode) (File, error)
	signer   note.Signer
	signerID string // "name+hash" of the checkpoint key
	mac      *tokenMAC
	node     string
	origin   string
	lock     *os.File
	slowSync time.Duration // SlowSyncThreshold; tests lower it

	reqs sync.Pool // *request
	prep preparer

	mu      sync.Mutex
	pending []*request
	queued  int           // records in pending
	space   chan struct{} // closed when the queue is drained; nil if nobody waits
	err     error         // non-nil while unhealthy; wraps ErrUnavailable
	closed  bool
	stats   Stats

	wake    chan struct{} // capacity 1: "pending is not empty"
	closing chan struct{} // closed by Close
	done    chan struct{} // closed when the writer has finished
	doneErr error         // the writer's final error, read after done

	w writer // owned by the writer goroutine (by Open before it starts)
}

// Stats is a snapshot for metrics and /readyz.
type Stats struct {
	Healthy    bool
	QueueDepth int    // records waiting for the writer
	Records    uint64 // records made durable since Open, lifecycle included
	Batches    uint64 // fdatasync'ed batches since Open
	Failures   uint64 // write/sync failures since Open
	TreeSize   uint64 // records in the log (next seq)
	// LastCheckpoint is when the newest checkpoint was written, and
	// LastCheckpointSize the tree size it signs.
	LastCheckpoint     time.Time
	LastCheckpointSize uint64
	Segment            string // current segment file ("" while unhealthy)
}

// request is one Append call's records on their way to the writer.
type request struct {
	buf  []byte // the records' tails, back to back
	ends []int  // end offset in buf of each record's tail
	// fields: where each tail holds what the index reads (nil for the
	// writer's own records: their lines are searched)
	fields []tailFields
	first  uint64 // seq of the first record, set by the writer
	time   time.Time
	nonce  [8]byte
	err    error
	done   chan struct{} // capacity 1; nil for the writer's own records
}

// maxPooledRequest keeps one huge Append (a 1000-key DeleteObjects) from
// pinning its buffer in the pool forever.
const maxPooledRequest = 64 << 10

// Open opens (or creates) the log in cfg.Dir, recovers from a crash if the
// last run did not close it (see recovery.go), writes a "start" record and
// a checkpoint, and starts the writer. It fails if the directory is in use
// by another process, a key is missing, or the log's newest segment is
// damaged other than by a torn final line.
func Open(cfg Config, opts Options) (*Log, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.OpenFile == nil {
		opts.OpenFile = openOSFile
	}
	if opts.RetryInterval <= 0 {
		opts.RetryInterval = DefaultRetryInterval
	}
	log := opts.Logger.With("component", "audit")
	signer, err := loadSigner(cfg, opts, log)
	if err != nil {
		return nil, err
	}
	hmacKey, err := loadHMACKey(cfg, opts, log)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(cfg.Dir, 0o750); err != nil {
		return nil, fmt.Errorf("audit.dir: %w", err)
	}
	lock, err := lockDir(cfg.Dir)
	if err != nil {
		return nil, err
	}
	l := &Log{
		cfg:      cfg,
		opts:     opts,
		log:      log,
		now:      opts.Now,
		openFile: opts.OpenFile,
		slowSync: SlowSyncThreshold,
		signer:   signer,
		signerID: fmt.Sprintf("%s+%08x", signer.Name(), signer.KeyHash()),
		mac:      newTokenMAC(hmacKey),
		lock:     lock,
		wake:     make(chan struct{}, 1),
		closing:  make(chan struct{}),
		done:     make(chan struct{}),
	}
	l.w.digest = sha256.New()
	l.prep = preparer{req: make(chan struct{}, 1), drop: make(chan string, 4), stop: make(chan struct{}), done: make(chan struct{})}
	// The first segment is preallocated before Open returns, so throughput
	// is the same from the first record on (costs one zero-fill at start).
	if err := l.prepare(); err != nil {
		log.Warn("audit: cannot preallocate a segment; segments will grow by appending (slower fdatasync)", "err", err)
	} else {
		l.prep.ready.Store(true)
	}
	go l.runPreparer()
	if err := l.recover(); err != nil {
		l.w.closeSegment()
		if rerr := l.removeFailedSegment(); rerr != nil {
			err = fmt.Errorf("%w; %w", err, rerr)
		}
		l.stopPreparer()
		lock.Close()
		return nil, err
	}
	go l.run()
	return l, nil
}

// lockDir takes an exclusive lock on dir/LOCK: two writers on one log
// would interleave seqs. The lock dies with the process (kill -9 too).
func lockDir(dir string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(dir, lockName), os.O_RDWR|os.O_CREATE, 0o640)
	if err != nil {
		return nil, fmt.Errorf("audit.dir: %w", err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, fmt.Errorf("audit.dir %s is in use by another process", dir)
		}
		return nil, fmt.Errorf("audit.dir: lock: %w", err)
	}
	return f, nil
}

// Node is the log's node id; Origin its checkpoint origin line.
func (l *Log) Node() string   { return l.node }
func (l *Log) Origin() string { return l.origin }

// Append writes records and returns once they are durable (fdatasync'ed),
// or with an error, in which case none of them may be relied on. On
// success it sets each record's Version, Seq, ID, Time and Node; it never
// modifies anything else, so records may share a Principal. Records of one
// call get consecutive seqs.
//
// Errors: ErrInvalidRecord (caller bug; nothing written), ErrUnavailable
// (log failing or closed: answer 503), or ctx's error (while waiting for
// room in the queue, or for durability: the records may then still be
// written — the log may hold records of requests that failed, never the
// reverse).
func (l *Log) Append(ctx context.Context, recs ...*Record) error {
	if len(recs) == 0 {
		return nil
	}
	req := l.getRequest()
	for _, r := range recs {
		if err := r.validate(false); err != nil {
			l.putRequest(req)
			return err
		}
		start := len(req.buf)
		var f tailFields
		req.buf = appendTailFields(req.buf, r, l.node, l.mac, &f)
		if len(req.buf)-start > MaxRecordBytes-200 { // the head adds < 200 bytes
			l.putRequest(req)
			return fmt.Errorf("%w: record longer than %d bytes", ErrInvalidRecord, MaxRecordBytes)
		}
		req.ends = append(req.ends, len(req.buf))
		req.fields = append(req.fields, f)
	}
	if err := l.enqueue(ctx, req); err != nil {
		l.putRequest(req)
		return err
	}
	select {
	case <-req.done:
	case <-ctx.Done():
		// The writer still owns req and will signal done (buffered); the
		// request is left to the garbage collector, not the pool.
		return ctx.Err()
	}
	if req.err != nil {
		err := req.err
		l.putRequest(req)
		return err
	}
	var id [32]byte
	for i, r := range recs {
		r.Version = SchemaVersion
		r.Seq = req.first + uint64(i)
		r.ID = string(appendID(id[:0], &req.nonce, r.Seq)) // the one allocation per record
		r.Time = req.time
		r.Node = l.node
	}
	l.putRequest(req)
	return nil
}

// enqueue hands req to the writer, waiting while the queue is full.
func (l *Log) enqueue(ctx context.Context, req *request) error {
	n := len(req.ends)
	l.mu.Lock()
	for {
		if l.closed {
			l.mu.Unlock()
			return ErrClosed
		}
		if l.err != nil {
			err := l.err
			l.mu.Unlock()
			return err
		}
		if l.queued == 0 || l.queued+n <= l.cfg.QueueMax {
			break
		}
		if l.space == nil {
			l.space = make(chan struct{})
		}
		space := l.space
		l.mu.Unlock()
		select {
		case <-space:
		case <-ctx.Done():
			return ctx.Err()
		}
		l.mu.Lock()
	}
	l.pending = append(l.pending, req)
	l.queued += n
	l.mu.Unlock()
	select {
	case l.wake <- struct{}{}:
	default: // the writer has been woken already
	}
	return nil
}

func (l *Log) getRequest() *request {
	if r, ok := l.reqs.Get().(*request); ok {
		return r
	}
	return &request{done: make(chan struct{}, 1)}
}

func (l *Log) putRequest(r *request) {
	if cap(r.buf) > maxPooledRequest {
		return
	}
	r.buf, r.ends, r.fields, r.err = r.buf[:0], r.ends[:0], r.fields[:0], nil
	l.reqs.Put(r)
}

// Healthy is nil when Append can make records durable. Otherwise it is
// the failure (wrapping ErrUnavailable) or ErrClosed: /readyz false, sign
// requests 503.
func (l *Log) Healthy() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return ErrClosed
	}
	return l.err
}

// Stats returns a snapshot of the log's counters.
func (l *Log) Stats() Stats {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.stats
	s.Healthy = l.err == nil && !l.closed
	s.QueueDepth = l.queued
	return s
}

// Close drains the queue, writes a "stop" record, seals the current
// segment with a final checkpoint, and releases the directory. Appends
// after Close fail with ErrClosed. If the log is unhealthy, queued records
// fail and Close returns the failure; the next Open recovers.
func (l *Log) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		<-l.done
		return nil
	}
	l.closed = true
	if l.space != nil {
		close(l.space)
		l.space = nil
	}
	l.mu.Unlock()
	close(l.closing)
	<-l.done
	return l.doneErr
}
