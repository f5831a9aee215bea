package audit

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"golang.org/x/mod/sumdb/tlog"
)

// queryLog writes a log with a known mix: principals alice/bob/carol, keys
// k0..k9 in two buckets, decisions, one minute apart, across segments.
func queryLog(t *testing.T, k testKeys) (string, time.Time) {
	t.Helper()
	dir := t.TempDir()
	cfg := testConfig(dir)
	cfg.SegmentMaxBytes = 8 << 10
	t0 := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	var now atomic.Int64
	now.Store(t0.UnixNano())
	opts := k.options()
	opts.Now = func() time.Time { return time.Unix(0, now.Load()) }
	l := openLog(t, cfg, opts)
	who := []string{"alice", "bob", "carol"}
	for i := range 60 {
		r := accessRecord(i)
		r.Principal = &Principal{Issuer: "idp", ID: who[i%3], Groups: []string{}}
		r.Bucket = []string{"lake", "raw"}[i%2]
		r.Key = "t/data/k" + string(rune('0'+i%10)) + ".parquet"
		if i%4 == 3 {
			r.Decision, r.Status, r.Signing = DecisionDeny, 403, nil
		}
		now.Store(t0.Add(time.Duration(i) * time.Minute).UnixNano())
		if err := l.Append(context.Background(), r); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return dir, t0
}

func query(t *testing.T, dir string, f Filter) []*Record {
	t.Helper()
	var out []*Record
	if err := Query(context.Background(), os.DirFS(dir), f, func(r *Record, _ []byte) error {
		out = append(out, r)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestQuery(t *testing.T) {
	k := newTestKeys(t)
	dir, t0 := queryLog(t, k)
	if n := len(segmentFiles(t, dir)); n < 3 {
		t.Fatalf("%d segments; the query must cross several", n)
	}
	// Every object alice touched between 10:10 and 10:40.
	got := query(t, dir, Filter{Principal: "alice", Since: t0.Add(10 * time.Minute), Until: t0.Add(40 * time.Minute)})
	var keys []string
	for _, r := range got {
		keys = append(keys, r.Bucket+"/"+r.Key)
	}
	var want []string
	for i := 12; i < 40; i += 3 { // alice is i%3 == 0; minutes 10..39
		want = append(want, []string{"lake", "raw"}[i%2]+"/t/data/k"+string(rune('0'+i%10))+".parquet")
	}
	if !slices.Equal(keys, want) {
		t.Fatalf("alice 10:10-10:40:\n got %v\nwant %v", keys, want)
	}
	// Every principal that touched lake/t/data/k4.parquet.
	var who []string
	for _, r := range query(t, dir, Filter{Bucket: "lake", Key: "t/data/k4.parquet"}) {
		who = append(who, r.Principal.ID)
	}
	slices.Sort(who)
	who = slices.Compact(who)
	if !slices.Equal(who, []string{"alice", "bob", "carol"}) {
		t.Fatalf("principals of k4: %v", who)
	}
	if n := len(query(t, dir, Filter{Decision: DecisionDeny})); n != 15 {
		t.Fatalf("%d denials, want 15", n)
	}
	if n := len(query(t, dir, Filter{KeyPrefix: "t/data/k1"})); n != 6 {
		t.Fatalf("%d records under t/data/k1, want 6", n)
	}
	if n := len(query(t, dir, Filter{Principal: "al"})); n != 0 {
		t.Fatalf("principal must match exactly: %d", n)
	}
	if n := len(query(t, dir, Filter{Kind: KindLifecycle})); n < 4 {
		t.Fatalf("%d lifecycle records", n)
	}
	if n := len(query(t, dir, Filter{Until: t0})); n != 0 {
		t.Fatalf("before the log: %d", n)
	}
}

func TestProofRoundTrip(t *testing.T) {
	k := newTestKeys(t)
	dir, _ := queryLog(t, k)
	recs := readLog(t, dir)
	res := verifyDir(t, dir, k)
	for _, i := range []int{0, 1, 7, 30, len(recs) - 2, len(recs) - 1} {
		p, err := Prove(os.DirFS(dir), recs[i].ID, 0)
		if err != nil {
			t.Fatalf("Prove %d: %v", i, err)
		}
		if p.TreeSize != res.Latest.Size {
			t.Fatalf("proof against size %d, newest checkpoint is %d", p.TreeSize, res.Latest.Size)
		}
		// Through JSON, as the CLI prints and reads it.
		b, _ := json.Marshal(p)
		var q Proof
		if err := json.Unmarshal(b, &q); err != nil {
			t.Fatal(err)
		}
		rec, cp, err := q.Check(k.verifiers)
		if err != nil {
			t.Fatalf("Check %d: %v", i, err)
		}
		if rec.ID != recs[i].ID || cp.Size != p.TreeSize {
			t.Fatalf("checked %s in %d", rec.ID, cp.Size)
		}
		// A changed record does not verify.
		bad := q
		bad.Record = strings.Replace(q.Record, `"seq":`, `"seq": `, 1)
		if _, _, err := bad.Check(k.verifiers); err == nil {
			t.Fatal("a modified record verified")
		}
		other := newTestKeys(t)
		if _, _, err := q.Check(other.verifiers); err == nil {
			t.Fatal("verified under another key")
		}
	}
	// Against an older checkpoint: the one that opens the last segment.
	segs, _ := ListSegments(os.DirFS(dir))
	lastFirst := int64(segs[len(segs)-1].First)
	p, err := Prove(os.DirFS(dir), recs[3].ID, lastFirst)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := p.Check(k.verifiers); err != nil || p.TreeSize != lastFirst {
		t.Fatalf("older checkpoint: %v (size %d)", err, p.TreeSize)
	}
	if _, err := Prove(os.DirFS(dir), "00000000000000000000000000000fff", 0); err == nil {
		t.Fatal("proof for a record that does not exist")
	}
}

// TestFrontierMatchesTlog: the writer's O(log n) tree state gives the same
// roots as tlog over all stored hashes, and round-trips through its list.
func TestFrontierMatchesTlog(t *testing.T) {
	var f frontier
	var stored []tlog.Hash
	r := tlog.HashReaderFunc(func(idx []int64) ([]tlog.Hash, error) {
		out := make([]tlog.Hash, len(idx))
		for i, x := range idx {
			out[i] = stored[x]
		}
		return out, nil
	})
	for n := int64(0); n < 300; n++ {
		want, err := tlog.TreeHash(n, r)
		if err != nil {
			t.Fatal(err)
		}
		if got := f.root(); got != want {
			t.Fatalf("size %d: root %v, tlog %v", n, got, want)
		}
		g, err := frontierFrom(f.n, f.hashes())
		if err != nil || g.root() != want {
			t.Fatalf("size %d: frontier does not round-trip", n)
		}
		// A hashStore seeded here agrees with tlog for later sizes.
		leaf := tlog.RecordHash([]byte{byte(n), byte(n >> 8)})
		hs, err := tlog.StoredHashesForRecordHash(n, leaf, r)
		if err != nil {
			t.Fatal(err)
		}
		stored = append(stored, hs...)
		f.append(leaf)
	}
	if _, err := newHashStore(100, nil); err == nil {
		t.Fatal("a frontier of the wrong length must be refused")
	}
}

func TestEncodeRoundTrip(t *testing.T) {
	prefix := "wh/db/"
	r := accessRecord(3)
	r.Version, r.Seq, r.ID, r.Time, r.Node = 1, 5, "0102030405060708"+"0000000000000005", time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC), "n1"
	r.Prefix = &prefix
	r.Reason = "weird \"quotes\" \\ back\nslash\t\x01 \u2028 é end"
	r.Principal.TokenHMAC = strings.Repeat("ab", 32)
	line := AppendRecord(nil, r)
	if !json.Valid(line) || !utf8.Valid(line) {
		t.Fatalf("invalid line: %s", line)
	}
	got, err := DecodeRecord(line)
	if err != nil {
		t.Fatal(err)
	}
	want := *r
	p := *r.Principal
	p.TokenSHA256 = [32]byte{}
	want.Principal = &p
	if !reflect.DeepEqual(got, &want) {
		t.Fatalf("round trip:\n got %+v\nwant %+v", got, &want)
	}
	// One encoding: re-encoding the decoded record gives the same bytes
	// (the leaf hash depends on them).
	if again := AppendRecord(nil, got); string(again) != string(line) {
		t.Fatalf("re-encoding differs:\n%s\n%s", line, again)
	}
	// Field order is the documented one.
	var order []string
	dec := json.NewDecoder(strings.NewReader(string(line)))
	dec.Token()
	for dec.More() {
		tok, _ := dec.Token()
		order = append(order, tok.(string))
		var skip json.RawMessage
		dec.Decode(&skip)
	}
	wantOrder := "v seq id time node kind source_ip request_id principal operation action access bucket key prefix region table role decision reason status policy_revision eval_us signing"
	if strings.Join(order, " ") != wantOrder {
		t.Fatalf("field order %v", order)
	}
}

func TestTokenMACIsHMACSHA256(t *testing.T) {
	for _, key := range [][]byte{[]byte("0123456789abcdef0123456789abcdef"), make([]byte, 100)} {
		tok := sha256.Sum256([]byte("a token"))
		m := hmac.New(sha256.New, key)
		m.Write(tok[:])
		want := m.Sum(nil)
		got := newTokenMAC(key).sum(&tok)
		if string(got[:]) != string(want) {
			t.Fatalf("key of %d bytes: HMAC differs", len(key))
		}
	}
}

// TestTokenMACRemembersOnlyItsToken: the remembered HMAC of the last token
// is used for that token only, however tokens alternate.
func TestTokenMACRemembersOnlyItsToken(t *testing.T) {
	key := []byte("0123456789abcdef0123456789abcdef")
	mac := newTokenMAC(key)
	toks := [][32]byte{sha256.Sum256([]byte("a")), sha256.Sum256([]byte("b")), sha256.Sum256([]byte("b")), sha256.Sum256([]byte("a")), {}}
	toks[4][31] = 1 // differs from the zero digest in the last byte only
	for i, tok := range toks {
		m := hmac.New(sha256.New, key)
		m.Write(tok[:])
		want := hex.EncodeToString(m.Sum(nil))
		if got := string(mac.appendHex([]byte("x"), &tok)); got != "x"+want {
			t.Fatalf("token %d: %s, want x%s", i, got, want)
		}
	}
}

// TestRecordCannotCarrySecrets walks the Record type: the token appears
// only as a fixed-size digest that is never encoded, signatures only as
// digests.
func TestRecordCannotCarrySecrets(t *testing.T) {
	var walk func(reflect.Type, string)
	walk = func(typ reflect.Type, path string) {
		for typ.Kind() == reflect.Pointer || typ.Kind() == reflect.Slice {
			typ = typ.Elem()
		}
		if typ.Kind() != reflect.Struct || typ == reflect.TypeOf(time.Time{}) {
			return
		}
		for i := range typ.NumField() {
			f := typ.Field(i)
			name := strings.ToLower(f.Name)
			p := path + "." + f.Name
			switch {
			case strings.Contains(name, "secret"), strings.Contains(name, "password"):
				t.Errorf("%s: no secret may have a field", p)
			case strings.Contains(name, "token") && p != ".Principal.TokenSHA256" && p != ".Principal.TokenHMAC":
				t.Errorf("%s: the token is recorded only as its HMAC", p)
			case strings.Contains(name, "signature") && !strings.HasSuffix(name, "sha256"):
				t.Errorf("%s: signatures are recorded only as digests", p)
			}
			walk(f.Type, p)
		}
	}
	walk(reflect.TypeOf(Record{}), "")
	if f, _ := reflect.TypeOf(Principal{}).FieldByName("TokenSHA256"); f.Type.Kind() != reflect.Array || f.Tag.Get("json") != "-" {
		t.Error("TokenSHA256 must be a fixed-size digest that is never encoded")
	}
}

func TestVerifierKeyFromSignerKey(t *testing.T) {
	for range 30 { // base64 keys often contain '+', the field separator
		s, v, _, err := GenerateKeys("k")
		if err != nil {
			t.Fatal(err)
		}
		got, err := VerifierKey(s + "\n")
		if err != nil || got != v {
			t.Fatalf("VerifierKey(%s) = %s, %v; want %s", s, got, err, v)
		}
	}
}

// BenchmarkTools1M measures the tools on a million ~700-byte records
// (it writes 700 MB; run it alone: go test -run '^$' -bench Tools1M
// -benchtime 1x ./audit/). Each tool's time is a reported metric.
func BenchmarkTools1M(b *testing.B) {
	for b.Loop() {
		tools1M(b)
	}
}

func tools1M(t *testing.B) {
	t.StopTimer()
	defer t.StartTimer()
	k := newTestKeys(t)
	dir := t.TempDir()
	cfg := testConfig(dir)
	cfg.SegmentMaxBytes = DefaultSegmentMaxBytes
	l := openLog(t, cfg, k.options())
	const total, per = 1_000_000, 5000
	start := time.Now()
	var probe *Record
	for i := 0; i < total; i += per {
		recs := make([]*Record, per)
		for j := range recs {
			recs[j] = benchRecord(i + j)
			recs[j].Principal = &Principal{Issuer: "idp", ID: fmt.Sprintf("p%d", (i+j)%50), Groups: []string{"g"}}
		}
		if err := l.Append(context.Background(), recs...); err != nil {
			t.Fatal(err)
		}
		if i == total/2 {
			probe = recs[17]
		}
	}
	l.Close()
	t.Logf("wrote %d records in %v", total, time.Since(start))
	fsys := os.DirFS(dir)

	start = time.Now()
	res, err := Verify(fsys, VerifyOptions{Verifiers: k.verifiers})
	if err != nil {
		t.Fatal(err)
	}
	t.ReportMetric(time.Since(start).Seconds(), "verify-s")
	t.Logf("verify: %d records, %d segments, %d checkpoints in %v", res.Next, res.Segments, res.Checkpoints, time.Since(start))

	start = time.Now()
	n := 0
	err = Query(context.Background(), fsys, Filter{Principal: "p7", Since: probe.Time.Add(-time.Second), Until: probe.Time.Add(time.Second)}, func(*Record, []byte) error { n++; return nil })
	t.Logf("query principal+time window: %d records in %v (%v)", n, time.Since(start), err)
	start = time.Now()
	n = 0
	err = Query(context.Background(), fsys, Filter{Key: probe.Key}, func(*Record, []byte) error { n++; return nil })
	t.ReportMetric(time.Since(start).Seconds(), "query-key-s")
	t.Logf("query one key over the whole log: %d records in %v (%v)", n, time.Since(start), err)
	start = time.Now()
	n = 0
	err = Query(context.Background(), fsys, Filter{Principal: "p7"}, func(*Record, []byte) error { n++; return nil })
	t.Logf("query one principal over the whole log: %d records in %v (%v)", n, time.Since(start), err)
	start = time.Now()
	p, err := Prove(fsys, probe.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("proof of record %d against size %d in %v", p.Index, p.TreeSize, time.Since(start))
}
