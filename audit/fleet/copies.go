package fleet

import (
	"bytes"
	"fmt"
	"io"
	"slices"
	"strings"

	"golang.org/x/mod/sumdb/note"

	"github.com/countersign/countersign/audit"
)

// Copy is one copy of one of a node's files: in a layer, or an older
// version of an object in a versioned bucket.
type Copy struct {
	// Name is the file's name in the node's log (seg-<first>.jsonl, ...).
	Name string
	// Where says which copy it is, for messages.
	Where string
	// Deleted marks a delete marker: the object was deleted (Open is nil).
	Deleted bool
	Open    func() (io.ReadCloser, error)
}

// Conflict is a file whose copies disagree.
type Conflict struct {
	File string
	Msg  string
}

func (c Conflict) String() string { return c.File + ": " + c.Msg }

// layerCopies lists the segment and checkpoints files of every layer.
func layerCopies(n Node) ([]Copy, error) {
	var out []Copy
	for _, l := range n.Layers {
		segs, err := audit.ListSegments(l.FS)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", l.Name, err)
		}
		for _, s := range segs {
			for _, f := range []struct {
				name string
				ok   bool
			}{{s.Name, s.HasRecords}, {s.IndexName, s.HasIndex}, {s.CheckpointsName, s.HasCheckpoints}} {
				if !f.ok {
					continue
				}
				fsys, name := l.FS, f.name
				out = append(out, Copy{Name: name, Where: l.Name + name, Open: func() (io.ReadCloser, error) { return fsys.Open(name) }})
			}
		}
	}
	return out, nil
}

// compareCopies groups copies by name and reports every name whose copies
// disagree.
func compareCopies(copies []Copy, verifiers note.Verifiers) []Conflict {
	byName := map[string][]Copy{}
	var names []string
	for _, c := range copies {
		if byName[c.Name] == nil {
			names = append(names, c.Name)
		}
		byName[c.Name] = append(byName[c.Name], c)
	}
	slices.Sort(names)
	var out []Conflict
	for _, name := range names {
		group := byName[name]
		if len(group) < 2 {
			continue
		}
		if msg := compareGroup(name, group, verifiers); msg != "" {
			out = append(out, Conflict{File: name, Msg: msg})
		}
	}
	return out
}

func compareGroup(name string, group []Copy, verifiers note.Verifiers) string {
	var kept []Copy
	var contents [][]byte
	for _, c := range group {
		if c.Deleted {
			var others []string
			for _, o := range group {
				if !o.Deleted {
					others = append(others, o.Where)
				}
			}
			return fmt.Sprintf("deleted (%s) while %s still holds it", c.Where, strings.Join(others, ", "))
		}
		rc, err := c.Open()
		if err != nil {
			return fmt.Sprintf("%s: %v", c.Where, err)
		}
		b, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			return fmt.Sprintf("%s: %v", c.Where, err)
		}
		kept = append(kept, c)
		contents = append(contents, b)
	}
	for i := 1; i < len(kept); i++ {
		a, b := contents[0], contents[i]
		if bytes.Equal(a, b) {
			continue
		}
		if strings.HasSuffix(name, ".checkpoints") {
			return forkMessage(kept[0].Where, a, kept[i].Where, b, verifiers)
		}
		return lineMessage(kept[0].Where, a, kept[i].Where, b)
	}
	return ""
}

// lineMessage names the first line where two copies of a segment differ.
func lineMessage(wa string, a []byte, wb string, b []byte) string {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	line := bytes.Count(a[:n], []byte{'\n'}) + 1
	seq := ""
	start := bytes.LastIndexByte(a[:n], '\n') + 1
	if rec, err := audit.DecodeRecord(firstLine(a[start:])); err == nil {
		seq = fmt.Sprintf(", seq %d", rec.Seq)
	}
	return fmt.Sprintf("the copies differ from line %d on%s: %s (%d bytes) and %s (%d bytes): one of them was altered", line, seq, wa, len(a), wb, len(b))
}

func firstLine(b []byte) []byte {
	if i := bytes.IndexByte(b, '\n'); i >= 0 {
		return b[:i]
	}
	return b
}

// forkMessage compares two copies of a checkpoints file checkpoint by
// checkpoint: two signed checkpoints of the same size with different
// roots are a fork of the node's checkpoint chain (two histories, both
// signed with the node's key).
func forkMessage(wa string, a []byte, wb string, b []byte, verifiers note.Verifiers) string {
	ca, erra := audit.ReadCheckpoints(bytes.NewReader(a), verifiers)
	cb, errb := audit.ReadCheckpoints(bytes.NewReader(b), verifiers)
	switch {
	case erra != nil:
		return fmt.Sprintf("the copies differ and %s is invalid: %v", wa, erra)
	case errb != nil:
		return fmt.Sprintf("the copies differ and %s is invalid: %v", wb, errb)
	}
	roots := map[int64]*audit.Checkpoint{}
	for _, c := range ca {
		roots[c.Size] = c
	}
	var agreed int64 = -1 // the largest size both sign alike
	allShared := true     // every checkpoint of b is one of a's
	for _, c := range cb {
		o := roots[c.Size]
		switch {
		case o == nil:
			allShared = false
		case o.Root != c.Root:
			return fmt.Sprintf("checkpoint chain forked: at tree size %d, %s signs root %s and %s signs root %s (two histories signed with the node's key)",
				c.Size, wa, o.Root, wb, c.Root)
		default:
			agreed = max(agreed, c.Size)
		}
	}
	if allShared || agreed == lastSize(ca) {
		return fmt.Sprintf("the copies differ: %s has %d checkpoints (up to size %d), %s has %d (up to size %d), the same where both have one: one copy was cut short",
			wa, len(ca), lastSize(ca), wb, len(cb), lastSize(cb))
	}
	return fmt.Sprintf("checkpoint chain forked after tree size %d: both copies sign it alike, then %s signs up to size %d and %s up to size %d at sizes the other does not have (two histories signed with the node's key)",
		agreed, wa, lastSize(ca), wb, lastSize(cb))
}

func lastSize(cps []*audit.Checkpoint) int64 {
	if len(cps) == 0 {
		return 0
	}
	return cps[len(cps)-1].Size
}
