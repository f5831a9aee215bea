package sessionpolicy

import (
	"container/heap"
	"strings"
)

// coarsen merges prefixes until the document the groups make is at most
// max long: repeatedly, of all neighbouring prefixes in one statement
// (sorted), the pair with the longest common prefix (ties: the first
// statement, then the first pair) becomes that common prefix, and the
// prefixes it now covers go. A heap of the pairs keeps it O(n log n) for
// scopes of thousands of prefixes. It returns the merges made and the
// final size, kept up to date as prefixes go (Compile checks it against
// the document); ok is false when every statement is down to one prefix
// and the document is still too long.
func coarsen(groups []*stmtGroup, max int) (merges, size int, ok bool) {
	size = docSize(groups)
	if size <= max {
		return 0, size, true
	}
	lists := make([]*prefixList, len(groups))
	h := &pairHeap{}
	for gi, g := range groups {
		l := &prefixList{group: g, gi: gi}
		lists[gi] = l
		var prev *node
		for i, p := range g.prefixes {
			n := &node{p: p, idx: i, prev: prev, alive: true}
			if prev != nil {
				prev.next = n
				heap.Push(h, newPair(gi, prev, n))
			} else {
				l.head = n
			}
			prev = n
		}
	}
	for size > max {
		if h.Len() == 0 {
			for _, l := range lists {
				l.sync()
			}
			return merges, docSize(groups), false
		}
		pr := heap.Pop(h).(pair)
		if !pr.left.alive || !pr.right.alive || pr.left.next != pr.right {
			continue // stale
		}
		l := lists[pr.gi]
		left := pr.left
		merged := left.p[:pr.l]
		size -= l.entryLen(left.p) + l.entryLen(pr.right.p) + 1
		size += l.entryLen(merged)
		left.p = merged
		l.remove(pr.right)
		merges++
		for left.prev != nil && strings.HasPrefix(left.prev.p, merged) {
			size -= l.entryLen(left.prev.p) + 1
			l.remove(left.prev)
		}
		for left.next != nil && strings.HasPrefix(left.next.p, merged) {
			size -= l.entryLen(left.next.p) + 1
			l.remove(left.next)
		}
		if merged == "" && l.group.list {
			// s3:ListBucket on every prefix: the condition goes.
			l.sync()
			size = docSize(groups)
		}
		if left.prev != nil {
			heap.Push(h, newPair(pr.gi, left.prev, left))
		}
		if left.next != nil {
			heap.Push(h, newPair(pr.gi, left, left.next))
		}
	}
	for _, l := range lists {
		l.sync()
	}
	return merges, size, true
}

type node struct {
	p          string
	idx        int // position among the statement's first prefixes: ties
	prev, next *node
	alive      bool
}

type prefixList struct {
	group *stmtGroup
	gi    int
	head  *node
}

// entryLen is how long prefix p's entry is in the statement's JSON list.
func (l *prefixList) entryLen(p string) int {
	if l.group.list {
		return encodedLen(p + "*")
	}
	return encodedLen(arnPrefix + l.group.bucket + "/" + p + "*")
}

func (l *prefixList) remove(n *node) {
	n.alive = false
	if n.prev != nil {
		n.prev.next = n.next
	} else {
		l.head = n.next
	}
	if n.next != nil {
		n.next.prev = n.prev
	}
}

// sync writes the list back into the group.
func (l *prefixList) sync() {
	ps := l.group.prefixes[:0]
	for n := l.head; n != nil; n = n.next {
		ps = append(ps, n.p)
	}
	l.group.prefixes = ps
}

type pair struct {
	l, gi       int
	left, right *node
}

func newPair(gi int, a, b *node) pair {
	return pair{l: lcp(a.p, b.p), gi: gi, left: a, right: b}
}

type pairHeap []pair

func (h pairHeap) Len() int { return len(h) }
func (h pairHeap) Less(i, j int) bool {
	a, b := h[i], h[j]
	if a.l != b.l {
		return a.l > b.l
	}
	if a.gi != b.gi {
		return a.gi < b.gi
	}
	return a.left.idx < b.left.idx
}
func (h pairHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *pairHeap) Push(x any)   { *h = append(*h, x.(pair)) }
func (h *pairHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
