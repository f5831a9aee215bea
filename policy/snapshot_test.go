package policy

import (
	"context"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"
)

const (
	snapA = "package countersign.authz\n\ndefault allow := false\n\nallow if input.resource.bucket == \"a\"\n"
	snapB = "package countersign.authz\n\ndefault allow := false\n\nallow if input.resource.bucket != \"\"\n"
)

func decideBucket(t *testing.T, e *Engine, bucket string) bool {
	t.Helper()
	d, err := e.authorizeRego(context.Background(), &Input{Version: 1, Access: "read", Resource: Resource{Bucket: bucket}})
	if err != nil {
		t.Fatal(err)
	}
	return d.Allow
}

// TestPolicyIsCompiledFromTheBytesHashed: the Manager reads every file
// once, through readFile, and compiles (and tests) what it read: here
// readFile returns A while the disk holds B (a file that changed between
// two reads); a loader that read the disk again would compile B.
func TestPolicyIsCompiledFromTheBytesHashed(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "authz.rego")
	if err := os.WriteFile(file, []byte(snapB), 0o600); err != nil {
		t.Fatal(err)
	}
	m := &Manager{src: SourceConfig{Paths: []string{dir}}, source: "paths " + dir, settle: time.Millisecond, sleep: sleepCtx}
	m.log = slog.New(slog.DiscardHandler)
	m.readFile = func(string) ([]byte, error) { return []byte(snapA), nil }
	if _, err := m.load(context.Background()); err != nil {
		t.Fatal(err)
	}
	e := m.engine.Load()
	if !decideBucket(t, e, "a") || decideBucket(t, e, "other") {
		t.Fatal("the policy compiled is not the one read and hashed")
	}
	s, err := readSnapshot([]string{dir}, func(string) ([]byte, error) { return []byte(snapA), nil })
	if err != nil {
		t.Fatal(err)
	}
	if m.seenHash != s.hash {
		t.Fatalf("hash of what was processed %s, of the bytes read %s", m.seenHash, s.hash)
	}
}

// TestSnapshotIsImmune: a snapshot compiles and tests its own bytes even
// after the files change on disk.
func TestSnapshotIsImmune(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "authz.rego")
	test := filepath.Join(dir, "authz_test.rego")
	os.WriteFile(file, []byte(snapA), 0o600)
	os.WriteFile(test, []byte("package countersign.authz_test\n\nimport data.countersign.authz\n\ntest_other_denied if not authz.allow with input as {\"resource\": {\"bucket\": \"other\"}}\n"), 0o600)
	s, err := readSnapshot([]string{dir}, os.ReadFile)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(file, []byte(snapB), 0o600)
	e, err := s.compile(context.Background(), engineOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !decideBucket(t, e, "a") || decideBucket(t, e, "other") {
		t.Fatal("compiled the disk, not the snapshot")
	}
	if err := s.runTests(context.Background()); err != nil {
		t.Fatalf("tests ran against the disk: %v", err)
	}
	s2, err := readSnapshot([]string{dir}, os.ReadFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := s2.runTests(context.Background()); err == nil {
		t.Fatal("the test that fails against B passed")
	}
}

// TestSnapshotSkipsFilesGoneSinceTheListing: a deployment tool writes a
// temporary file and renames it into place; a file listed and then gone
// (here: readFile says so, as when the rename lands between the listing
// and the read) is not in the snapshot, and the rest loads. Before, the
// reload failed ("no such file or directory") and was reported as a
// broken policy (a flake of TestManagerKeepsLastGoodPolicy showed it).
func TestSnapshotSkipsFilesGoneSinceTheListing(t *testing.T) {
	dir := t.TempDir()
	for name, content := range map[string]string{"authz.rego": snapA, "gone.rego": snapB} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	gone := filepath.Join(dir, "gone.rego")
	s, err := readSnapshot([]string{dir}, func(p string) ([]byte, error) {
		if p == gone {
			return nil, &fs.PathError{Op: "open", Path: p, Err: fs.ErrNotExist}
		}
		return os.ReadFile(p)
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := s.entries[gone]; ok {
		t.Fatal("a file gone since the listing is in the snapshot")
	}
	if _, ok := s.entries[filepath.Join(dir, "authz.rego")]; !ok {
		t.Fatal("the remaining file is not in the snapshot")
	}
	// A path named in the configuration that does not exist is still an
	// error.
	if _, err := readSnapshot([]string{filepath.Join(dir, "missing")}, os.ReadFile); err == nil {
		t.Fatal("a missing configured path was accepted")
	}
}
