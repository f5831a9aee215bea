// Package fleet reads the audit logs of every node of a deployment
// together: from the audit bucket (every node uploads under <node_id>/),
// from directories laid out the same way, and from nodes' own audit
// directories. Verify checks each node's log (in parallel) and that every
// copy of a file agrees with the others; Query answers a question over all
// nodes, merged in time order.
package fleet

import (
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
)

// Root is a place holding several nodes' logs, one directory per node id:
// the audit bucket (upload.BucketFS at the bucket's root) or a local copy
// of it.
type Root struct {
	Name string // for messages, e.g. "s3://audit/"
	FS   fs.FS
}

// Layer is one place holding (part of) one node's log.
type Layer struct {
	Name string // for messages: "s3://audit/node-1/", "/var/lib/countersign/audit"
	FS   fs.FS
}

// Node is one node's log: its layers, in the order they are read (a name
// is opened from the first layer that has it; see upload.UnionFS).
type Node struct {
	ID     string
	Layers []Layer
}

// Discover lists the nodes of roots (every top-level directory whose name
// is a node id) and adds dirs, each a node's own audit directory, before
// the roots' layers of that node (the local disk holds the newest
// segments; uploaded ones are the same bytes). Nodes are sorted by id.
func Discover(roots []Root, dirs map[string][]Layer) ([]Node, error) {
	byID := map[string]*Node{}
	get := func(id string) *Node {
		n := byID[id]
		if n == nil {
			n = &Node{ID: id}
			byID[id] = n
		}
		return n
	}
	ids := make([]string, 0, len(dirs))
	for id := range dirs {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		if !validNodeID(id) {
			return nil, fmt.Errorf("node id %q: letters, digits, '.', '_' or '-'", id)
		}
		get(id).Layers = append(get(id).Layers, dirs[id]...)
	}
	for _, r := range roots {
		ents, err := fs.ReadDir(r.FS, ".")
		if err != nil {
			return nil, fmt.Errorf("%s: %w", r.Name, err)
		}
		for _, e := range ents {
			if !e.IsDir() || !validNodeID(e.Name()) {
				continue
			}
			sub, err := fs.Sub(r.FS, e.Name())
			if err != nil {
				return nil, err
			}
			n := get(e.Name())
			n.Layers = append(n.Layers, Layer{Name: strings.TrimSuffix(r.Name, "/") + "/" + e.Name() + "/", FS: sub})
		}
	}
	if len(byID) == 0 {
		return nil, errors.New("no node logs found: a root holds one directory per node id (<node_id>/seg-...)")
	}
	out := make([]Node, 0, len(byID))
	for _, n := range byID {
		out = append(out, *n)
	}
	slices.SortFunc(out, func(a, b Node) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}

// validNodeID is audit.node_id's alphabet.
func validNodeID(s string) bool {
	if s == "" || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}
