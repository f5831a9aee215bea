package audit

import (
	"encoding/json"
	"fmt"
	"strconv"
)

// DecodeRecord parses one line (with or without its newline) of a segment
// file. It is for the tools, so it uses encoding/json; unknown fields are
// accepted (a later schema may add some), but the version must be 1, the
// kind known and the id well-formed for the seq.
func DecodeRecord(line []byte) (*Record, error) {
	if n := len(line); n > 0 && line[n-1] == '\n' {
		line = line[:n-1]
	}
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
