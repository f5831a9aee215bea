package main

import (
	"context"
	"crypto/sha256"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/countersign/countersign/audit"
	"github.com/countersign/countersign/audit/export"
	"github.com/parquet-go/parquet-go"
)

// oddKey needs escaping in JSON and quoting in SQL, and is not ASCII.
const oddKey = "t/it's \"odd\"\n日本\u2028.parquet"

// exportFixture writes a closed log (keys from "audit keygen") of n access
// records one minute apart from 2026-11-30T23:00Z, across midnight and
// many segments: principals alice, bob, carol and unauthenticated callers,
// two buckets, list prefixes, object versions, the odd key, config records.
func exportFixture(t *testing.T, n int) (pub, dir string) {
	t.Helper()
	keys := filepath.Join(t.TempDir(), "keys")
	if code, out, errOut := runAuditCmd(t, "keygen", "-name", "countersign-test", "-out", keys); code != 0 {
		t.Fatalf("keygen: %d %s %s", code, out, errOut)
	}
	dir = filepath.Join(t.TempDir(), "audit")
	t0 := time.Date(2026, 11, 30, 23, 0, 0, 0, time.UTC)
	var now atomic.Int64
	now.Store(t0.UnixNano())
	l, err := audit.Open(audit.Config{
		Dir: dir, NodeID: "node-1", SegmentMaxBytes: 16 << 10,
		CheckpointKeyFile: filepath.Join(keys, "checkpoint.key"),
		HMACKeyFile:       filepath.Join(keys, "hmac.key"),
	}, audit.Options{Now: func() time.Time { return time.Unix(0, now.Load()) }})
	if err != nil {
		t.Fatal(err)
	}
	who := []string{"alice", "bob", "carol"}
	for i := range n {
		now.Store(t0.Add(time.Duration(i)*time.Minute + time.Duration(i)*1001).UnixNano())
		r := &audit.Record{
			Kind: audit.KindAccess, SourceIP: "10.0.0.7", RequestID: fmt.Sprintf("r%d", i),
			Principal: &audit.Principal{Issuer: "idp", ID: who[i%3], Groups: []string{"g"}, TokenSHA256: sha256.Sum256([]byte(who[i%3]))},
			Operation: "GetObject", Action: "s3:GetObject", Access: "read",
			Bucket: []string{"lake", "raw"}[i/2%2], Key: fmt.Sprintf("t/k%d.parquet", i%11), Region: "us-east-1",
			Role: audit.RoleObject, Decision: audit.DecisionAllow, Status: 200, EvalMicros: int64(i % 50),
		}
		switch i % 9 {
		case 1:
			r.Decision, r.Status = audit.DecisionDeny, 403
		case 2:
			r.Principal, r.Decision, r.Status, r.Role = nil, audit.DecisionUnauthenticated, 401, audit.RoleNone
		case 3:
			p := fmt.Sprintf("t/p%d/", i%4)
			r.Operation, r.Action, r.Access, r.Key, r.Prefix, r.Role = "ListObjectsV2", "s3:ListBucket", "list", "", &p, audit.RoleBucket
		case 4:
			r.VersionID = fmt.Sprintf("v%d", i%3)
		case 7: // present but empty: [] and "", not NULL
			p := ""
			r.Principal.Groups = []string{}
			r.Operation, r.Action, r.Access, r.Key, r.Prefix, r.Role = "ListObjectsV2", "s3:ListBucket", "list", "", &p, audit.RoleBucket
		case 5, 6:
			r.Key, r.Bucket = oddKey, "lake"
		}
		recs := []*audit.Record{r}
		if i%40 == 39 {
			recs = append(recs, &audit.Record{Kind: audit.KindLifecycle, Event: audit.EventConfig, Detail: map[string]string{"i": strconv.Itoa(i)}})
		}
		if err := l.Append(context.Background(), recs...); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(keys, "checkpoint.pub"), dir
}

func TestAuditExportCommand(t *testing.T) {
	pub, dir := exportFixture(t, 150)
	out := filepath.Join(t.TempDir(), "export")
	code, stdout, stderr := runAuditCmd(t, "export", "-dir", dir, "-out", out)
	if code != 0 || !strings.Contains(stdout, "ok: ") || strings.Contains(stdout, "skipped") {
		t.Fatalf("export: %d\n%s%s", code, stdout, stderr)
	}
	t.Log(stdout[strings.LastIndex(stdout, "ok: "):])
	code, stdout, stderr = runAuditCmd(t, "verify", "-dir", dir, "-pubkey", pub, "-export", out)
	if code != 0 || !strings.Contains(stdout, "ok: export "+out) {
		t.Fatalf("verify -export: %d\n%s%s", code, stdout, stderr)
	}
	// Again: everything is there already.
	code, stdout, _ = runAuditCmd(t, "export", "-dir", dir, "-out", out)
	if code != 0 || !strings.Contains(stdout, "ok: 0 records in 0 new files") {
		t.Fatalf("export again: %d\n%s", code, stdout)
	}
	// One altered row: exit 1, naming the file and the seq.
	files, _ := filepath.Glob(filepath.Join(out, "node=node-1", "day=2026-12-01", "*.parquet"))
	if len(files) == 0 {
		t.Fatalf("no file in day=2026-12-01 under %s", out)
	}
	rows, err := parquet.ReadFile[export.Row](files[0])
	if err != nil {
		t.Fatal(err)
	}
	rows[1].Reason = ptrTo("nothing to see")
	if err := parquet.WriteFile(files[0], rows); err != nil {
		t.Fatal(err)
	}
	code, stdout, _ = runAuditCmd(t, "verify", "-dir", dir, "-pubkey", pub, "-export", out)
	want := fmt.Sprintf("FAIL: export: %s: seq %d: column reason differs", files[0], rows[1].Seq)
	if code != 1 || !strings.Contains(stdout, want) {
		t.Fatalf("verify -export of an altered row: %d\n%s\nwant %s", code, stdout, want)
	}
}

func ptrTo[T any](v T) *T { return &v }
