package audit

import (
	"context"
	"os"
	"testing"
	"time"
)

// readStates reads every segment with ReadSegment: the states, and the
// seqs of the lines it passed.
func readStates(t *testing.T, dir string) ([]SegmentState, []uint64) {
	t.Helper()
	fsys := os.DirFS(dir)
	segs, err := ListSegments(fsys)
	if err != nil {
		t.Fatal(err)
	}
	var states []SegmentState
	var seqs []uint64
	for i, seg := range segs {
		if !seg.HasRecords {
			continue
		}
		st, err := ReadSegment(fsys, segs, i, func(line []byte) error {
			r, err := DecodeRecord(line)
			if err != nil {
				t.Fatalf("%s: a line that is not a record: %v", seg.Name, err)
			}
			seqs = append(seqs, r.Seq)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		states = append(states, st)
	}
	return states, seqs
}

// TestReadSegmentStates: the newest segment of a live log is open and
// sealed once closed; every earlier one is sealed; the lines passed are
// the log's records, in order.
func TestReadSegmentStates(t *testing.T) {
	k := newTestKeys(t)
	dir := t.TempDir()
	cfg := testConfig(dir)
	cfg.SegmentMaxBytes = 8 << 10
	l := openLog(t, cfg, k.options())
	for i := range 40 {
		if err := l.Append(context.Background(), accessRecord(i)); err != nil {
			t.Fatal(err)
		}
	}
	states, _ := readStates(t, dir)
	if len(states) < 3 || states[len(states)-1] != SegmentOpen {
		t.Fatalf("live log: states %v, want several, the last open", states)
	}
	for _, st := range states[:len(states)-1] {
		if st != SegmentSealed {
			t.Fatalf("live log: states %v, want all but the last sealed", states)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	states, seqs := readStates(t, dir)
	if states[len(states)-1] != SegmentSealed {
		t.Fatalf("closed log: states %v, want the last sealed", states)
	}
	recs := readLog(t, dir)
	if len(seqs) != len(recs) {
		t.Fatalf("ReadSegment passed %d lines, the log has %d records", len(seqs), len(recs))
	}
	for i, s := range seqs {
		if s != uint64(i) {
			t.Fatalf("line %d has seq %d", i, s)
		}
	}
}

// TestReadSegmentAbandoned: a segment abandoned after a write failed
// halfway is passed only up to its valid bytes, and is neither sealed nor
// open.
func TestReadSegmentAbandoned(t *testing.T) {
	k := newTestKeys(t)
	dir := t.TempDir()
	cfg := testConfig(dir)
	fz := &faults{suffix: ".jsonl"}
	opts := k.options()
	opts.OpenFile = fz.open
	opts.RetryInterval = 20 * time.Millisecond
	l := openLog(t, cfg, opts)
	for i := range 10 {
		if err := l.Append(context.Background(), accessRecord(i)); err != nil {
			t.Fatal(err)
		}
	}
	fz.failWrite.Store(true)
	if err := l.Append(context.Background(), accessRecord(10)); err == nil {
		t.Fatal("Append succeeded through a failing write")
	}
	fz.failWrite.Store(false)
	waitFor(t, func() bool { return l.Healthy() == nil })
	if err := l.Append(context.Background(), accessRecord(11)); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	res := verifyDir(t, dir, k)
	if len(res.Abandoned) != 1 || res.Abandoned[0].IgnoredBytes == 0 {
		t.Fatalf("abandoned %+v: want one segment with an ignored tail", res.Abandoned)
	}
	states, seqs := readStates(t, dir)
	if len(states) != 2 || states[0] != SegmentAbandoned || states[1] != SegmentSealed {
		t.Fatalf("states %v, want abandoned, sealed", states)
	}
	recs := readLog(t, dir)
	if len(seqs) != len(recs) {
		t.Fatalf("ReadSegment passed %d lines, the log has %d records (the ignored tail must not be passed)", len(seqs), len(recs))
	}
	for i, s := range seqs {
		if s != uint64(i) {
			t.Fatalf("line %d has seq %d", i, s)
		}
	}
}
