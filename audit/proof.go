package audit

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// Proof is an inclusion proof: the record's line is leaf Index of the tree
// whose size and root a signed checkpoint states. Anyone with the verifier
// key can check it with the record alone (Check, "countersign audit
// verify-proof"), without the log.
type Proof struct {
	Record     string      `json:"record"`     // the record's line, without newline
	Index      int64       `json:"index"`      // its seq: the leaf index
	TreeSize   int64       `json:"tree_size"`  // the checkpoint's size
	Checkpoint string      `json:"checkpoint"` // the signed checkpoint note
	Hashes     []tlog.Hash `json:"proof"`      // tlog.RecordProof, base64
}

// Prove builds the inclusion proof of the record with event id id against
// the checkpoint of the given size, or the newest checkpoint in the log if
// size is 0. It reads the segments from the record's to the checkpoint's,
// seeding the tree from the record segment's opening checkpoint, so the
// segments before the record's need not be present.
func Prove(fsys fs.FS, id string, size int64) (*Proof, error) {
	seq, ok := seqFromID(id)
	if !ok {
		return nil, fmt.Errorf("%q is not an event id (32 hex digits)", id)
	}
	segs, err := ListSegments(fsys)
	if err != nil {
		return nil, err
	}
	start := -1
	for i, s := range segs {
		if s.First <= seq && s.HasRecords {
			start = i
		}
	}
	if start < 0 {
		return nil, fmt.Errorf("no segment holds seq %d", seq)
	}
	cp, err := findCheckpoint(fsys, segs, size)
	if err != nil {
		return nil, err
	}
	if cp.Size <= int64(seq) {
		return nil, fmt.Errorf("record %d is not covered by the checkpoint of size %d yet (checkpoints follow within checkpoint_interval)", seq, cp.Size)
	}
	_, osize, root, _, err := openCheckpointUnverified([]byte(cp.Note))
	if err != nil || osize != cp.Size {
		return nil, fmt.Errorf("checkpoint of size %d: malformed", cp.Size)
	}
	opening, err := readCheckpointsOf(fsys, segs[start])
	if err != nil {
		return nil, err
	}
	store, err := newHashStore(int64(segs[start].First), opening[0].Frontier)
	if err != nil {
		return nil, err
	}
	limits := validLimits(fsys, segs)
	p := &Proof{Index: int64(seq), TreeSize: cp.Size, Checkpoint: cp.Note}
	for i := start; i < len(segs) && store.n < cp.Size; i++ {
		if !segs[i].HasRecords {
			continue
		}
		if int64(segs[i].First) != store.n {
			return nil, fmt.Errorf("%s starts at seq %d, expected %d: run audit verify", segs[i].Name, segs[i].First, store.n)
		}
		err := eachLine(fsys, segs[i].Name, limits[i], func(line []byte, _ int64, num int) error {
			if store.n == int64(seq) {
				rec, err := DecodeRecord(line)
				if err != nil || rec.Seq != seq {
					return fmt.Errorf("%s:%d: not record %d: run audit verify", segs[i].Name, num, seq)
				}
				if rec.ID != id {
					return fmt.Errorf("no record with id %s (seq %d has id %s)", id, seq, rec.ID)
				}
				p.Record = string(line)
			}
			if err := store.appendLeaf(tlog.RecordHash(line)); err != nil {
				return err
			}
			if store.n == cp.Size {
				return errStop
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	if store.n != cp.Size || p.Record == "" {
		return nil, fmt.Errorf("the log has %d records, fewer than its checkpoint (%d): run audit verify", store.n, cp.Size)
	}
	if r, err := store.root(); err != nil || r != root {
		return nil, errors.New("the records do not match the checkpoint: run audit verify")
	}
	p.Hashes, err = tlog.ProveRecord(cp.Size, int64(seq), store)
	if err != nil {
		return nil, err
	}
	return p, nil
}

// findCheckpoint returns the checkpoint entry with the given size, or the
// newest one for size 0.
func findCheckpoint(fsys fs.FS, segs []SegmentInfo, size int64) (*checkpointEntry, error) {
	for i := len(segs) - 1; i >= 0; i-- {
		if !segs[i].HasCheckpoints {
			continue
		}
		entries, err := readCheckpointsOf(fsys, segs[i])
		if err != nil {
			return nil, err
		}
		for j := len(entries) - 1; j >= 0; j-- {
			if size == 0 || entries[j].Size == size {
				return &entries[j], nil
			}
			if entries[j].Size < size {
				return nil, fmt.Errorf("no checkpoint of size %d", size)
			}
		}
	}
	return nil, fmt.Errorf("no checkpoint of size %d", size)
}

func readCheckpointsOf(fsys fs.FS, seg SegmentInfo) ([]checkpointEntry, error) {
	f, err := fsys.Open(seg.CheckpointsName)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	entries, _, err := readCheckpointEntries(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", seg.CheckpointsName, err)
	}
	if len(entries) == 0 {
		return nil, fmt.Errorf("%s: no checkpoint", seg.CheckpointsName)
	}
	return entries, nil
}

// Check verifies the proof: the checkpoint's signature under verifiers,
// the record's syntax and seq, and the record's inclusion in the signed
// tree. It returns the record and the checkpoint.
func (p *Proof) Check(verifiers note.Verifiers) (*Record, *Checkpoint, error) {
	cp, err := OpenCheckpoint([]byte(p.Checkpoint), verifiers)
	if err != nil {
		return nil, nil, err
	}
	if cp.Size != p.TreeSize {
		return nil, nil, fmt.Errorf("proof is for tree size %d, checkpoint is %d", p.TreeSize, cp.Size)
	}
	rec, err := DecodeRecord([]byte(p.Record))
	if err != nil {
		return nil, nil, fmt.Errorf("record: %w", err)
	}
	if int64(rec.Seq) != p.Index {
		return nil, nil, fmt.Errorf("record has seq %d, proof is for leaf %d", rec.Seq, p.Index)
	}
	if err := tlog.CheckRecord(p.Hashes, cp.Size, cp.Root, p.Index, tlog.RecordHash([]byte(p.Record))); err != nil {
		return nil, nil, fmt.Errorf("record is not in the signed tree: %w", err)
	}
	return rec, cp, nil
}

// DirFS is the fs.FS for a local log directory (os.DirFS), for the tools.
func DirFS(dir string) (fs.FS, error) {
	fi, err := os.Stat(dir)
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("%s is not a directory", dir)
	}
	return os.DirFS(dir), nil
}
