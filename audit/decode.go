package audit

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/countersign/countersign/internal/strictjson"
)

// DecodeRecord parses one line (with or without its newline) of a segment
// file. It is for the tools, so it uses encoding/json; unknown fields are
// accepted (a later schema may add some), but the version must be 1, the
// kind known and the id well-formed for the seq.
func DecodeRecord(line []byte) (*Record, error) {
	if n := len(line); n > 0 && line[n-1] == '\n' {
		line = line[:n-1]
	}
	if err := checkJSON(new(strictjson.Checker), line); err != nil {
		return nil, err
	}
	return decodeChecked(line)
}

// decodeChecked is DecodeRecord for a line checkJSON accepted.
func decodeChecked(line []byte) (*Record, error) {
	r := new(Record)
	if err := json.Unmarshal(line, r); err != nil {
		return nil, fmt.Errorf("invalid JSON: %w", err)
	}
	if r.Version != SchemaVersion {
		return nil, fmt.Errorf("schema version %d, want %d", r.Version, SchemaVersion)
	}
	if r.Kind != KindAccess && r.Kind != KindLifecycle {
		return nil, fmt.Errorf("unknown kind %q", r.Kind)
	}
	if seq, ok := seqFromID(r.ID); !ok || seq != r.Seq {
		return nil, fmt.Errorf("id %q does not carry seq %d", r.ID, r.Seq)
	}
	if r.Time.IsZero() {
		return nil, fmt.Errorf("no time")
	}
	return r, nil
}

// checkJSON requires what the writer always produces and decoders may
// read differently otherwise (see internal/strictjson): valid UTF-8
// (encoding/json would replace invalid bytes), strict JSON, no raw control
// characters, not even white space (the writer writes none, and a record
// is one line), and no object with a name twice (encoding/json keeps the
// last, parseHead reads the first: FuzzDecodeHead found a line whose seq
// read 0 one way and 7 the other). Depth 300 is fastjson's bound, which
// checked lines before. c is the scratch, kept by a caller that checks
// many lines.
func checkJSON(c *strictjson.Checker, line []byte) error {
	e := c.Check(line, strictjson.Options{ValidUTF8: true, UniqueNames: true, SpaceOnly: true, MaxDepth: 300})
	switch {
	case e == nil:
		return nil
	case e.Kind == strictjson.InvalidUTF8:
		return errors.New("invalid UTF-8")
	case e.Kind == strictjson.DuplicateName:
		return fmt.Errorf("invalid JSON: key %q appears twice in an object", e.Name)
	}
	return fmt.Errorf("invalid JSON at byte %d: %s", e.Offset, e.Msg)
}

// seqFromID returns the seq encoded in an event id's last 16 hex digits.
func seqFromID(id string) (uint64, bool) {
	if len(id) != 32 {
		return 0, false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return 0, false
		}
	}
	seq, err := strconv.ParseUint(id[16:], 16, 64)
	return seq, err == nil
}

// lineHead is what verify and startup need of a line: the writer-assigned
// fields and the kind, parsed from the fixed-order head without decoding
// the whole line, plus the full record for lifecycle lines (whose event
// and detail matter to them).
type lineHead struct {
	seq  uint64
	time time.Time
	node []byte // the line's bytes for access records: valid as long as the line
	kind Kind
	rec  *Record // lifecycle records, or lines not in the writer's layout
}

// decodeHead checks one line as strictly as DecodeRecord — valid UTF-8,
// valid JSON without duplicate keys (checkJSON), schema version, id
// matching seq, a time, a known kind — in a fraction of its time for
// access records. c is checkJSON's scratch.
func decodeHead(c *strictjson.Checker, line []byte) (lineHead, error) {
	if err := checkJSON(c, line); err != nil {
		return lineHead{}, err
	}
	h, ok := parseHead(line)
	if ok && h.kind == KindAccess {
		return h, nil
	}
	r, err := decodeChecked(line)
	if err != nil {
		return lineHead{}, err
	}
	return lineHead{seq: r.Seq, time: r.Time, node: []byte(r.Node), kind: r.Kind, rec: r}, nil
}

// parseHead parses {"v":1,"seq":N,"id":"<32 hex>","time":"<RFC 3339>","node":"<id>","kind":"<kind>"
// exactly as the encoder writes it.
func parseHead(b []byte) (h lineHead, ok bool) {
	rest, ok := bytes.CutPrefix(b, []byte(`{"v":1,"seq":`))
	if !ok {
		return h, false
	}
	i := 0
	for i < len(rest) && rest[i] >= '0' && rest[i] <= '9' {
		i++
	}
	seq, err := strconv.ParseUint(string(rest[:i]), 10, 64)
	if err != nil || (i > 1 && rest[0] == '0') {
		return h, false
	}
	if rest, ok = bytes.CutPrefix(rest[i:], []byte(`,"id":"`)); !ok || len(rest) < 32 {
		return h, false
	}
	if s, ok := seqFromID(string(rest[:32])); !ok || s != seq {
		return h, false
	}
	if rest, ok = bytes.CutPrefix(rest[32:], []byte(`","time":"`)); !ok {
		return h, false
	}
	j := bytes.IndexByte(rest, '"')
	if j < 0 {
		return h, false
	}
	t, err := time.Parse(time.RFC3339Nano, string(rest[:j]))
	if err != nil {
		return h, false
	}
	if rest, ok = bytes.CutPrefix(rest[j:], []byte(`","node":"`)); !ok {
		return h, false
	}
	j = bytes.IndexByte(rest, '"')
	if j < 0 || !validNodeID(string(rest[:j])) {
		return h, false
	}
	node := rest[:j:j]
	if rest, ok = bytes.CutPrefix(rest[j:], []byte(`","kind":"`)); !ok {
		return h, false
	}
	switch {
	case bytes.HasPrefix(rest, []byte(`access"`)):
		h.kind = KindAccess
	case bytes.HasPrefix(rest, []byte(`lifecycle"`)):
		h.kind = KindLifecycle
	default:
		return h, false
	}
	h.seq, h.time, h.node = seq, t, node
	return h, true
}
