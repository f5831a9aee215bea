package upload

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/countersign/countersign/audit"
)

// Which segments are finished, and which may be removed
//
// The audit writer only ever writes the newest segment. At startup,
// recovery examines the newest segment that holds a record (an empty
// newest one, left by a crash while it was being created, is removed
// first) and may append a seal record to it: it needs that segment's
// checkpoints file and tail to restore the tree. So:
//
//   - A segment is finished for good once a LATER segment holds a complete
//     and durable first record: from then on nothing, not even recovery
//     after kill -9 or a power failure, writes it or needs it. These are
//     uploaded and then removed. "A later segment exists" is not enough:
//     while the writer recovers from a fault, or after a crash while the
//     next segment was being created, the later segment can still be
//     removed, making the earlier one the newest again (recovery may then
//     append a seal record to it, and needs it to resume at all).
//   - The newest segment holding a record (the anchor) is never removed.
//     It is uploaded only once audit.Options.OnSeal said it is sealed (its
//     seal record and final checkpoint are durable; it is then never
//     written again), e.g. by Log.Close at shutdown; it is removed by a
//     later pass, after the log has started a newer segment.
//   - Segments after the anchor (the current one before its first record)
//     are never touched.
//
// Nothing is remembered on disk: whether a segment is uploaded is whether
// the bucket holds objects with its size and SHA-256. A pass that finds
// them there (an upload whose answer was lost, a removal interrupted by a
// crash) verifies and carries on; nothing is ever uploaded twice over a
// different object.

// ErrConflict means the bucket already holds a different object under a
// segment's key: another node writing the same prefix, a log started again
// from seq 0 with the same node id, or an altered object. The uploader
// never overwrites it and never removes the local file; an operator must
// look.
var ErrConflict = errors.New("upload: the bucket holds a different object under this key")

// ErrNotLocked means an object in the bucket has the segment's bytes but
// not the configured Object Lock retention (the bucket has no Object Lock,
// or the credentials may not read retention: s3:GetObjectRetention). The
// local file is kept: without the lock the bucket copy is not the
// tamper-proof copy the removal relies on.
var ErrNotLocked = errors.New("upload: the object in the bucket is not locked as configured")

// errMismatch is a size or checksum difference between the bucket and here.
var errMismatch = errors.New("different bytes")

// opTimeout bounds each S3 request, so a connection that hangs without
// failing cannot stall the uploader (or Close) for ever. Generous: a 64 MiB
// segment at 1 Mbit/s takes about 9 minutes.
const opTimeout = 15 * time.Minute

// Options are the Uploader's collaborators, set in code.
type Options struct {
	// NodeID is the audit log's node id (audit.Log.Node()), for the default
	// prefix "<node_id>/". Required unless Config.Prefix is set.
	NodeID string
	// Logger gets uploads and failures (default: discard).
	Logger *slog.Logger
	// HTTPClient for S3 requests (default: the SDK's).
	HTTPClient *http.Client
	// Now is the clock for retain-until dates (default time.Now).
	Now func() time.Time
	// OnUploaded is called once per segment when this Uploader has
	// verified both its files in the bucket (uploaded now, or found there
	// with the same bytes after a restart), for metrics. It must not block.
	OnUploaded func(name string)
	// OnFailure is called with each failed pass's error, for metrics. It
	// must not block.
	OnFailure func(error)
	// RetryMin and RetryMax bound the backoff after a failed pass
	// (defaults DefaultRetryMin, DefaultRetryMax).
	RetryMin, RetryMax time.Duration
	// Client overrides the S3 client built from the configuration.
	Client *s3.Client
}

