package audit

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

// TestEncodeSessionFields: signing.source_identity and signing.session_name
// (per-principal sessions) are written after the digests when set, absent
// otherwise (so records signed with one credential keep their bytes: the
// golden test), and round-trip.
func TestEncodeSessionFields(t *testing.T) {
	r := accessRecord(3)
	r.Version, r.Seq, r.ID, r.Time, r.Node = 1, 5, "0102030405060708"+"0000000000000005", time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC), "n1"
	r.Principal.TokenHMAC = strings.Repeat("ab", 32)
	r.Signing = &Signing{AccessKeyID: "ASIASESSION", Scope: "20260102/us-east-1/s3/aws4_request", AmzDate: "20260102T030405Z",
		SignedHeaders: []string{"host"}, Payload: "UNSIGNED-PAYLOAD", CanonicalRequestSHA256: strings.Repeat("1", 64), SignatureSHA256: strings.Repeat("2", 64)}
	plain := string(AppendRecord(nil, r))
	if strings.Contains(plain, "source_identity") || strings.Contains(plain, "session_name") {
		t.Fatalf("unset session fields are written: %s", plain)
	}
	r.Signing.SourceIdentity, r.Signing.SessionName = "alice=20smith", "alice=20smith"
	line := AppendRecord(nil, r)
	if want := `"signature_sha256":"` + strings.Repeat("2", 64) + `","source_identity":"alice=20smith","session_name":"alice=20smith"}}`; !strings.HasSuffix(string(line), want) {
		t.Fatalf("line %s\nwant the suffix %s", line, want)
	}
	got, err := DecodeRecord(line)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Signing, r.Signing) {
		t.Fatalf("round trip: %+v, want %+v", got.Signing, r.Signing)
	}
	if again := AppendRecord(nil, got); string(again) != string(line) {
		t.Fatalf("re-encoding differs:\n%s\n%s", line, again)
	}
}
