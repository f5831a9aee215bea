package strictjson

import (
	"bytes"
	"encoding/binary"
)

// names holds the member names of the open objects, to refuse one that
// repeats. Names are compared unescaped because "\u0061" and "a" are the
// same name to every parser. A name without escapes is its own bytes in
// the input; only escaped names are unescaped, into buf. Each name also
// has a fingerprint, so that the pairwise comparison (an audit record's
// 25 top-level names are 300 pairs) compares one word per pair and the
// bytes only when the fingerprints are equal.
type names struct {
	data []byte    // the input: names without escapes are spans of it
	buf  []byte    // escaped names, unescaped, innermost object last
	refs []nameRef // one per name of the open objects
	objs []object  // one per open non-empty object

	// First backing for the slices above, enough for a token or an
	// audit record: one allocation (of names) instead of one per growth.
	smallBuf  [64]byte
	smallRefs [32]nameRef
	smallObjs [4]object
}

// reset readies n for the input data, keeping its slices' capacity.
func (n *names) reset(data []byte) {
	n.data = data
	if n.refs == nil {
		n.buf, n.refs, n.objs = n.smallBuf[:0], n.smallRefs[:0], n.smallObjs[:0]
	}
	clear(n.objs[:cap(n.objs)]) // an input refused mid-object leaves maps
	n.buf, n.refs, n.objs = n.buf[:0], n.refs[:0], n.objs[:0]
}

// nameRef is a name's span: of data, or of buf when start < 0 (the span
// is then ^start:end).
type nameRef struct {
	fp         uint64
	start, end int
}

type object struct {
	first, bufLen int // where the object's names start in refs and buf
	// set replaces the pairwise comparison once the object has more than
	// pairwiseMax names, so that a crafted input cannot make it quadratic.
	set map[string]struct{}
}

// pairwiseMax: real objects (token claims, audit records) have a few
// names, for which comparing all pairs beats a map.
const pairwiseMax = 32

func (n *names) open() {
	n.objs = append(n.objs, object{first: len(n.refs), bufLen: len(n.buf)})
}

func (n *names) close() {
	o := n.objs[len(n.objs)-1]
	n.objs = n.objs[:len(n.objs)-1]
	n.refs, n.buf = n.refs[:o.first], n.buf[:o.bufLen]
}

func (n *names) bytes(r nameRef) []byte {
	if r.start < 0 {
		return n.buf[^r.start:r.end]
	}
	return n.data[r.start:r.end]
}

// fingerprint mixes a name's length with its first and last eight bytes:
// equal names have equal fingerprints; different ones rarely do, and are
// then told apart by their bytes.
func fingerprint(name []byte) uint64 {
	h := uint64(len(name))
	if len(name) >= 8 {
		return h ^ binary.LittleEndian.Uint64(name)*0x9e3779b97f4a7c15 ^ binary.LittleEndian.Uint64(name[len(name)-8:])<<1
	}
	for _, c := range name {
		h = h<<8 | uint64(c)
	}
	return h
}

// add records the member name at data[start:end] (as written, without its
// quotes) in the innermost object and reports whether that object already
// has it, and the name unescaped.
func (n *names) add(start, end int) (name []byte, dup bool) {
	r := nameRef{start: start, end: end}
	if raw := n.data[start:end]; bytes.IndexByte(raw, '\\') >= 0 {
		r.start = ^len(n.buf)
		n.buf = appendUnquoted(n.buf, raw)
		r.end = len(n.buf)
	}
	name = n.bytes(r)
	o := &n.objs[len(n.objs)-1]
	if o.set != nil {
		if _, dup := o.set[string(name)]; dup {
			return name, true
		}
		o.set[string(name)] = struct{}{}
	} else {
		r.fp = fingerprint(name)
		for _, q := range n.refs[o.first:] {
			if q.fp == r.fp && bytes.Equal(n.bytes(q), name) {
				return name, true
			}
		}
	}
	n.refs = append(n.refs, r)
	if o.set == nil && len(n.refs)-o.first > pairwiseMax {
		o.set = make(map[string]struct{}, 2*pairwiseMax)
		for _, q := range n.refs[o.first:] {
			o.set[string(n.bytes(q))] = struct{}{}
		}
	}
	return name, false
}