// Uploader uploads the finished segments of one audit log directory. It
// runs beside the audit.Log of the same process; Notify is its
// audit.Options.OnSeal.
type Uploader struct {
	cfg    Config
	dir    string
	fsys   fs.FS
	client *s3.Client
	log    *slog.Logger
	now    func() time.Time
	opts   Options

	wake      chan struct{} // capacity 1: "a segment was sealed"
	stop      chan struct{} // closed by Close
	done      chan struct{} // closed when the loop has returned
	closeOnce sync.Once

	passMu sync.Mutex // one pass at a time (the loop, Flush)
	// verified are the local files this Uploader has verified in the bucket
	// (keep_local, or a sealed anchor that stays), so a pass does not hash
	// and HEAD them again. Guarded by passMu.
	verified map[string]fileState

	mu      sync.Mutex
	sealed  map[uint64]bool // segments OnSeal reported, by first seq
	started bool
	lastErr error
	pending atomic.Int64
}

type fileState struct {
	size    int64
	modTime time.Time
}

// New returns an Uploader for the log in dir. It makes no request: S3
// being unreachable must not keep the node from signing; failures show in
// LastError, OnFailure and the log, and are retried.
func New(ctx context.Context, cfg Config, dir string, opts Options) (*Uploader, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if !cfg.Enabled() {
		return nil, errors.New("audit.upload.bucket is not set: upload is off")
	}
	if cfg.Prefix == "" && opts.NodeID == "" {
		return nil, errors.New("audit.upload.prefix: not set and no node id to default it from")
	}
	cfg = cfg.withDefaults(opts.NodeID)
	if dir == "" {
		return nil, errors.New("audit.upload: no audit directory")
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.RetryMin <= 0 {
		opts.RetryMin = DefaultRetryMin
	}
	if opts.RetryMax <= 0 {
		opts.RetryMax = DefaultRetryMax
	}
	if opts.RetryMax < opts.RetryMin {
		opts.RetryMax = opts.RetryMin
	}
	client := opts.Client
	if client == nil {
		var err error
		if client, err = newClient(ctx, cfg, opts.HTTPClient); err != nil {
			return nil, err
		}
	}
	return &Uploader{
		cfg:      cfg,
		dir:      dir,
		fsys:     os.DirFS(dir),
		client:   client,
		log:      opts.Logger.With("component", "audit-upload", "bucket", cfg.Bucket, "prefix", cfg.Prefix),
		now:      opts.Now,
		opts:     opts,
		wake:     make(chan struct{}, 1),
		stop:     make(chan struct{}),
		done:     make(chan struct{}),
		verified: map[string]fileState{},
		sealed:   map[uint64]bool{},
	}, nil
}

// KeyPrefix is the prefix objects get: Config.Prefix, or "<nodeID>/".
// Readers of the bucket (BucketFS, "audit verify -bucket") use it too.
func (c Config) KeyPrefix(nodeID string) string { return c.withDefaults(nodeID).Prefix }

// Notify tells the uploader that a segment was sealed. It never blocks:
// wire it to audit.Options.OnSeal, which the writer calls inline.
func (u *Uploader) Notify(seg audit.SegmentInfo) {
	u.mu.Lock()
	if !u.sealed[seg.First] {
		u.sealed[seg.First] = true
		u.pending.Add(1) // until the next pass counts it
	}
	u.mu.Unlock()
	select {
	case u.wake <- struct{}{}:
	default: // a pass is due already
	}
}

// Start runs the upload loop in the background until Close or until ctx
// is done: a pass at once (to catch up after a restart), then on every
// seal and every interval; after a failure, passes back off exponentially
// from RetryMin to RetryMax. Calling it again does nothing.
func (u *Uploader) Start(ctx context.Context) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.started {
		return
	}
	select {
	case <-u.stop:
		return // closed before it started
	default:
	}
	u.started = true
	go u.run(ctx)
}

func (u *Uploader) run(ctx context.Context) {
	defer close(u.done)
	timer := time.NewTimer(0) // the first pass at once
	defer timer.Stop()
	var backoff time.Duration
	for {
		select {
		case <-u.stop:
			return
		case <-ctx.Done():
			return
		case <-u.wake:
			if backoff > 0 {
				// Failing: the sealed segment waits for the retry (it is
				// remembered), rather than every seal hitting a failing
				// bucket.
				continue
			}
			if !timer.Stop() {
				select {
				case <-timer.C:
				default:
				}
			}
		case <-timer.C:
		}
		if err := u.runPass(ctx, true); err != nil {
			backoff = min(max(2*backoff, u.opts.RetryMin), u.opts.RetryMax)
			u.log.Warn("audit segment upload failed; local files kept, retrying", "err", err, "retry_in", backoff)
			timer.Reset(backoff)
		} else {
			backoff = 0
			timer.Reset(u.cfg.Interval)
		}
	}
}

