package audit

import (
	"context"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestConcurrentAppendThenVerify(t *testing.T) {
	k := newTestKeys(t)
	dir := t.TempDir()
	l := openLog(t, testConfig(dir), k.options())

	const writers, perWriter = 64, 40
	var mu sync.Mutex
	acked := map[uint64]string{}
	var wg sync.WaitGroup
	for g := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < perWriter; i++ {
				// Every fifth call appends three records at once (a
				// DeleteObjects): they must get consecutive seqs.
				n := 1
				if i%5 == 0 {
					n = 3
				}
				recs := make([]*Record, n)
				for j := range recs {
					recs[j] = accessRecord(g*1000 + i*10 + j)
				}
				if err := l.Append(context.Background(), recs...); err != nil {
					t.Errorf("Append: %v", err)
					return
				}
				for j, r := range recs {
					if j > 0 && r.Seq != recs[j-1].Seq+1 {
						t.Errorf("records of one Append not consecutive: %d then %d", recs[j-1].Seq, r.Seq)
					}
				}
				mu.Lock()
				for _, r := range recs {
					if _, dup := acked[r.Seq]; dup {
						t.Errorf("seq %d acknowledged twice", r.Seq)
					}
					acked[r.Seq] = r.ID
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	st := l.Stats()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d records in %d batches (%.1f records per fdatasync)", st.Records, st.Batches, float64(st.Records)/float64(st.Batches))

	res := verifyDir(t, dir, k)
	recs := readLog(t, dir)
	if uint64(len(recs)) != res.Next {
		t.Fatalf("query read %d records, verify %d", len(recs), res.Next)
	}
	for i, r := range recs {
		if r.Seq != uint64(i) {
			t.Fatalf("record %d has seq %d: not gap-free", i, r.Seq)
		}
		if id, ok := acked[r.Seq]; ok && id != r.ID {
			t.Fatalf("seq %d: acknowledged id %s, log has %s", r.Seq, id, r.ID)
		}
	}
	wantAccess := writers * (perWriter + 2*(perWriter/5))
	if len(acked) != wantAccess {
		t.Fatalf("%d records acknowledged, want %d", len(acked), wantAccess)
	}
	// start, then the access records (and seals of full segments), then
	// stop and the final seal.
	if got := strings.ReplaceAll(events(recs), "seal,", ""); got != "start,stop,seal" {
		t.Fatalf("lifecycle events %q", got)
	}
	if res.Uncovered != 0 || res.Latest == nil || res.Latest.Size != int64(len(recs)) {
		t.Fatalf("after Close every record must be under the final checkpoint: %+v", res)
	}
}

func TestAppendSetsFieldsAndHMACsToken(t *testing.T) {
	k := newTestKeys(t)
	dir := t.TempDir()
	l := openLog(t, testConfig(dir), k.options())
	r := accessRecord(1)
	if err := l.Append(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	if r.Version != 1 || r.Seq != 1 || len(r.ID) != 32 || r.Time.IsZero() || r.Node != "node-a" {
		t.Fatalf("assigned fields: %+v", r)
	}
	l.Close()
	data, err := os.ReadFile(filepath.Join(dir, SegmentName(0)))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	got, err := DecodeRecord([]byte(lines[1]))
	if err != nil {
		t.Fatal(err)
	}
	want := newTokenMAC(k.hmac).sum(&r.Principal.TokenSHA256)
	if got.Principal.TokenHMAC != hex.EncodeToString(want[:]) {
		t.Fatalf("token_hmac %q, want HMAC of the token hash", got.Principal.TokenHMAC)
	}
	if strings.Contains(string(data), hex.EncodeToString(r.Principal.TokenSHA256[:])) {
		t.Fatal("the token's SHA-256 itself was written")
	}
}

func TestInvalidRecordsRefused(t *testing.T) {
	k := newTestKeys(t)
	l := openLog(t, testConfig(t.TempDir()), k.options())
	defer l.Close()
	bad := []*Record{
		{Kind: "x"},
		{Kind: KindAccess, Decision: "maybe", Status: 200},
		{Kind: KindAccess, Decision: DecisionAllow, Status: 200}, // no role
		{Kind: KindAccess, Decision: DecisionDeny, Role: RoleObject, Status: 403, Signing: &Signing{}},
		{Kind: KindLifecycle, Event: EventStart},
		{Kind: KindLifecycle, Event: EventSeal},
	}
	sig := accessRecord(1)
	sig.Signing.SignatureSHA256 = "not-a-digest"
	bad = append(bad, sig)
	for _, r := range bad {
		if err := l.Append(context.Background(), r); !errors.Is(err, ErrInvalidRecord) {
			t.Errorf("%+v: err %v, want ErrInvalidRecord", r, err)
		}
	}
	if err := l.Healthy(); err != nil {
		t.Fatalf("invalid records must not make the log unhealthy: %v", err)
	}
	ok := &Record{Kind: KindLifecycle, Event: EventPolicyRevision, Detail: map[string]string{"revision": "r2"}}
	if err := l.Append(context.Background(), ok); err != nil {
		t.Fatal(err)
	}
}

func TestRotationBySize(t *testing.T) {
	k := newTestKeys(t)
	dir := t.TempDir()
	cfg := testConfig(dir)
	cfg.SegmentMaxBytes = minSegmentBytes
	var sealed []SegmentInfo
	var smu sync.Mutex
	opts := k.options()
	opts.OnSeal = func(s SegmentInfo) {
		smu.Lock()
		sealed = append(sealed, s)
		smu.Unlock()
	}
	l := openLog(t, cfg, opts)
	for i := range 60 {
		if err := l.Append(context.Background(), accessRecord(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	segs := segmentFiles(t, dir)
	if len(segs) < 8 {
		t.Fatalf("%d segments; 60 records of ~700 bytes in 4 KiB segments should make about 10", len(segs))
	}
	if len(sealed) != len(segs) {
		t.Fatalf("OnSeal called %d times for %d segments", len(sealed), len(segs))
	}
	for _, s := range segs {
		if fi, _ := os.Stat(s); fi.Size() > minSegmentBytes+2048 {
			t.Fatalf("%s is %d bytes: rotation is late", s, fi.Size())
		}
	}
	res := verifyDir(t, dir, k)
	if res.Segments != len(segs) {
		t.Fatalf("verify saw %d segments", res.Segments)
	}
}

func TestAgeRotationWithInjectedClock(t *testing.T) {
	k := newTestKeys(t)
	dir := t.TempDir()
	var now atomic.Int64
	now.Store(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC).UnixNano())
	opts := k.options()
	opts.Now = func() time.Time { return time.Unix(0, now.Load()) }
	l := openLog(t, testConfig(dir), opts)
	if err := l.Append(context.Background(), accessRecord(1)); err != nil {
		t.Fatal(err)
	}
	now.Add(int64(61 * time.Minute))
	if err := l.Append(context.Background(), accessRecord(2)); err != nil {
		t.Fatal(err)
	}
	// The batch that found the segment older than an hour rotated it.
	waitFor(t, func() bool { return l.Stats().Segment != SegmentName(0) })
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if n := len(segmentFiles(t, dir)); n != 2 {
		t.Fatalf("%d segments, want 2", n)
	}
	recs := readLog(t, dir)
	if recs[2].Time.Sub(recs[1].Time) != 61*time.Minute {
		t.Fatalf("record times follow the injected clock: %v then %v", recs[1].Time, recs[2].Time)
	}
	verifyDir(t, dir, k)
}

func TestCheckpointAndHeartbeatTiming(t *testing.T) {
	k := newTestKeys(t)
	dir := t.TempDir()
	cfg := testConfig(dir)
	cfg.CheckpointInterval = 30 * time.Millisecond
	cfg.HeartbeatInterval = 80 * time.Millisecond
	l := openLog(t, cfg, k.options())
	defer l.Close()

	// Records arriving: a checkpoint covers them within the interval
	// even though no further record arrives.
	for i := range 5 {
		if err := l.Append(context.Background(), accessRecord(i)); err != nil {
			t.Fatal(err)
		}
	}
	size := l.Stats().TreeSize
	start := time.Now()
	waitFor(t, func() bool { return l.Stats().LastCheckpointSize >= size })
	if d := time.Since(start); d > 5*time.Second { // far above scheduling noise; the heartbeat is 80ms
		t.Fatalf("checkpoint after %v, interval 30ms", d)
	}
	// Idle: heartbeats, each followed by a checkpoint.
	waitFor(t, func() bool {
		s := l.Stats()
		return s.TreeSize >= size+2 && s.LastCheckpointSize == s.TreeSize
	})
	recs := readLog(t, dir)
	if !strings.Contains(events(recs), "heartbeat,heartbeat") {
		t.Fatalf("events %q: want heartbeats while idle", events(recs))
	}
	res := verifyDir(t, dir, k)
	if res.Uncovered != 0 {
		t.Fatalf("%d records not covered after the heartbeat's checkpoint", res.Uncovered)
	}
}

func TestReopenContinuesTheLog(t *testing.T) {
	k := newTestKeys(t)
	dir := t.TempDir()
	for run := range 3 {
		l := openLog(t, testConfig(dir), k.options())
		for i := range 10 {
			if err := l.Append(context.Background(), accessRecord(run*10+i)); err != nil {
				t.Fatal(err)
			}
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
	recs := readLog(t, dir)
	if got := events(recs); got != "start,stop,seal,start,stop,seal,start,stop,seal" {
		t.Fatalf("events %q", got)
	}
	if recs[13].Detail["previous"] != "clean" {
		t.Fatalf("second start: %v", recs[13].Detail)
	}
	res := verifyDir(t, dir, k)
	if res.Segments != 3 || res.Next != 39 {
		t.Fatalf("%+v", res)
	}
}

func TestOpenRefusesSecondWriterAndOtherNode(t *testing.T) {
	k := newTestKeys(t)
	dir := t.TempDir()
	l := openLog(t, testConfig(dir), k.options())
	if _, err := Open(testConfig(dir), k.options()); err == nil || !strings.Contains(err.Error(), "in use") {
		t.Fatalf("second Open on the same dir: %v", err)
	}
	l.Close()
	cfg := testConfig(dir)
	cfg.NodeID = "node-b"
	if _, err := Open(cfg, k.options()); err == nil || !strings.Contains(err.Error(), "node-a") {
		t.Fatalf("Open as another node: %v", err)
	}
	cfg.NodeID = "" // a defaulted node id adopts the log's
	l = openLog(t, cfg, k.options())
	if l.Node() != "node-a" {
		t.Fatalf("node %q", l.Node())
	}
	l.Close()
}

func TestCheckpointKeyRotationIsRecorded(t *testing.T) {
	k1, k2 := newTestKeys(t), newTestKeys(t)
	dir := t.TempDir()
	l := openLog(t, testConfig(dir), k1.options())
	l.Close()
	opts := k2.options()
	opts.HMACKey = k1.hmac
	l = openLog(t, testConfig(dir), opts)
	l.Close()
	if !strings.Contains(events(readLog(t, dir)), "checkpoint_key") {
		t.Fatal("no checkpoint_key record after the key changed")
	}
	both, _ := ParseVerifiers(k1.verifier, k2.verifier)
	if _, err := Verify(os.DirFS(dir), VerifyOptions{Verifiers: both}); err != nil {
		t.Fatal(err)
	}
	if _, err := Verify(os.DirFS(dir), VerifyOptions{Verifiers: k2.verifiers}); err == nil {
		t.Fatal("verify with only the new key must fail on the old checkpoints")
	}
}

func TestQueueFullWaitsForContext(t *testing.T) {
	k := newTestKeys(t)
	dir := t.TempDir()
	cfg := testConfig(dir)
	cfg.QueueMax = 2
	gate := newSyncGate()
	opts := k.options()
	opts.OpenFile = gate.open
	l := openLog(t, cfg, opts)
	gate.blocking.Store(true)
	errs := make(chan error, 4)
	go func() { errs <- l.Append(context.Background(), accessRecord(0)) }()
	<-gate.inSync // the writer holds that batch, blocked in fdatasync
	for i := 1; i < 3; i++ {
		go func() { errs <- l.Append(context.Background(), accessRecord(i)) }()
	}
	waitFor(t, func() bool { return l.Stats().QueueDepth == 2 })
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := l.Append(ctx, accessRecord(9)); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Append into a full queue: %v, want the context's error", err)
	}
	gate.release()
	for range 3 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	l.Close()
	verifyDir(t, dir, k)
}

// syncGate holds the segment files' fdatasync while blocking is set: a
// hung disk. inSync says a sync is held; release lets it, and every later
// one, through (once; safe to call again, as from a deferred call).
type syncGate struct {
	blocking atomic.Bool
	block    chan struct{}
	inSync   chan struct{}
	release  func()
}

func newSyncGate() *syncGate {
	g := &syncGate{block: make(chan struct{}), inSync: make(chan struct{}, 1)}
	g.release = sync.OnceFunc(func() { g.blocking.Store(false); close(g.block) })
	return g
}

// open is an Options.OpenFile whose segment files sync through the gate.
func (g *syncGate) open(name string, flag int, perm os.FileMode) (File, error) {
	f, err := openOSFile(name, flag, perm)
	if err != nil || !strings.HasSuffix(name, ".jsonl") {
		return f, err
	}
	return &hookFile{File: f, beforeSync: func() {
		if g.blocking.Load() {
			select {
			case g.inSync <- struct{}{}:
			default:
			}
			<-g.block
		}
	}}, nil
}

// hookFile runs a hook before Sync.
type hookFile struct {
	File
	beforeSync func()
}

func (f *hookFile) Sync() error {
	f.beforeSync()
	return f.File.Sync()
}

func waitFor(t testing.TB, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached in 10s")
		}
		time.Sleep(2 * time.Millisecond)
	}
}
