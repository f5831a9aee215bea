package audit

import (
	"bytes"
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"
)

func mintRecord() *Record {
	prefix := "wh/db/t/"
	return &Record{
		Version: 1, Seq: 7, ID: "01020304050607080000000000000007",
		Time: time.Date(2026, 12, 2, 4, 0, 0, 5, time.UTC), Node: "node-a", Kind: KindAccess,
		SourceIP: "10.0.0.7", RequestID: "r1",
		Principal: &Principal{Issuer: "https://idp/", ID: "ann", Groups: []string{"etl"}, JTI: "j", TokenHMAC: "ab"},
		Operation: OperationMint, Action: "sts:AssumeRole", Access: "read-write", Bucket: "lake", Prefix: &prefix,
		Region: "us-east-1", Table: &Table{Prefix: "prod", Namespace: []string{"db"}, Name: "t"},
		Role: RolePrefix, Decision: DecisionAllow, Status: 200, PolicyRevision: "rev", EvalMicros: 31,
		Mint: &Mint{Actions: []string{"s3:GetObject", "s3:PutObject"}, DurationSeconds: 900, Expires: "2026-12-02T04:15:00Z",
			AccessKeyID: "ASIAVENDED", SourceIdentity: "ann", SessionName: "countersign-ann"},
	}
}

// TestMintRecordBytes pins a mint record's encoding: the mint object comes
// last, every field present; the record decodes to itself and re-encodes
// to the same bytes.
func TestMintRecordBytes(t *testing.T) {
	const want = `{"v":1,"seq":7,"id":"01020304050607080000000000000007","time":"2026-12-02T04:00:00.000000005Z",` +
		`"node":"node-a","kind":"access","source_ip":"10.0.0.7","request_id":"r1",` +
		`"principal":{"issuer":"https://idp/","id":"ann","groups":["etl"],"jti":"j","token_hmac":"ab"},` +
		`"operation":"MintCredentials","action":"sts:AssumeRole","access":"read-write","bucket":"lake","key":"",` +
		`"prefix":"wh/db/t/","region":"us-east-1","table":{"prefix":"prod","namespace":["db"],"name":"t"},` +
		`"role":"prefix","decision":"allow","reason":"","status":200,"policy_revision":"rev","eval_us":31,` +
		`"mint":{"actions":["s3:GetObject","s3:PutObject"],"duration_s":900,"expires":"2026-12-02T04:15:00Z",` +
		`"access_key_id":"ASIAVENDED","source_identity":"ann","session_name":"countersign-ann"}}`
	got := AppendRecord(nil, mintRecord())
	if string(got) != want {
		t.Fatalf("mint record:\n got %s\nwant %s", got, want)
	}
	dec, err := DecodeRecord(got)
	if err != nil {
		t.Fatal(err)
	}
	if again := AppendRecord(nil, dec); !bytes.Equal(again, got) {
		t.Fatalf("re-encoded differently:\n got %s\nwant %s", again, got)
	}
	// Records without a mint have no mint field: the schema's other
	// records keep their bytes (TestGoldenRecordBytes).
	r := mintRecord()
	r.Mint, r.Operation, r.Role = nil, "GetObject", RoleObject
	if line := AppendRecord(nil, r); bytes.Contains(line, []byte(`"mint"`)) {
		t.Fatalf("a record without a mint has a mint field: %s", line)
	}
}

// TestMintRecordValidation: a log accepts allowed and refused mints, and
// refuses mint details that contradict the record.
func TestMintRecordValidation(t *testing.T) {
	keys := newTestKeys(t)
	l := openLog(t, testConfig(t.TempDir()), keys.options())
	defer l.Close()
	ctx := context.Background()
	if err := l.Append(ctx, mintRecord()); err != nil {
		t.Fatalf("allowed mint: %v", err)
	}
	refused := mintRecord()
	refused.Decision, refused.Status, refused.Reason = DecisionDeny, 403, "sign-only"
	refused.Mint = &Mint{Actions: []string{}, DurationSeconds: 900}
	if err := l.Append(ctx, refused); err != nil {
		t.Fatalf("refused mint: %v", err)
	}
	for name, mutate := range map[string]func(r *Record){
		"key id on a refusal": func(r *Record) { r.Decision, r.Status = DecisionDeny, 403 },
		"signing and mint": func(r *Record) {
			r.Signing = &Signing{CanonicalRequestSHA256: strings.Repeat("a", 64), SignatureSHA256: strings.Repeat("b", 64)}
		},
		"not a mint operation": func(r *Record) { r.Operation = "GetObject" },
		"not the prefix role":  func(r *Record) { r.Role = RoleObject },
		"mint on a lifecycle": func(r *Record) {
			*r = Record{Kind: KindLifecycle, Event: EventConfig, Mint: r.Mint}
		},
	} {
		r := mintRecord()
		mutate(r)
		if err := l.Append(ctx, r); !errors.Is(err, ErrInvalidRecord) {
			t.Errorf("%s: Append = %v, want ErrInvalidRecord", name, err)
		}
	}
}

// TestQueryShowsMintsBesideAccesses: a principal's query returns the mint
// records among its access records, and Kind access selects both.
func TestQueryShowsMintsBesideAccesses(t *testing.T) {
	keys := newTestKeys(t)
	dir := t.TempDir()
	l := openLog(t, testConfig(dir), keys.options())
	ctx := context.Background()
	get := mintRecord()
	get.Operation, get.Role, get.Mint, get.Prefix, get.Key, get.Access = "GetObject", RoleObject, nil, nil, "wh/db/t/f.parquet", "read"
	other := mintRecord()
	other.Principal = &Principal{ID: "bob", Groups: []string{}}
	if err := l.Append(ctx, get, mintRecord(), other); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	fsys := os.DirFS(dir)
	var ops []string
	if err := Query(ctx, fsys, Filter{Principal: "ann", Kind: KindAccess}, func(r *Record, _ []byte) error {
		ops = append(ops, r.Operation)
		if r.Operation == OperationMint && (r.Mint == nil || r.Mint.AccessKeyID != "ASIAVENDED") {
			t.Errorf("mint record read back without its mint: %+v", r.Mint)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if strings.Join(ops, ",") != "GetObject,MintCredentials" {
		t.Fatalf("ann's records: %v, want GetObject then MintCredentials", ops)
	}
}
