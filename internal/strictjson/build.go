package strictjson

import (
	"bytes"
	"encoding/json"
)

// builder makes Decode's value while the scanner checks the input; the
// scanner calls it only for what it has accepted so far.
type builder struct {
	stack []frame // the open containers, innermost last
	root  any
	buf   []byte // scratch for unescaping
	small [4]frame
}

func newBuilder() *builder {
	b := new(builder)
	b.stack = b.small[:0]
	return b
}

type frame struct {
	obj    map[string]any
	arr    []any
	key    string // the member whose value comes next
	object bool
}

func (b *builder) open(object bool) {
	f := frame{object: object}
	if object {
		f.obj = map[string]any{}
	} else {
		f.arr = []any{} // encoding/json gives [] as empty, not nil
	}
	b.stack = append(b.stack, f)
}

func (b *builder) close() {
	f := b.stack[len(b.stack)-1]
	b.stack = b.stack[:len(b.stack)-1]
	if f.object {
		b.value(f.obj)
	} else {
		b.value(f.arr)
	}
}

// key sets the name of the member whose value comes next and, if unique,
// reports whether the object already has a member of that name.
func (b *builder) key(raw []byte, unique bool) (name string, dup bool) {
	f := &b.stack[len(b.stack)-1]
	f.key = b.text(raw)
	if unique {
		_, dup = f.obj[f.key]
	}
	return f.key, dup
}

func (b *builder) str(raw []byte) { b.value(b.text(raw)) }

// number keeps the literal: float64 would round large integer ids.
func (b *builder) number(raw []byte) { b.value(json.Number(raw)) }

func (b *builder) literal(first byte) {
	switch first {
	case 't':
		b.value(true)
	case 'f':
		b.value(false)
	default:
		b.value(nil)
	}
}

func (b *builder) value(v any) {
	if len(b.stack) == 0 {
		b.root = v
		return
	}
	f := &b.stack[len(b.stack)-1]
	if f.object {
		f.obj[f.key] = v
	} else {
		f.arr = append(f.arr, v)
	}
}

func (b *builder) text(raw []byte) string {
	if bytes.IndexByte(raw, '\\') < 0 {
		return string(raw)
	}
	b.buf = appendUnquoted(b.buf[:0], raw)
	return string(b.buf)
}
