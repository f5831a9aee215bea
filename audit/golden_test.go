package audit

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"flag"
	"os"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

var updateGolden = flag.Bool("update-golden", false, "rewrite testdata/golden-records.jsonl from the current encoder")

// goldenRecords exercise every string field with text that needs escaping:
// control characters, quote and backslash, U+2028/U+2029, invalid and
// truncated UTF-8, every byte value.
func goldenRecords() [][]byte {
	var all []byte
	for c := range 256 {
		all = append(all, byte(c))
	}
	odd := []string{
		string(all),
		"q\"uote \\back\\slash\" \b\f\n\r\t\v\x00\x1f\x7f end",
		"ls\u2028ps\u2029 \u2027\u202a \ufffd \U0001F600 日本語 é",
		"bad \xc0\x80 \xed\xa0\x80 \xf4\x90\x80\x80 \xf5 \xfe\xff \x80\xbf",
		"cut \xe2\x80 \xe6\x97 \xf0\x9f\x98 \xc3",
		strings.Repeat("long plain ascii run ", 5) + "\x01" + strings.Repeat("z", 9),
		"</script>&<>'",
		"",
	}
	at := func(i int) string { return odd[i%len(odd)] }
	prefix := at(6)
	r := &Record{
		Version: 1, Seq: 42, ID: at(1),
		Time: time.Date(2026, 11, 30, 12, 0, 0, 123456789, time.UTC),
		Node: at(2), Kind: KindAccess, SourceIP: at(3), RequestID: at(4),
		Principal: &Principal{Issuer: at(5), ID: at(0), Groups: []string{at(1), at(2), at(7)}, JTI: at(3), TokenHMAC: at(4)},
		Operation: at(5), Action: at(6), Access: at(7), Bucket: at(0), Key: at(1), VersionID: at(3), Prefix: &prefix, Region: at(2),
		Table: &Table{Prefix: at(3), Namespace: []string{at(4), at(5)}, Name: at(6)},
		Role:  Role(at(7)), Decision: Decision(at(0)), Reason: at(1), Status: 403, PolicyRevision: at(2), EvalMicros: 7,
		Signing: &Signing{AccessKeyID: at(3), Scope: at(4), AmzDate: at(5), SignedHeaders: []string{at(6), at(7), at(0)},
			Payload: at(1), CanonicalRequestSHA256: at(2), SignatureSHA256: at(3)},
	}
	lc := &Record{
		Version: 1, Seq: 43, ID: "0102030405060708000000000000002b", Time: r.Time, Node: "n1",
		Kind: KindLifecycle, Event: Event(at(4)),
		Detail: map[string]string{at(0): at(1), at(2): at(3), at(4): at(5), at(6): at(7)},
	}
	lines := [][]byte{AppendRecord(nil, r), AppendRecord(nil, lc)}
	// The log's own path: the writer's head, the caller's tail with the
	// token HMAC computed.
	r.Principal.TokenSHA256 = sha256.Sum256([]byte("token"))
	mac := newTokenMAC([]byte("0123456789abcdef0123456789abcdef"))
	nonce := [8]byte{1, 2, 3, 4, 5, 6, 7, 8}
	line := appendHead(nil, 44, &nonce, []byte("2026-11-30T12:00:00.123456789Z"))
	lines = append(lines, appendTail(line, r, at(5), mac))
	return lines
}

// TestGoldenRecordBytes pins the exact bytes of records: the Merkle tree
// hashes them, so an encoder change that alters any escape would fork
// every log's history.
func TestGoldenRecordBytes(t *testing.T) {
	got := bytes.Join(goldenRecords(), []byte("\n"))
	got = append(got, '\n')
	const path = "testdata/golden-records.jsonl"
	if *updateGolden {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("record bytes differ from %s:\n got %s\nwant %s", path, got, want)
	}
	for _, line := range bytes.Split(bytes.TrimSuffix(want, []byte("\n")), []byte("\n")) {
		if !json.Valid(line) || !utf8.Valid(line) {
			t.Fatalf("golden line is not valid UTF-8 JSON:\n%s", line)
		}
	}
}