// Flush runs one whole pass now (waiting for the loop's, if one is under
// way) and returns its error: for a shutdown that wants the final sealed
// segment in the bucket (after Log.Close; bound it with ctx), for a
// one-off upload command, and for tests. It works with or without Start,
// and after Close.
func (u *Uploader) Flush(ctx context.Context) error {
	return u.runPass(ctx, false)
}

// Close stops the loop after the segment being uploaded (if any) is done;
// no other is started. Cancel Start's context instead to abort an upload
// in flight (safe: nothing is removed unless verified).
func (u *Uploader) Close() error {
	u.closeOnce.Do(func() { close(u.stop) })
	u.mu.Lock()
	started := u.started
	u.mu.Unlock()
	if started {
		<-u.done
	}
	return nil
}

// Pending is the number of finished segments whose upload is not verified
// yet, as of the latest pass (plus seals since): for the "segments pending
// upload" metric.
func (u *Uploader) Pending() int { return int(u.pending.Load()) }

// LastError is the latest pass's error, nil once a pass succeeds: for
// /readyz details and alerts (signing does not depend on it).
func (u *Uploader) LastError() error {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.lastErr
}

func (u *Uploader) stopping() bool {
	select {
	case <-u.stop:
		return true
	default:
		return false
	}
}

// runPass runs a pass; the loop's (stoppable) ends early on Close.
func (u *Uploader) runPass(ctx context.Context, stoppable bool) error {
	u.passMu.Lock()
	err := u.pass(ctx, stoppable)
	u.passMu.Unlock()
	u.mu.Lock()
	u.lastErr = err
	u.mu.Unlock()
	if err != nil && u.opts.OnFailure != nil {
		u.opts.OnFailure(err)
	}
	return err
}

// work is one segment a pass handles.
type work struct {
	seg       audit.SegmentInfo
	removable bool // finished for good: remove after a verified upload
}

