package upload

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/note"

	"github.com/countersign/countersign/audit"
)

// Helpers around a real audit.Log with tiny segments (audit's minimum,
// 4096 bytes: about six records), so segments seal after a few appends.

const testNode = "node-a"

type logKeys struct {
	signer    string
	hmac      []byte
	verifiers note.Verifiers
}

func newLogKeys(t testing.TB) logKeys {
	t.Helper()
	s, v, h, err := audit.GenerateKeys("countersign-upload-test")
	if err != nil {
		t.Fatal(err)
	}
	vs, err := audit.ParseVerifiers(v)
	if err != nil {
		t.Fatal(err)
	}
	return logKeys{signer: s, hmac: []byte(h), verifiers: vs}
}

type testLog struct {
	t    testing.TB
	dir  string
	keys logKeys
	*audit.Log
	next  int // index for the next accessRecord
	seals atomic.Int32
}

// openTestLog opens the log in dir; onSeal (may be nil) is the uploader's
// Notify. openFile, if set, is audit's fault-injection seam.
func openTestLog(t testing.TB, dir string, k logKeys, onSeal func(audit.SegmentInfo), openFile func(string, int, os.FileMode) (audit.File, error)) *testLog {
	t.Helper()
	tl := &testLog{t: t, dir: dir, keys: k}
	l, err := audit.Open(audit.Config{
		Dir:                dir,
		NodeID:             testNode,
		SegmentMaxBytes:    4096,
		CheckpointInterval: 10 * time.Millisecond,
		HeartbeatInterval:  time.Hour,
	}, audit.Options{
		CheckpointKey: k.signer,
		HMACKey:       k.hmac,
		RetryInterval: 10 * time.Millisecond,
		OpenFile:      openFile,
		OnSeal: func(s audit.SegmentInfo) {
			tl.seals.Add(1)
			if onSeal != nil {
				onSeal(s)
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	tl.Log = l
	return tl
}

// appendUntilSeals appends records until n more segments were sealed, then
// settles.
func (l *testLog) appendUntilSeals(n int) {
	l.t.Helper()
	want := l.seals.Load() + int32(n)
	var last *audit.Record
	for l.seals.Load() < want {
		last = l.append()
	}
	l.settle(last)
}

// settle makes sure the current segment holds a record and no rotation is
// pending: which segments are finished is then known exactly. It is so
// once the last record appended is the first of its segment (a record
// that small cannot fill a segment); otherwise it appends until one is,
// which may seal another segment. (Append returns before the writer's
// rotation check, but the writer handles one batch at a time, so a record
// appended after a rotating batch lands in the new segment.)
func (l *testLog) settle(last *audit.Record) {
	l.t.Helper()
	for range 20 {
		if last != nil {
			if _, err := os.Stat(filepath.Join(l.dir, audit.SegmentName(last.Seq))); err == nil {
				return
			}
		}
		last = l.append()
	}
	l.t.Fatal("no record started a segment after 20 appends")
}

func (l *testLog) append() *audit.Record {
	l.t.Helper()
	r := accessRecord(l.next)
	l.next++
	if err := l.Append(context.Background(), r); err != nil {
		l.t.Fatalf("append: %v", err)
	}
	return r
}

// currentFirst is the first seq of the segment being written.
func (l *testLog) currentFirst() uint64 {
	l.t.Helper()
	name := l.Stats().Segment
	var first uint64
	if _, err := fmt.Sscanf(name, "seg-%020d.jsonl", &first); err != nil {
		l.t.Fatalf("current segment %q: %v", name, err)
	}
	return first
}

// accessRecord is a realistic allowed GetObject record, varied by i.
func accessRecord(i int) *audit.Record {
	tok := sha256.Sum256([]byte(fmt.Sprintf("token-%d", i%7)))
	return &audit.Record{
		Kind:      audit.KindAccess,
		SourceIP:  "10.12.7.31",
		RequestID: fmt.Sprintf("req-%016x", i),
		Principal: &audit.Principal{
			Issuer:      "https://idp.example.com/realms/lakehouse",
			ID:          fmt.Sprintf("spark-etl-%d", i%5),
			Groups:      []string{"analytics", "etl-writers"},
			JTI:         "5b1e0f2c-9a4d-4c1e-8f61-0d7a3e2b9c41",
			TokenSHA256: tok,
		},
		Operation: "GetObject",
		Action:    "s3:GetObject",
		Access:    "read",
		Bucket:    "lakehouse-prod",
		Key:       fmt.Sprintf("warehouse/sales.db/orders/data/dt=2026-11-30/00042-7-%08d-part-00000.parquet", i),
		Region:    "us-east-1",
		Role:      audit.RoleObject,
		Decision:  audit.DecisionAllow,
		Status:    200,
		Signing: &audit.Signing{
			AccessKeyID:            "AKIAIOSFODNN7EXAMPLE",
			Scope:                  "20261130/us-east-1/s3/aws4_request",
			AmzDate:                "20261130T120000Z",
			SignedHeaders:          []string{"host", "x-amz-content-sha256", "x-amz-date"},
			Payload:                "UNSIGNED-PAYLOAD",
			CanonicalRequestSHA256: fmt.Sprintf("%064x", i),
			SignatureSHA256:        fmt.Sprintf("%064x", i*7+1),
		},
	}
}

// localSegments lists the segments in dir.
func localSegments(t testing.TB, dir string) []audit.SegmentInfo {
	t.Helper()
	segs, err := audit.ListSegments(os.DirFS(dir))
	if err != nil {
		t.Fatal(err)
	}
	return segs
}

func segmentNames(segs []audit.SegmentInfo) []string {
	var out []string
	for _, s := range segs {
		out = append(out, s.Name)
	}
	return out
}

// countRecords counts the records Query finds in fsys.
func countRecords(t testing.TB, fsys fs.FS) uint64 {
	t.Helper()
	var n uint64
	err := audit.Query(context.Background(), fsys, audit.Filter{}, func(*audit.Record, []byte) error {
		n++
		return nil
	})
	if err != nil {
		t.Fatalf("query: %v", err)
	}
	return n
}

// recorder collects OnUploaded and OnFailure calls.
type recorder struct {
	mu       sync.Mutex
	uploaded []string
	failures []error
}

func (r *recorder) onUploaded(name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.uploaded = append(r.uploaded, name)
}

func (r *recorder) onFailure(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failures = append(r.failures, err)
}

func (r *recorder) snapshot() (uploaded []string, failures []error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.uploaded), slices.Clone(r.failures)
}

// flakyFile fails the next WriteAt of a segment file when armed: a write
// error the log answers by abandoning the segment.
type flakyFile struct {
	*os.File
	arm *atomic.Bool
}

func (f *flakyFile) WriteAt(p []byte, off int64) (int, error) {
	if strings.HasSuffix(f.Name(), ".jsonl") && f.arm.CompareAndSwap(true, false) {
		return 0, errors.New("injected: input/output error")
	}
	return f.File.WriteAt(p, off)
}

func flakyOpen(arm *atomic.Bool) func(string, int, os.FileMode) (audit.File, error) {
	return func(name string, flag int, perm os.FileMode) (audit.File, error) {
		f, err := os.OpenFile(name, flag, perm)
		if err != nil {
			return nil, err
		}
		return &flakyFile{File: f, arm: arm}, nil
	}
}
