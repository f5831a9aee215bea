package audit

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/note"
)

// tamperLog builds a closed log of several sealed segments, with
// checkpoints every few records, and returns its dir and segment files.
func tamperLog(t *testing.T, k testKeys) (string, []string) {
	t.Helper()
	dir := t.TempDir()
	cfg := testConfig(dir)
	cfg.SegmentMaxBytes = 16 << 10
	cfg.CheckpointInterval = time.Millisecond
	l := openLog(t, cfg, k.options())
	for i := range 80 {
		if err := l.Append(context.Background(), accessRecord(i)); err != nil {
			t.Fatal(err)
		}
		if i%5 == 0 {
			time.Sleep(2 * time.Millisecond) // let checkpoints interleave
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	segs := segmentFiles(t, dir)
	sort.Strings(segs)
	if len(segs) < 4 {
		t.Fatalf("want at least 4 segments, got %d", len(segs))
	}
	verifyDir(t, dir, k) // intact before tampering
	return dir, segs
}

// copyLog copies a log directory, so each tamper case starts intact.
func copyLog(t *testing.T, dir string, segs []string) (string, []string) {
	t.Helper()
	to := t.TempDir()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if e.Name() == lockName {
			continue
		}
		if err := os.WriteFile(filepath.Join(to, e.Name()), mustRead(t, filepath.Join(dir, e.Name())), 0o640); err != nil {
			t.Fatal(err)
		}
	}
	out := make([]string, len(segs))
	for i, s := range segs {
		out[i] = filepath.Join(to, filepath.Base(s))
	}
	return to, out
}

func readLines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.SplitAfter(string(b), "\n")
}

func writeLines(t *testing.T, path string, lines []string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(strings.Join(lines, "")), 0o640); err != nil {
		t.Fatal(err)
	}
}

