package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/audit"
)

func runAuditCmd(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := runAudit(context.Background(), args, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// auditFixture makes keys with "audit keygen" and a closed log written
// with them through the key files, as serve would.
func auditFixture(t *testing.T) (keys, dir string, recs []*audit.Record) {
	t.Helper()
	keys = filepath.Join(t.TempDir(), "keys")
	if code, out, errOut := runAuditCmd(t, "keygen", "-name", "countersign-test", "-out", keys); code != 0 {
		t.Fatalf("keygen: %d %s %s", code, out, errOut)
	}
	for name, mode := range map[string]os.FileMode{"checkpoint.key": 0o600, "hmac.key": 0o600, "checkpoint.pub": 0o644} {
		fi, err := os.Stat(filepath.Join(keys, name))
		if err != nil || fi.Mode().Perm() != mode {
			t.Fatalf("%s: %v %v", name, err, fi.Mode())
		}
	}
	dir = filepath.Join(t.TempDir(), "audit")
	l, err := audit.Open(audit.Config{
		Dir:               dir,
		NodeID:            "node-1",
		SegmentMaxBytes:   8 << 10,
		CheckpointKeyFile: filepath.Join(keys, "checkpoint.key"),
		HMACKeyFile:       filepath.Join(keys, "hmac.key"),
	}, audit.Options{})
	if err != nil {
		t.Fatal(err)
	}
	tok := sha256.Sum256([]byte("token"))
	// A DeleteObjects of three keys, one denied, by alice; a read by bob.
	for _, k := range []struct {
		who, key string
		d        audit.Decision
	}{{"alice", "t/a.parquet", audit.DecisionAllow}, {"alice", "t/b.parquet", audit.DecisionDeny}, {"alice", "t/c.parquet", audit.DecisionAllow}, {"bob", "t/a.parquet", audit.DecisionAllow}} {
		r := &audit.Record{
			Kind: audit.KindAccess, SourceIP: "127.0.0.1", RequestID: "r1",
			Principal: &audit.Principal{Issuer: "idp", ID: k.who, Groups: []string{"g"}, TokenSHA256: tok},
			Operation: "DeleteObjects", Action: "s3:DeleteObject", Access: "delete",
			Bucket: "lake", Key: k.key, Region: "us-east-1", Role: audit.RoleDeleteKey,
			Decision: k.d, Status: 403,
		}
		if err := l.Append(context.Background(), r); err != nil {
			t.Fatal(err)
		}
		recs = append(recs, r)
	}
	for i := range 30 { // enough for several segments
		r := *recs[3]
		r.Key = "t/bulk/" + strings.Repeat("x", i%7) + ".parquet"
		if err := l.Append(context.Background(), &r); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return keys, dir, recs
}

func TestAuditCommands(t *testing.T) {
	keys, dir, recs := auditFixture(t)
	pub := filepath.Join(keys, "checkpoint.pub")

	code, out, errOut := runAuditCmd(t, "pubkey", "-key", filepath.Join(keys, "checkpoint.key"))
	want, _ := os.ReadFile(pub)
	if code != 0 || out != string(want) {
		t.Fatalf("pubkey: %d %q %s, want %q", code, out, errOut, want)
	}

	code, out, errOut = runAuditCmd(t, "verify", "-dir", dir, "-pubkey", pub)
	if code != 0 || !strings.Contains(out, "ok: countersign/node-1") {
		t.Fatalf("verify: %d\n%s%s", code, out, errOut)
	}
	t.Log(out)

	// Every object alice touched, and the denied one.
	code, out, _ = runAuditCmd(t, "query", "-dir", dir, "-principal", "alice", "-since", "1h", "-distinct", "object", "-format", "table")
	if code != 0 || !strings.Contains(out, "lake/t/a.parquet") || !strings.Contains(out, "lake/t/b.parquet") || !strings.Contains(out, "lake/t/c.parquet") || strings.Count(out, "\n") != 4 {
		t.Fatalf("query alice:\n%s", out)
	}
	code, out, _ = runAuditCmd(t, "query", "-dir", dir, "-principal", "alice", "-decision", "deny")
	if code != 0 || strings.Count(out, "\n") != 1 || !strings.Contains(out, `"key":"t/b.parquet"`) {
		t.Fatalf("query alice deny:\n%s", out)
	}
	// Every principal that touched lake/t/a.parquet.
	code, out, _ = runAuditCmd(t, "query", "-dir", dir, "-bucket", "lake", "-key", "t/a.parquet", "-distinct", "principal")
	var who []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var m map[string]any
		json.Unmarshal([]byte(line), &m)
		who = append(who, m["principal"].(string))
	}
	if code != 0 || strings.Join(who, ",") != "alice,bob" {
		t.Fatalf("principals of t/a.parquet: %v\n%s", who, out)
	}
	code, out, _ = runAuditCmd(t, "query", "-dir", dir, "-until", time.Now().Add(-time.Hour).Format(time.RFC3339))
	if code != 0 || out != "" {
		t.Fatalf("query before the log: %q", out)
	}

	// A secret given as the verifier key is refused without being printed
	// (found by a black-box probe: the error quoted the whole signer key).
	for _, secretFile := range []string{"checkpoint.key", "hmac.key"} {
		secret, _ := os.ReadFile(filepath.Join(keys, secretFile))
		code, out, errOut := runAuditCmd(t, "verify", "-dir", dir, "-pubkey", filepath.Join(keys, secretFile))
		text := strings.TrimSpace(string(secret))
		if code == 0 || strings.Contains(out+errOut, text) || strings.Contains(out+errOut, text[len(text)-20:]) || !strings.Contains(out+errOut, secretFile) {
			t.Fatalf("verify -pubkey %s: %d\n%s%s", secretFile, code, out, errOut)
		}
		code, out, errOut = runAuditCmd(t, "verify", "-dir", dir, "-pubkey-text", text)
		if code == 0 || strings.Contains(out+errOut, text[len(text)-20:]) {
			t.Fatalf("verify -pubkey-text with %s: %d\n%s%s", secretFile, code, out, errOut)
		}
	}

	// The newest segments removed: what is left still verifies (only a
	// checkpoint kept elsewhere can tell), but verify says the log ends on
	// a rotation (found by a black-box probe: it said only "ok"). The
	// whole log, closed, ends on the close's seal and has no warning.
	if code, out, _ := runAuditCmd(t, "verify", "-dir", dir, "-pubkey", pub); code != 0 || strings.Contains(out, "warning:") {
		t.Fatalf("verify of the closed log: %d\n%s", code, out)
	}
	cut := filepath.Join(t.TempDir(), "cut")
	os.CopyFS(cut, os.DirFS(dir))
	segs, _ := filepath.Glob(filepath.Join(cut, "seg-*.jsonl"))
	if len(segs) < 3 {
		t.Fatalf("%d segments", len(segs))
	}
	newest := strings.TrimSuffix(segs[len(segs)-1], ".jsonl")
	olds, _ := filepath.Glob(newest + ".*")
	for _, f := range olds {
		os.Remove(f)
	}
	code, out, errOut = runAuditCmd(t, "verify", "-dir", cut, "-pubkey", pub)
	if code != 0 || !strings.Contains(out, "warning: ") || !strings.Contains(out, `sealed for rotation (reason "size")`) {
		t.Fatalf("verify without the newest segment: %d\n%s%s", code, out, errOut)
	}

	// A line that is not a record is left out of a query's results, and
	// the query says so (found by a black-box probe: it said nothing).
	damaged := filepath.Join(t.TempDir(), "damaged")
	os.CopyFS(damaged, os.DirFS(dir))
	seg0 := filepath.Join(damaged, audit.SegmentName(0))
	b0, _ := os.ReadFile(seg0)
	os.WriteFile(seg0, bytes.Replace(b0, []byte(`"key":"t/a.parquet"`), []byte(`"key":"t/a.parquetÿ`), 1), 0o640)
	code, out, errOut = runAuditCmd(t, "query", "-dir", damaged, "-principal", "alice")
	if code != 0 || strings.Count(out, "\n") != 2 || !strings.Contains(errOut, "warning: lines that could match but are not readable records: 1;") {
		t.Fatalf("query of a damaged log: %d\n%s%s", code, out, errOut)
	}
	if code, _, errOut := runAuditCmd(t, "query", "-dir", dir, "-principal", "alice"); code != 0 || errOut != "" {
		t.Fatalf("query of the whole log: %d %s", code, errOut)
	}

	// Inclusion proof round trip.
	code, proof, errOut := runAuditCmd(t, "proof", "-dir", dir, "-id", recs[1].ID)
	if code != 0 {
		t.Fatalf("proof: %s", errOut)
	}
	pf := filepath.Join(t.TempDir(), "proof.json")
	os.WriteFile(pf, []byte(proof), 0o644)
	code, out, errOut = runAuditCmd(t, "verify-proof", "-pubkey", pub, pf)
	if code != 0 || !strings.Contains(out, "ok: record "+recs[1].ID) {
		t.Fatalf("verify-proof: %d %s %s", code, out, errOut)
	}
	os.WriteFile(pf, []byte(strings.Replace(proof, "t/b.parquet", "t/B.parquet", 1)), 0o644)
	if code, out, _ = runAuditCmd(t, "verify-proof", "-pubkey", pub, pf); code != 1 || !strings.HasPrefix(out, "FAIL:") {
		t.Fatalf("verify-proof of an altered record: %d %s", code, out)
	}

	// Tampering: exit 1 naming the file and line.
	seg := filepath.Join(dir, audit.SegmentName(0))
	b, _ := os.ReadFile(seg)
	lines := bytes.SplitAfter(b, []byte("\n"))
	os.WriteFile(seg, bytes.Join(append(lines[:2:2], lines[3:]...), nil), 0o640)
	code, out, _ = runAuditCmd(t, "verify", "-dir", dir, "-pubkey", pub)
	if code != 1 || !strings.Contains(out, "FAIL: "+audit.SegmentName(0)+":3: seq 2:") {
		t.Fatalf("verify of a log missing a record: %d\n%s", code, out)
	}
}

func TestAuditCommandUsage(t *testing.T) {
	for _, args := range [][]string{
		{},
		{"nope"},
		{"verify", "-dir", t.TempDir()}, // no key
		{"query", "-key", "a", "-key-prefix", "b"},
		{"query", "-since", "yesterday-ish"},
		{"query", "-decision", "maybe"},
		{"proof"},
		{"keygen", "-name", "x"},
		{"pubkey"},
	} {
		if code, _, errOut := runAuditCmd(t, args...); code != 2 || errOut == "" {
			t.Errorf("%v: exit %d, stderr %q; want 2 with a message", args, code, errOut)
		}
	}
	// Found by a black-box probe: each was accepted (exit 0) and then
	// useless or wrong.
	for _, args := range [][]string{
		{"query", "-dir", t.TempDir(), "-until", "0001-01-01T00:00:00Z"},
		{"query", "-dir", t.TempDir(), "-since", "2030-01-01", "-until", "1970-01-02"},
	} {
		if code, _, errOut := runAuditCmd(t, args...); code != 2 || errOut == "" {
			t.Errorf("%v: exit %d, stderr %q; want 2 with a message", args, code, errOut)
		}
	}
	for want, args := range map[string][]string{
		"-nodes 0":     {"generate", "-out", t.TempDir(), "-keys", t.TempDir(), "-nodes", "0"},
		"-span -1h":    {"generate", "-out", t.TempDir(), "-keys", t.TempDir(), "-span", "-1h"},
		"-people -3":   {"generate", "-out", t.TempDir(), "-keys", t.TempDir(), "-people", "-3"},
		"-parallel -5": {"fleet", "verify", "-parallel", "-5", "-pubkey-text", "x"},
	} {
		if code, _, errOut := runAuditCmd(t, args...); code != 2 || !strings.Contains(errOut, want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 naming %s", args, code, errOut, want)
		}
	}
	for _, name := range []string{"bad name", "a+b"} {
		if code, _, errOut := runAuditCmd(t, "keygen", "-name", name, "-out", filepath.Join(t.TempDir(), "k")); code == 0 || !strings.Contains(errOut, "without spaces or '+'") {
			t.Errorf("keygen -name %q: exit %d, stderr %q", name, code, errOut)
		}
	}
	keys := t.TempDir()
	runAuditCmd(t, "keygen", "-name", "k", "-out", keys)
	if code, _, errOut := runAuditCmd(t, "keygen", "-name", "k", "-out", keys); code != 1 || !strings.Contains(errOut, "not overwriting") {
		t.Fatalf("keygen over existing keys: %d %s", code, errOut)
	}
}
