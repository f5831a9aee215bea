package audit

import (
	"bytes"
	"context"
	"errors"
	"testing"
)

// TestVersionIDRecorded: an access record names the object version it was
// decided about, the line carries it (and no version_id when there is
// none, so unversioned records keep their bytes), it reads back, and a
// query for the key finds both.
func TestVersionIDRecorded(t *testing.T) {
	k := newTestKeys(t)
	dir := t.TempDir()
	l := openLog(t, testConfig(dir), k.options())
	versioned := accessRecord(1)
	versioned.Operation, versioned.Action, versioned.Access = "DeleteObject", "s3:DeleteObjectVersion", "delete_version"
	versioned.Key, versioned.VersionID = "wh/t/a.parquet", `3HL4kqtJ"lcp+`
	plain := accessRecord(2)
	plain.Key = "wh/t/a.parquet"
	for _, r := range []*Record{versioned, plain} {
		if err := l.Append(context.Background(), r); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	got := query(t, dir, Filter{Key: "wh/t/a.parquet"})
	if len(got) != 2 {
		t.Fatalf("query found %d records, want 2", len(got))
	}
	if got[0].VersionID != versioned.VersionID || got[0].Action != "s3:DeleteObjectVersion" || got[1].VersionID != "" {
		t.Fatalf("read back version ids %q and %q", got[0].VersionID, got[1].VersionID)
	}
	if line := AppendRecord(nil, got[0]); !bytes.Contains(line, []byte(`"key":"wh/t/a.parquet","version_id":"3HL4kqtJ\"lcp+"`)) {
		t.Fatalf("versioned line: %s", line)
	}
	if line := AppendRecord(nil, got[1]); bytes.Contains(line, []byte("version_id")) {
		t.Fatalf("unversioned line carries a version_id: %s", line)
	}
}

func TestVersionIDOnLifecycleRefused(t *testing.T) {
	k := newTestKeys(t)
	l := openLog(t, testConfig(t.TempDir()), k.options())
	defer l.Close()
	r := &Record{Kind: KindLifecycle, Event: EventPolicyRevision, VersionID: "v1"}
	if err := l.Append(context.Background(), r); !errors.Is(err, ErrInvalidRecord) {
		t.Fatalf("err %v, want ErrInvalidRecord", err)
	}
}