func TestVerifyDetectsTampering(t *testing.T) {
	k := newTestKeys(t)
	other := newTestKeys(t)
	origDir, origSegs := tamperLog(t, k)
	for _, tc := range []struct {
		name string
		// tamper changes the log and returns the file and line verify must
		// name (line 0: any line; for a range, the edited line must be in
		// it).
		tamper   func(t *testing.T, dir string, segs []string) (file string, line int)
		rangeHit bool   // verify names the start of a range containing line
		want     string // part of the message
	}{
		{
			name: "edit one byte inside a value",
			tamper: func(t *testing.T, dir string, segs []string) (string, int) {
				lines := readLines(t, segs[1])
				lines[3] = strings.Replace(lines[3], "parquet", "parqueu", 1)
				writeLines(t, segs[1], lines)
				return segs[1], 4
			},
			rangeHit: true,
			want:     "altered",
		},
		{
			name: "edit one byte breaking the JSON",
			tamper: func(t *testing.T, dir string, segs []string) (string, int) {
				lines := readLines(t, segs[2])
				lines[2] = strings.Replace(lines[2], `"key":"`, `"key":'`, 1)
				writeLines(t, segs[2], lines)
				return segs[2], 3
			},
			want: "invalid JSON",
		},
		{
			name: "delete a record",
			tamper: func(t *testing.T, dir string, segs []string) (string, int) {
				lines := readLines(t, segs[1])
				writeLines(t, segs[1], append(lines[:2:2], lines[3:]...))
				return segs[1], 3
			},
			want: "deleted, inserted or moved",
		},
		{
			name: "swap two records",
			tamper: func(t *testing.T, dir string, segs []string) (string, int) {
				lines := readLines(t, segs[2])
				lines[1], lines[2] = lines[2], lines[1]
				writeLines(t, segs[2], lines)
				return segs[2], 2
			},
			want: "deleted, inserted or moved",
		},
		{
			name: "truncate the tail of a sealed segment",
			tamper: func(t *testing.T, dir string, segs []string) (string, int) {
				lines := readLines(t, segs[1])
				writeLines(t, segs[1], lines[:len(lines)-3]) // the seal and a record go
				// Its checkpoints cover records that are gone.
				return strings.TrimSuffix(segs[1], ".jsonl") + ".checkpoints", 0
			},
			want: "truncated",
		},
		{
			name: "truncate a sealed segment mid-line",
			tamper: func(t *testing.T, dir string, segs []string) (string, int) {
				b, _ := os.ReadFile(segs[0])
				os.WriteFile(segs[0], b[:len(b)-40], 0o640)
				return segs[0], 0
			},
			want: "truncated",
		},
		{
			name: "drop a whole segment",
			tamper: func(t *testing.T, dir string, segs []string) (string, int) {
				os.Remove(segs[2])
				os.Remove(strings.TrimSuffix(segs[2], ".jsonl") + ".checkpoints")
				return segs[3], 1
			},
			want: "missing",
		},
		{
			name: "drop the first segment",
			tamper: func(t *testing.T, dir string, segs []string) (string, int) {
				os.Remove(segs[0])
				os.Remove(strings.TrimSuffix(segs[0], ".jsonl") + ".checkpoints")
				return segs[1], 0
			},
			want: "missing",
		},
		{
			name: "forge a checkpoint signature",
			tamper: func(t *testing.T, dir string, segs []string) (string, int) {
				chk := strings.TrimSuffix(segs[1], ".jsonl") + ".checkpoints"
				lines := readLines(t, chk)
				// Flip one character of the signature's base64.
				i := strings.LastIndex(lines[1], `=\n"}`) - 5
				b := []byte(lines[1])
				b[i] ^= 1
				lines[1] = string(b)
				writeLines(t, chk, lines)
				return chk, 2
			},
			want: "signature",
		},
		{
			name: "checkpoint re-signed with another key",
			tamper: func(t *testing.T, dir string, segs []string) (string, int) {
				chk := strings.TrimSuffix(segs[1], ".jsonl") + ".checkpoints"
				lines := readLines(t, chk)
				forged := resign(t, lines[1], other)
				lines[1] = forged
				writeLines(t, chk, lines)
				return chk, 2
			},
			want: "unknown keys",
		},
		{
			name: "change a decision",
			tamper: func(t *testing.T, dir string, segs []string) (string, int) {
				lines := readLines(t, segs[1])
				lines[2] = strings.Replace(lines[2], `"decision":"allow"`, `"decision":"deny" `, 1)
				writeLines(t, segs[1], lines)
				return segs[1], 3
			},
			rangeHit: true,
			want:     "altered",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, segs := copyLog(t, origDir, origSegs)
			file, line := tc.tamper(t, dir, segs)
			_, err := Verify(os.DirFS(dir), VerifyOptions{Verifiers: k.verifiers})
			var ve *VerifyError
			if !errors.As(err, &ve) {
				t.Fatalf("verify: %v; want a VerifyError", err)
			}
			t.Logf("verify: %v", err)
			if ve.File != filepath.Base(file) {
				t.Fatalf("names %s, want %s", ve.File, filepath.Base(file))
			}
			switch {
			case line == 0:
			case tc.rangeHit:
				if ve.Line > line {
					t.Fatalf("names a range from line %d, the edit is on line %d", ve.Line, line)
				}
			case ve.Line != line:
				t.Fatalf("names line %d, want %d", ve.Line, line)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("message %q does not say %q", err, tc.want)
			}
		})
	}
}

// resign replaces a checkpoints-file line's note with the same text signed
// by another key.
func resign(t *testing.T, line string, k testKeys) string {
	t.Helper()
	var e checkpointEntry
	if err := json.Unmarshal([]byte(line), &e); err != nil {
		t.Fatal(err)
	}
	text := e.Note[:strings.Index(e.Note, "\n\n")+1]
	s, err := note.NewSigner(k.signer)
	if err != nil {
		t.Fatal(err)
	}
	msg, err := note.Sign(&note.Note{Text: text}, s)
	if err != nil {
		t.Fatal(err)
	}
	e.Note = string(msg)
	return string(appendCheckpointEntry(nil, &e))
}