// pass uploads what is finished, oldest first, and stops at the first
// failure so the bucket always holds a contiguous run of the log.
func (u *Uploader) pass(ctx context.Context, stoppable bool) error {
	// The seals known before the listing: a segment sealed while the
	// directory is being listed may be listed without its index (written
	// at the seal), and uploading it then would upload it twice, the
	// index in a second pass. It is the next pass's.
	u.mu.Lock()
	sealed := maps.Clone(u.sealed)
	u.mu.Unlock()
	segs, err := audit.ListSegments(u.fsys)
	if err != nil {
		return fmt.Errorf("listing %s: %w", u.dir, err)
	}
	anchor := newestWithRecord(u.dir, segs)
	todo := make([]work, 0, len(segs))
	present := make(map[uint64]bool, len(segs))
	for i, s := range segs {
		present[s.First] = true
		switch {
		case i < anchor:
			todo = append(todo, work{seg: s, removable: true})
		case sealed[s.First] && s.HasRecords && s.HasCheckpoints:
			todo = append(todo, work{seg: s})
		}
	}
	u.mu.Lock()
	for first := range sealed {
		if !present[first] {
			delete(u.sealed, first)
		}
	}
	u.mu.Unlock()

	pending := 0
	counted := make([]bool, len(todo))
	for i, w := range todo {
		if !u.isVerified(w.seg) {
			pending++
			counted[i] = true
		}
	}
	u.pending.Store(int64(pending))
	for i, w := range todo {
		if stoppable && u.stopping() {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := u.segment(ctx, w); err != nil {
			return fmt.Errorf("%s: %w", w.seg.Name, err)
		}
		if counted[i] {
			u.pending.Add(-1)
		}
	}
	return nil
}

// isVerified reports whether every local file of seg is verified already.
func (u *Uploader) isVerified(seg audit.SegmentInfo) bool {
	for _, f := range segFiles(seg) {
		if !f.local {
			continue
		}
		st, ok := u.verified[f.name]
		if !ok {
			return false
		}
		fi, err := os.Stat(filepath.Join(u.dir, f.name))
		if err != nil || fi.Size() != st.size || !fi.ModTime().Equal(st.modTime) {
			return false
		}
	}
	return true
}

type segFile struct {
	name     string
	local    bool
	optional bool // an index: a segment need not have one
}

// segFiles lists a segment's files in upload order: records first, then
// its index (when it has one), then the checkpoints, whose presence in the
// bucket marks the segment complete.
func segFiles(seg audit.SegmentInfo) [3]segFile {
	return [3]segFile{{seg.Name, seg.HasRecords, false}, {seg.IndexName, seg.HasIndex, true}, {seg.CheckpointsName, seg.HasCheckpoints, false}}
}

// segment uploads and verifies both files of one segment, then removes
// them if they may go.
func (u *Uploader) segment(ctx context.Context, w work) error {
	fresh := false
	for _, f := range segFiles(w.seg) {
		key := u.cfg.Prefix + f.name
		if !f.local && f.optional {
			continue
		}
		if !f.local {
			// Only an interrupted removal (ours) leaves one file of a
			// finished segment; the other must then be in the bucket.
			ok, err := u.exists(ctx, key)
			if err != nil {
				return err
			}
			if !ok {
				return fmt.Errorf("%s is missing both here and in the bucket (s3://%s/%s): left as it is", f.name, u.cfg.Bucket, key)
			}
			continue
		}
		newly, err := u.ensure(ctx, f.name, key)
		if err != nil {
			return err
		}
		fresh = fresh || newly
	}
	if fresh {
		u.log.Info("audit segment uploaded and verified", "segment", w.seg.Name)
		if u.opts.OnUploaded != nil {
			u.opts.OnUploaded(w.seg.Name)
		}
	}
	if !w.removable || u.cfg.KeepLocal {
		return nil
	}
	// Records first, checkpoints last: a crash in between leaves the
	// checkpoints file (and maybe the index), which the next pass finds
	// verified in the bucket and removes.
	for _, f := range segFiles(w.seg) {
		if !f.local {
			continue
		}
		if err := os.Remove(filepath.Join(u.dir, f.name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("removing the uploaded %s: %w", f.name, err)
		}
		delete(u.verified, f.name)
	}
	u.mu.Lock()
	delete(u.sealed, w.seg.First)
	u.mu.Unlock()
	u.log.Debug("audit segment removed locally after a verified upload", "segment", w.seg.Name)
	return nil
}

// ensure makes the bucket hold name's exact bytes under key: it checks
// what is there, uploads if nothing is, and verifies. It reports whether
// the file was newly verified by this call.
func (u *Uploader) ensure(ctx context.Context, name, key string) (bool, error) {
	path := filepath.Join(u.dir, name)
	fi, err := os.Stat(path)
	if err != nil {
		return false, err
	}
	st := fileState{size: fi.Size(), modTime: fi.ModTime()}
	if v, ok := u.verified[name]; ok && v.size == st.size && v.modTime.Equal(st.modTime) {
		return false, nil
	}
	sum, err := fileSHA256(path, st.size)
	if err != nil {
		return false, err
	}
	head, err := u.head(ctx, key, "")
	switch {
	case isStatus(err, http.StatusNotFound):
		versionID, until, perr := u.put(ctx, path, key, st.size, sum)
		if isStatus(perr, http.StatusPreconditionFailed) {
			// Someone created the object between our HEAD and PUT: it
			// counts only if it is our bytes.
			head, err = u.head(ctx, key, "")
			if err != nil {
				return false, fmt.Errorf("checking %s: %w", key, err)
			}
			if err := u.check(ctx, head, key, "", st.size, sum, time.Time{}); err != nil {
				return false, u.existingErr(key, err)
			}
			break // verified: it is our bytes
		}
		if perr != nil {
			return false, fmt.Errorf("uploading %s: %w", key, perr)
		}
		head, err = u.head(ctx, key, versionID)
		if err != nil {
			return false, fmt.Errorf("verifying the upload of %s: %w", key, err)
		}
		if err := u.check(ctx, head, key, versionID, st.size, sum, until); err != nil {
			return false, fmt.Errorf("the upload of %s does not verify: %w", key, err)
		}
	case err != nil:
		return false, fmt.Errorf("checking %s: %w", key, err)
	default:
		if err := u.check(ctx, head, key, "", st.size, sum, time.Time{}); err != nil {
			return false, u.existingErr(key, err)
		}
	}
	u.verified[name] = st
	return true, nil
}

// existingErr describes an object found in the bucket that does not verify.
func (u *Uploader) existingErr(key string, err error) error {
	if errors.Is(err, errMismatch) {
		return fmt.Errorf("%w: s3://%s/%s: %v", ErrConflict, u.cfg.Bucket, key, err)
	}
	return fmt.Errorf("s3://%s/%s: %w", u.cfg.Bucket, key, err)
}

// put uploads a file with its SHA-256 (S3 recomputes it from the bytes it
// receives and refuses the upload if they differ) and, when configured, an
// Object Lock retention. If-None-Match: * makes it fail rather than replace
// an object that appeared since we looked.
func (u *Uploader) put(ctx context.Context, path, key string, size int64, sum []byte) (versionID string, until time.Time, err error) {
	f, err := os.Open(path)
	if err != nil {
		return "", until, err
	}
	defer f.Close()
	in := &s3.PutObjectInput{
		Bucket:            aws.String(u.cfg.Bucket),
		Key:               aws.String(key),
		Body:              f,
		ContentLength:     aws.Int64(size),
		ChecksumAlgorithm: types.ChecksumAlgorithmSha256,
		ChecksumSHA256:    aws.String(base64.StdEncoding.EncodeToString(sum)),
		IfNoneMatch:       aws.String("*"),
	}
	if u.cfg.ObjectLockMode != "" {
		// Whole seconds, rounded up: never shorter than configured.
		until = u.now().Add(u.cfg.Retention + time.Second - 1).UTC().Truncate(time.Second)
		in.ObjectLockMode = types.ObjectLockMode(u.cfg.ObjectLockMode)
		in.ObjectLockRetainUntilDate = aws.Time(until)
	}
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	out, err := u.client.PutObject(ctx, in)
	if err != nil {
		return "", until, err
	}
	return aws.ToString(out.VersionId), until, nil
}

func (u *Uploader) head(ctx context.Context, key, versionID string) (*s3.HeadObjectOutput, error) {
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	in := &s3.HeadObjectInput{
		Bucket:       aws.String(u.cfg.Bucket),
		Key:          aws.String(key),
		ChecksumMode: types.ChecksumModeEnabled,
	}
	if versionID != "" {
		in.VersionId = aws.String(versionID)
	}
	return u.client.HeadObject(ctx, in)
}

func (u *Uploader) exists(ctx context.Context, key string) (bool, error) {
	_, err := u.head(ctx, key, "")
	switch {
	case err == nil:
		return true, nil
	case isStatus(err, http.StatusNotFound):
		return false, nil
	}
	return false, fmt.Errorf("checking %s: %w", key, err)
}

// check verifies that the object described by head holds exactly size
// bytes with SHA-256 sum, and is locked as configured. until is the
// retain-until date just requested (zero for an object found already
// there).
//
// The size and checksum come from HEAD: the checksum is the one S3
// computed and checked against ours when it stored the bytes. A server
// that does not report a full-object SHA-256 gets a GET instead, and the
// bytes are hashed here.
func (u *Uploader) check(ctx context.Context, head *s3.HeadObjectOutput, key, versionID string, size int64, sum []byte, until time.Time) error {
	if got := aws.ToInt64(head.ContentLength); got != size {
		return fmt.Errorf("%w: %d bytes in the bucket, %d here", errMismatch, got, size)
	}
	want := base64.StdEncoding.EncodeToString(sum)
	if got := aws.ToString(head.ChecksumSHA256); got != "" && head.ChecksumType != types.ChecksumTypeComposite {
		if got != want {
			return fmt.Errorf("%w: SHA-256 %s in the bucket, %s here", errMismatch, got, want)
		}
	} else if err := u.getAndHash(ctx, key, versionID, size, sum); err != nil {
		return err
	}
	if mode := u.cfg.ObjectLockMode; mode != "" {
		got := head.ObjectLockRetainUntilDate
		if string(head.ObjectLockMode) != mode || got == nil {
			return fmt.Errorf("%w: lock mode %q, want %s (is Object Lock enabled on the bucket, and may these credentials s3:GetObjectRetention?)", ErrNotLocked, head.ObjectLockMode, mode)
		}
		// An object found already there (an earlier upload whose answer
		// was lost, or one kept with keep_local) got its date when it was
		// written; only a fresh upload can be held to the date just asked.
		if !until.IsZero() && got.Before(until.Add(-time.Second)) {
			return fmt.Errorf("%w: retained until %s, asked for %s", ErrNotLocked, got.UTC().Format(time.RFC3339), until.Format(time.RFC3339))
		}
	}
	return nil
}

// getAndHash downloads the object and compares its bytes with sum.
func (u *Uploader) getAndHash(ctx context.Context, key, versionID string, size int64, sum []byte) error {
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	in := &s3.GetObjectInput{Bucket: aws.String(u.cfg.Bucket), Key: aws.String(key)}
	if versionID != "" {
		in.VersionId = aws.String(versionID)
	}
	out, err := u.client.GetObject(ctx, in)
	if err != nil {
		return fmt.Errorf("reading it back: %w", err)
	}
	defer out.Body.Close()
	h := sha256.New()
	n, err := io.Copy(h, out.Body)
	if err != nil {
		return fmt.Errorf("reading it back: %w", err)
	}
	if n != size || !bytes.Equal(h.Sum(nil), sum) {
		return fmt.Errorf("%w: the bytes read back (%d) differ from the %d here", errMismatch, n, size)
	}
	return nil
}

// fileSHA256 hashes a finished file, which must have the size just seen.
func fileSHA256(path string, size int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return nil, err
	}
	if n != size {
		return nil, fmt.Errorf("%s changed size while being read (%d, then %d): not a finished segment", path, size, n)
	}
	return h.Sum(nil), nil
}

// isStatus reports whether err is an HTTP response with that status.
func isStatus(err error, status int) bool {
	var re interface{ HTTPStatusCode() int }
	return err != nil && errors.As(err, &re) && re.HTTPStatusCode() == status
}

// newestWithRecord returns the index of the newest segment whose first
// record is complete and durable (the segment startup recovery resumes
// from), or -1.
func newestWithRecord(dir string, segs []audit.SegmentInfo) int {
	for i := len(segs) - 1; i >= 0; i-- {
		if holdsRecord(dir, segs[i]) {
			return i
		}
	}
	return -1
}

// holdsRecord reports whether seg's first line is a complete record with
// its first seq, made durable. A preallocated segment is zeros until its
// first batch; a torn first line is a batch that was never acknowledged.
//
// The fsync matters: the writer may not have synced the batch we just read
// from the page cache. If power failed before it did, recovery would find
// this segment empty, remove it and resume from the one before, which by
// then we might have removed, and the log would start over at seq 0.
func holdsRecord(dir string, seg audit.SegmentInfo) bool {
	if !seg.HasRecords || !seg.HasCheckpoints {
		return false
	}
	f, err := os.Open(filepath.Join(dir, seg.Name))
	if err != nil {
		return false
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 64<<10)
	var line []byte
	for {
		b, err := br.ReadSlice('\n')
		line = append(line, b...)
		if err == nil {
			break
		}
		if err != bufio.ErrBufferFull || len(line) > audit.MaxRecordBytes+1 {
			return false
		}
	}
	line = line[:len(line)-1]
	if bytes.IndexByte(line, 0) >= 0 {
		return false
	}
	if rec, err := audit.DecodeRecord(line); err != nil || rec.Seq != seg.First {
		return false
	}
	return f.Sync() == nil
}
