package audit

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/internal/strictjson"
)

// FuzzDecodeHead: verify and startup read access records through
// parseHead's fixed-layout fast path, the tools through DecodeRecord.
// Where both accept a line they must read the same seq, time, node and
// kind: a line that reads one way in verify and another in query would
// let the two disagree about which record it is. (The fast path does not
// type-check the fields after the head, so it accepts some lines the full
// decoder refuses; every line's bytes are covered by the Merkle tree, so
// such a line can only come from the writer, which the encoder tests
// cover.) Any line must not panic.
func FuzzDecodeHead(f *testing.F) {
	mac := newTokenMAC([]byte("fuzz-hmac-key-0123456789abcdef"))
	nonce := [8]byte{1, 2, 3, 4, 5, 6, 7, 8}
	ts := []byte(time.Date(2026, 11, 30, 12, 0, 0, 123456789, time.UTC).Format(time.RFC3339Nano))
	for i, r := range []*Record{accessRecord(1), accessRecord(2), {Kind: KindLifecycle, Event: EventStart, Detail: map[string]string{"k": "v"}}} {
		line := appendHead(nil, uint64(i), &nonce, ts)
		line = appendTail(line, r, "node-a", mac)
		f.Add(line)
		f.Add(bytes.Replace(line, []byte(`"kind":"access"`), []byte(`"kind":"lifecycle"`), 1))
		f.Add(bytes.Replace(line, []byte(`"seq":`), []byte(`"seq":0`), 1))
		f.Add(append(line[:len(line)-1:len(line)-1], []byte(`,"seq":7}`)...))
	}
	var c strictjson.Checker // kept between inputs, as verify keeps it
	f.Fuzz(func(t *testing.T, line []byte) {
		h, err := decodeHead(&c, line)
		if err != nil {
			return
		}
		r, derr := DecodeRecord(line)
		if derr != nil {
			return
		}
		if r.Seq != h.seq || !r.Time.Equal(h.time) || r.Node != string(h.node) || r.Kind != h.kind {
			t.Fatalf("fast path read seq %d time %v node %q kind %q, full decode seq %d time %v node %q kind %q: %q",
				h.seq, h.time, h.node, h.kind, r.Seq, r.Time, r.Node, r.Kind, line)
		}
	})
}

// FuzzReadCheckpointEntries: a checkpoints file is read at startup and by
// verify; any content is an error or entries, never a panic, and a torn
// offset is within the file.
func FuzzReadCheckpointEntries(f *testing.F) {
	e := &checkpointEntry{Size: 3, Time: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC), Offset: 42, Note: "countersign/node-a\n3\nAAAA\n\n— k sig\n"}
	good := appendCheckpointEntry(nil, e)
	f.Add(good)
	f.Add(append(append([]byte{}, good...), good[:10]...))
	f.Add([]byte("{}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		entries, torn, err := readCheckpointEntries(strings.NewReader(string(data)))
		if err != nil {
			return
		}
		if torn > int64(len(data)) {
			t.Fatalf("torn offset %d beyond %d bytes", torn, len(data))
		}
		for _, e := range entries {
			if e.Note == "" {
				t.Fatalf("entry without note accepted: %+v", e)
			}
		}
	})
}
