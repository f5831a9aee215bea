package export

import (
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/countersign/countersign/audit"
	"golang.org/x/mod/sumdb/note"
)

// testLog is a log written by the audit package: several sealed segments
// across midnight and, with open, a last segment still being written.
type testLog struct {
	dir       string
	verifiers note.Verifiers
	records   int // appended by the test (the log adds its own)
}

// odd strings: what the encoder must escape, and what Parquet strings and
// DuckDB must carry through unchanged.
var odd = []string{
	"q\"uote \\back\\slash\" \b\f\n\r\t\v\x00\x1f\x7f end",
	"ls\u2028ps\u2029 \ufffd \U0001F600 日本語 é",
	"</script>&<>'",
	"",
}

// writeTestLog appends n access records (and a config record every 50)
// one minute apart from 2026-11-30T23:00Z, so that segments start on
// both days and one spans midnight; it closes the log (sealing the last
// segment) unless open, in which case the log is closed at cleanup.
func writeTestLog(t testing.TB, n int, open bool) *testLog {
	t.Helper()
	dir := t.TempDir()
	skey, vkey, hkey, err := audit.GenerateKeys("countersign-test")
	if err != nil {
		t.Fatal(err)
	}
	vs, err := audit.ParseVerifiers(vkey)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 11, 30, 23, 0, 0, 0, time.UTC)
	var now atomic.Int64
	now.Store(t0.UnixNano())
	cfg := audit.Config{
		Dir: dir, NodeID: "node-a", SegmentMaxBytes: 16 << 10,
		CheckpointInterval: 20 * time.Millisecond, HeartbeatInterval: time.Hour,
	}
	opts := audit.Options{CheckpointKey: skey, HMACKey: []byte(hkey), Now: func() time.Time { return time.Unix(0, now.Load()) }}
	l, err := audit.Open(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	tl := &testLog{dir: dir, verifiers: vs}
	for i := range n {
		now.Store(t0.Add(time.Duration(i)*time.Minute + time.Duration(i)*1234567).UnixNano())
		recs := []*audit.Record{testRecord(i)}
		if i%50 == 49 {
			recs = append(recs, &audit.Record{Kind: audit.KindLifecycle, Event: audit.EventConfig,
				Detail: map[string]string{"i": fmt.Sprint(i), "odd": odd[i%len(odd)]}})
		}
		if err := l.Append(context.Background(), recs...); err != nil {
			t.Fatal(err)
		}
		tl.records += len(recs)
	}
	if open {
		t.Cleanup(func() { l.Close() })
		return tl
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return tl
}

var principals = []string{"alice", "bob", "carol"}

// testRecord varies every optional part of an access record with i.
func testRecord(i int) *audit.Record {
	r := &audit.Record{
		Kind:      audit.KindAccess,
		SourceIP:  "10.12.7.31",
		RequestID: fmt.Sprintf("req-%016x", i),
		Principal: &audit.Principal{
			Issuer:      "https://idp.example.com/realms/lakehouse",
			ID:          principals[i%3],
			Groups:      []string{"analytics", "etl-writers"},
			JTI:         fmt.Sprintf("jti-%d", i%11),
			TokenSHA256: sha256.Sum256([]byte(fmt.Sprintf("token-%d", i%7))),
		},
		Operation:      "GetObject",
		Action:         "s3:GetObject",
		Access:         "read",
		Bucket:         []string{"lake", "raw"}[i%2],
		Key:            fmt.Sprintf("warehouse/sales.db/orders/data/k%d.parquet", i%13),
		Region:         "us-east-1",
		Table:          &audit.Table{Prefix: "prod", Namespace: []string{"sales", "eu"}, Name: "orders"},
		Role:           audit.RoleObject,
		Decision:       audit.DecisionAllow,
		Reason:         odd[i%len(odd)],
		Status:         200,
		PolicyRevision: "sha256:9f2c4e1a7b3d",
		EvalMicros:     int64(i % 97),
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
	switch i % 7 {
	case 1: // denied: no signing
		r.Decision, r.Status, r.Signing = audit.DecisionDeny, 403, nil
	case 2: // not authenticated: no principal
		r.Decision, r.Status, r.Signing, r.Principal, r.Role = audit.DecisionUnauthenticated, 401, nil, nil, audit.RoleNone
	case 3: // a list: prefix, no key, legacy route
		p := fmt.Sprintf("warehouse/k%d", i%5)
		r.Operation, r.Action, r.Access, r.Key, r.Prefix, r.Role, r.Table = "ListObjectsV2", "s3:ListBucket", "list", "", &p, audit.RoleBucket, nil
	case 4: // a version; empty groups and namespace
		r.VersionID = fmt.Sprintf("v%d", i)
		r.Principal.Groups = []string{}
		r.Table.Namespace = []string{}
		r.Signing.SignedHeaders = []string{}
		// signed with a per-principal session
		r.Signing.AccessKeyID, r.Signing.SourceIdentity, r.Signing.SessionName = "ASIASESSION", "alice=20smith", "alice=20smith"
	case 5: // an empty list prefix is not an absent one
		p := ""
		r.Operation, r.Action, r.Access, r.Key, r.Prefix, r.Role = "ListObjectsV2", "s3:ListBucket", "list", "", &p, audit.RoleBucket
	case 6: // a credential mint: prefix, mint details, no signing
		p := "warehouse/sales.db/orders/"
		r.Operation, r.Action, r.Access, r.Key, r.Prefix, r.Role, r.Signing = audit.OperationMint, "sts:AssumeRole", "read", "", &p, audit.RolePrefix, nil
		r.Mint = &audit.Mint{Actions: []string{"s3:GetObject", "s3:ListBucket"}, DurationSeconds: 900, Expires: "2026-11-30T12:15:00Z",
			AccessKeyID: fmt.Sprintf("ASIAVEND%d", i), SourceIdentity: principals[i%3], SessionName: "countersign-" + principals[i%3]}
	}
	return r
}

// lines returns every line of the log that is part of it, by seq, with
// the state of its segment.
func (tl *testLog) lines(t testing.TB) (map[int64][]byte, map[int64]audit.SegmentState) {
	t.Helper()
	fsys := os.DirFS(tl.dir)
	segs, err := audit.ListSegments(fsys)
	if err != nil {
		t.Fatal(err)
	}
	lines := map[int64][]byte{}
	states := map[int64]audit.SegmentState{}
	for i, seg := range segs {
		if !seg.HasRecords {
			continue
		}
		var seqs []int64
		state, err := audit.ReadSegment(fsys, segs, i, func(line []byte) error {
			rec, err := audit.DecodeRecord(line)
			if err != nil {
				return err
			}
			lines[int64(rec.Seq)] = append([]byte(nil), line...)
			seqs = append(seqs, int64(rec.Seq))
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range seqs {
			states[s] = state
		}
	}
	return lines, states
}
