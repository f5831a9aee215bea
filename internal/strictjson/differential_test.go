package strictjson

import (
	"bytes"
	"reflect"
	"strconv"
	"testing"
	"unicode/utf8"
)

// The duplicate-name bookkeeping and the whole-input precheck as they
// were before they were made allocation-free (fingerprints, names read in
// place, vectorized SpaceOnly search): the fuzz targets below hold the new
// code to exactly their answers.

type oldNames struct {
	buf  []byte
	refs []oldNameRef
	objs []oldObject
}

type oldNameRef struct{ start, end int }

type oldObject struct {
	first, bufLen int
	set           map[string]struct{}
}

func (n *oldNames) open() {
	n.objs = append(n.objs, oldObject{first: len(n.refs), bufLen: len(n.buf)})
}

func (n *oldNames) close() {
	o := n.objs[len(n.objs)-1]
	n.objs = n.objs[:len(n.objs)-1]
	n.refs, n.buf = n.refs[:o.first], n.buf[:o.bufLen]
}

func (n *oldNames) add(raw []byte) (name []byte, dup bool) {
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
	n.refs = append(n.refs, oldNameRef{start, len(n.buf)})
	if o.set == nil && len(n.refs)-o.first > pairwiseMax {
		o.set = make(map[string]struct{}, 2*pairwiseMax)
		for _, r := range n.refs[o.first:] {
			o.set[string(n.buf[r.start:r.end])] = struct{}{}
		}
	}
	return name, false
}

func oldPrecheck(data []byte, o Options) *Error {
	if o.ValidUTF8 && !utf8.Valid(data) {
		i := 0
		for i < len(data) {
			r, n := utf8.DecodeRune(data[i:])
			if r == utf8.RuneError && n <= 1 {
				break
			}
			i += n
		}
		return &Error{Kind: InvalidUTF8, Offset: i, Msg: "invalid UTF-8"}
	}
	if o.SpaceOnly {
		for i, c := range data {
			if c == '\t' || c == '\n' || c == '\r' {
				return &Error{Kind: Syntax, Offset: i, Msg: "control character 0x" + strconv.FormatUint(uint64(c), 16)}
			}
		}
	}
	return nil
}

// namesSeeds are op streams for FuzzNames: '{' opens an object, '}'
// closes one, '|' ends a name, anything else is a name's bytes.
var namesSeeds = []string{
	`{a|b|a|}`,
	`{v|seq|id|time|node|kind|{issuer|id|groups|jti|}operation|id|}`,
	`{\u0061|a|}`,
	`{abcdefgh|abcdefgh|abcdefghi|abcdefgi|}`,
	`{a1|a2|a3|a4|a5|a6|a7|a8|a9|b1|b2|b3|b4|b5|b6|b7|b8|b9|c1|c2|c3|c4|c5|c6|c7|c8|c9|d1|d2|d3|d4|d5|d6|d7|a5|}`,
	`{x|{x|{x|}x|}y|x|}`,
	`{canonical_request_sha256|signature_sha256|canonical_request_sha256|}`,
	`{\ud83d\ude00|\u00e9|` + "\U0001F600|}",
	`{a\nb|a\u000ab|}`,
	`{aaaaaaaa\/bbbbbbbb|aaaaaaaa/bbbbbbbb|}`,
}

// FuzzNames runs one stream of opens, names and closes through the old
// and the new duplicate-name bookkeeping, with one new names reused for
// every input as a Checker reuses it: every add must answer the same
// name and verdict.
func FuzzNames(f *testing.F) {
	for _, s := range namesSeeds {
		f.Add([]byte(s))
	}
	var n names
	f.Fuzz(func(t *testing.T, ops []byte) {
		var old oldNames
		n.reset(ops)
		depth, start := 0, -1
		for i, c := range ops {
			switch {
			case start < 0 && c == '{':
				old.open()
				n.open()
				depth++
			case start < 0 && c == '}':
				if depth == 0 {
					return
				}
				old.close()
				n.close()
				depth--
			case c == '|' && start >= 0:
				raw := ops[start:i]
				start = -1
				if end, msg := scanString(append(bytes.Clone(raw), '"'), 0); msg != "" || end != len(raw)+1 {
					continue // not a string body the scanner would pass on
				}
				if depth == 0 {
					continue
				}
				wantName, wantDup := old.add(raw)
				name, dup := n.add(i-len(raw), i)
				if dup != wantDup || !bytes.Equal(name, wantName) {
					t.Fatalf("add(%q) = %q, %v; old bookkeeping: %q, %v", raw, name, dup, wantName, wantDup)
				}
			case start < 0 && c != '|':
				start = i
			}
		}
	})
}

// FuzzPrecheck: the whole-input rules give the old answers, offset and
// message included, for every combination of them.
func FuzzPrecheck(f *testing.F) {
	for i, s := range fuzzSeeds {
		f.Add([]byte(s), byte(i))
	}
	f.Add([]byte("{\"a\":\"\r\t\n\"}"), byte(3))
	f.Add([]byte("\xff\t"), byte(3))
	f.Add([]byte("\t\xff"), byte(3))
	f.Fuzz(func(t *testing.T, data []byte, flags byte) {
		o := Options{ValidUTF8: flags&1 != 0, SpaceOnly: flags&2 != 0}
		if got, want := precheck(data, o), oldPrecheck(data, o); !reflect.DeepEqual(got, want) {
			t.Fatalf("precheck(%q, %+v) = %v, old: %v", data, o, got, want)
		}
	})
}

// TestCheckerReuse: a Checker that refused an input mid-object (leaving
// open objects and a map behind) checks the next input as a new one.
func TestCheckerReuse(t *testing.T) {
	o := Options{UniqueNames: true}
	var c Checker
	var many bytes.Buffer
	many.WriteString(`{"o":{`)
	for i := range 40 {
		many.WriteString(`"k` + strconv.Itoa(i) + `":1,`)
	}
	many.WriteString(`"k3":2}}`)
	for _, tc := range []struct {
		in  string
		dup bool
	}{
		{`{"a":{"b":1,"b":2}}`, true},
		{`{"b":1}`, false},
		{many.String(), true},
		{`{"o":{"k3":1}}`, false},
		{`{"a":{"b":{"c":[`, false},
		{`{"c":1,"b":1,"a":1}`, false},
		{`{"\u0063":1,"c":1}`, true},
		{`{"c":1}`, false},
	} {
		e := c.Check([]byte(tc.in), o)
		if once := Check([]byte(tc.in), o); !reflect.DeepEqual(e, once) {
			t.Fatalf("Checker.Check(%q) = %v after other inputs, Check = %v", tc.in, e, once)
		}
		if got := e != nil && e.Kind == DuplicateName; got != tc.dup {
			t.Fatalf("Check(%q) = %v, want duplicate %v", tc.in, e, tc.dup)
		}
	}
}
