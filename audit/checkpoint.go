package audit

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// A checkpoint is a signed note (golang.org/x/mod/sumdb/note) whose text
// is the C2SP tlog-checkpoint body:
//
//	countersign/<node>
//	<tree size>
//	<base64 root hash>
//
// This is tlog.FormatTree's layout with the origin line in place of its
// fixed "go.sum database tree": the origin names the log, so a checkpoint
// of one node's log can never be presented as another's. Later lines, if
// any, are ignored (C2SP extension lines).
//
// Checkpoints are appended to the segment's checkpoints file
// (seg-<first>.checkpoints), one JSON object per line:
//
//	{"size":N,"time":"...","offset":O,"frontier":["<base64>",...],"note":"<signed note>"}
//
// size and note are the checkpoint; offset (where record size starts in
// the segment) and frontier (the tree's right edge at size) are unsigned
// hints for fast startup and for verifying a segment on its own; both are
// checked against the signed root before use. Every checkpoints file
// starts with the segment's opening checkpoint (size = the segment's first
// seq); a sealed segment's last checkpoint covers its seal record.

// OriginPrefix starts every checkpoint's origin line.
const OriginPrefix = "countersign/"

// Checkpoint is a parsed, signature-checked checkpoint.
type Checkpoint struct {
	Origin string
	Size   int64
	Root   tlog.Hash
	// Note is the signed note as written.
	Note []byte
	// Signers names the keys whose signatures verified ("name+hash").
	Signers []string
}

// formatCheckpoint is the note text of a checkpoint.
func formatCheckpoint(origin string, size int64, root tlog.Hash) []byte {
	return fmt.Appendf(nil, "%s\n%d\n%s\n", origin, size, root)
}

// parseCheckpointText parses a checkpoint note's text.
func parseCheckpointText(text string) (origin string, size int64, root tlog.Hash, err error) {
	lines := strings.SplitN(text, "\n", 4)
	if len(lines) < 4 || !strings.HasPrefix(lines[0], OriginPrefix) {
		return "", 0, root, errors.New("malformed checkpoint text")
	}
	size, err = strconv.ParseInt(lines[1], 10, 64)
	if err != nil || size < 0 || lines[1] != strconv.FormatInt(size, 10) {
		return "", 0, root, errors.New("malformed checkpoint size")
	}
	h, err := base64.StdEncoding.DecodeString(lines[2])
	if err != nil || len(h) != tlog.HashSize {
		return "", 0, root, errors.New("malformed checkpoint root hash")
	}
	copy(root[:], h)
	return lines[0], size, root, nil
}

// signCheckpoint returns the signed note for a tree.
func signCheckpoint(s note.Signer, origin string, size int64, root tlog.Hash) ([]byte, error) {
	return note.Sign(&note.Note{Text: string(formatCheckpoint(origin, size, root))}, s)
}

// OpenCheckpoint checks a checkpoint note's signatures against verifiers
// and parses it. At least one known key must have signed it, and no known
// key's signature may be invalid (note.Open's rules).
func OpenCheckpoint(msg []byte, verifiers note.Verifiers) (*Checkpoint, error) {
	n, err := note.Open(msg, verifiers)
	if err != nil {
		var unverified *note.UnverifiedNoteError
		if errors.As(err, &unverified) {
			var names []string
			for _, s := range unverified.Note.UnverifiedSigs {
				names = append(names, fmt.Sprintf("%s+%08x", s.Name, s.Hash))
			}
			return nil, fmt.Errorf("checkpoint signed only by unknown keys %v", names)
		}
		return nil, fmt.Errorf("checkpoint signature: %w", err)
	}
	origin, size, root, err := parseCheckpointText(n.Text)
	if err != nil {
		return nil, err
	}
	cp := &Checkpoint{Origin: origin, Size: size, Root: root, Note: msg}
	for _, s := range n.Sigs {
		cp.Signers = append(cp.Signers, fmt.Sprintf("%s+%08x", s.Name, s.Hash))
	}
	return cp, nil
}

// openCheckpointUnverified parses a checkpoint without checking its
// signature, and returns the name+hash of its first signature. The writer
// uses it at startup: it trusts its own directory (verify does not), and
// its key may have been rotated since.
func openCheckpointUnverified(msg []byte) (origin string, size int64, root tlog.Hash, signer string, err error) {
	_, err = note.Open(msg, note.VerifierList())
	var unverified *note.UnverifiedNoteError
	if !errors.As(err, &unverified) {
		return "", 0, root, "", fmt.Errorf("malformed checkpoint note: %v", err)
	}
	n := unverified.Note
	if len(n.UnverifiedSigs) > 0 {
		signer = fmt.Sprintf("%s+%08x", n.UnverifiedSigs[0].Name, n.UnverifiedSigs[0].Hash)
	}
	origin, size, root, err = parseCheckpointText(n.Text)
	return origin, size, root, signer, err
}

// checkpointEntry is one line of a checkpoints file.
type checkpointEntry struct {
	Size     int64       `json:"size"`
	Time     time.Time   `json:"time"`
	Offset   int64       `json:"offset"`
	Frontier []tlog.Hash `json:"frontier"`
	Note     string      `json:"note"`

	line int // 1-based line in the file, when read
}

// appendCheckpointEntry appends one line (with newline). encoding/json is
// fine here: one checkpoint a second at most.
func appendCheckpointEntry(dst []byte, e *checkpointEntry) []byte {
	b, err := json.Marshal(e)
	if err != nil {
		panic("audit: checkpoint entry: " + err.Error()) // only strings, ints, hashes
	}
	dst = append(dst, b...)
	return append(dst, '\n')
}

// readCheckpointEntries parses a checkpoints file. A last line that is
// incomplete or does not parse is reported as torn (its byte offset), not
// as an error: the process may have died while writing it. Anything wrong
// before the last line is an error.
func readCheckpointEntries(r io.Reader) (entries []checkpointEntry, torn int64, err error) {
	br := bufio.NewReaderSize(r, 64<<10)
	var off int64
	torn = -1
	for line := 1; ; line++ {
		b, rerr := br.ReadBytes('\n')
		if len(b) > 0 {
			if torn >= 0 {
				return nil, -1, fmt.Errorf("line %d: invalid checkpoint entry", line-1)
			}
			var e checkpointEntry
			if b[len(b)-1] != '\n' || json.Unmarshal(b, &e) != nil || e.Note == "" {
				torn = off
			} else {
				e.line = line
				entries = append(entries, e)
			}
			off += int64(len(b))
		}
		if rerr == io.EOF {
			return entries, torn, nil
		}
		if rerr != nil {
			return nil, -1, rerr
		}
	}
}

// hashesEqual compares frontier lists.
func hashesEqual(a, b []tlog.Hash) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !bytes.Equal(a[i][:], b[i][:]) {
			return false
		}
	}
	return true
}
