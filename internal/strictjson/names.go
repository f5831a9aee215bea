package strictjson

import "bytes"

// names holds the member names of the open objects, unescaped, to refuse
// one that repeats. Names are compared unescaped because "\u0061" and "a"
// are the same name to every parser.
type names struct {
	buf  []byte    // the names' bytes, innermost object last
	refs []nameRef // spans of buf
	objs []object  // one per open non-empty object

	// Backing for the slices above, enough for a token or an audit
	// record: one allocation instead of one per growth.
	smallBuf  [192]byte
	smallRefs [24]nameRef
	smallObjs [4]object
}

func newNames() *names {
	n := new(names)
	n.buf, n.refs, n.objs = n.smallBuf[:0], n.smallRefs[:0], n.smallObjs[:0]
	return n
}

type nameRef struct{ start, end int }

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

// add records raw, a member name as written, in the innermost object and
// reports whether that object already has it, and the name unescaped.
func (n *names) add(raw []byte) (name []byte, dup bool) {
	start := len(n.buf)
	if bytes.IndexByte(raw, '\\') < 0 {
		n.buf = append(n.buf, raw...)
	} else {
		n.buf = appendUnquoted(n.buf, raw)
	}
	name = n.buf[start:]
	o := &n.objs[len(n.objs)-1]
	if o.set != nil {
		if _, dup := o.set[string(name)]; dup {
			return name, true
		}
		o.set[string(name)] = struct{}{}
	} else {
		for _, r := range n.refs[o.first:] {
			if bytes.Equal(n.buf[r.start:r.end], name) {
				return name, true
			}
		}
	}
	n.refs = append(n.refs, nameRef{start, len(n.buf)})
	if o.set == nil && len(n.refs)-o.first > pairwiseMax {
		o.set = make(map[string]struct{}, 2*pairwiseMax)
		for _, r := range n.refs[o.first:] {
			o.set[string(n.buf[r.start:r.end])] = struct{}{}
		}
	}
	return name, false
}