// TestVerifyTrustedCheckpointDetectsCutLog: without an outside copy, a log
// whose newest segment was removed looks complete; a trusted checkpoint
// (held by a monitor, or uploaded) exposes it.
func TestVerifyTrustedCheckpointDetectsCutLog(t *testing.T) {
	k := newTestKeys(t)
	dir, segs := tamperLog(t, k)
	last := strings.TrimSuffix(segs[len(segs)-1], ".jsonl") + ".checkpoints"
	lines := readLines(t, last)
	var e checkpointEntry
	if err := json.Unmarshal([]byte(lines[len(lines)-2]), &e); err != nil {
		t.Fatal(err)
	}
	os.Remove(segs[len(segs)-1])
	os.Remove(last)
	if _, err := Verify(os.DirFS(dir), VerifyOptions{Verifiers: k.verifiers}); err == nil {
		t.Log("as expected, the cut log verifies on its own")
	}
	_, err := Verify(os.DirFS(dir), VerifyOptions{Verifiers: k.verifiers, Trusted: [][]byte{[]byte(e.Note)}})
	if err == nil || !strings.Contains(err.Error(), "removed") {
		t.Fatalf("verify with the trusted checkpoint: %v", err)
	}
}

// TestVerifyHiddenDataAfterPadding: the zero padding of the segment being
// written may not hide anything.
func TestVerifyHiddenDataAfterPadding(t *testing.T) {
	k := newTestKeys(t)
	dir := t.TempDir()
	l := openLog(t, testConfig(dir), k.options())
	l.Append(context.Background(), accessRecord(1))
	time.Sleep(50 * time.Millisecond) // a checkpoint
	seg := filepath.Join(dir, SegmentName(0))
	f, err := os.OpenFile(seg, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	fi, _ := f.Stat()
	f.WriteAt([]byte("hidden"), fi.Size()-100)
	f.Close()
	_, err = Verify(os.DirFS(dir), VerifyOptions{Verifiers: k.verifiers})
	if err == nil || !strings.Contains(err.Error(), "after the zero padding") {
		t.Fatalf("verify: %v", err)
	}
	l.Close()
	if !bytes.Contains(mustRead(t, seg), []byte("hidden")) {
		t.Log("sealing dropped the padding, and what was hidden in it")
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A last segment holding no record (its creation failed on a full disk
// or in a crash: an empty checkpoints file) is an artefact only where the
// writer could have created it: at the end of the records, not after a
// gap nor inside what a checkpoint covers.
func TestVerifyFailedSegmentCreation(t *testing.T) {
	k := newTestKeys(t)
	dir, segs := tamperLog(t, k)
	next := verifyDir(t, dir, k).Next
	for _, tc := range []struct {
		name  string
		first uint64
		want  string // "" = verifies, with an artefact
	}{
		{"at the end", next, ""},
		{"after a gap", next + 5, "are missing"},
		{"inside checkpointed records", next - 3, "overlaps"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, _ := copyLog(t, dir, segs)
			if err := os.WriteFile(filepath.Join(d, CheckpointsName(tc.first)), nil, 0o640); err != nil {
				t.Fatal(err)
			}
			res, err := Verify(os.DirFS(d), VerifyOptions{Verifiers: k.verifiers})
			if tc.want == "" {
				if err != nil || len(res.Artefacts) != 1 || !strings.Contains(res.Artefacts[0], "creation failed") {
					t.Fatalf("verify: %v, artefacts %q", err, res.Artefacts)
				}
				return
			}
			var ve *VerifyError
			if !errors.As(err, &ve) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("verify: %v, want a VerifyError saying %q", err, tc.want)
			}
		})
	}
}
