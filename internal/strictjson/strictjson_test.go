package strictjson

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

func TestCheckAccepts(t *testing.T) {
	all := Options{ValidUTF8: true, UniqueNames: true, SpaceOnly: true}
	for _, s := range []string{
		`{}`, `[]`, `0`, `-0.5e-7`, `1E+2`, `"x"`, `true`, `null`,
		` {"a" : [1, {"b":null}], "c":"\ud83d\ude00\u00e9\"\\\/\b\f\n\r\t"} `,
		`{"a":{"a":{"a":1}},"b":[{"a":1},{"a":2}]}`, // same name in different objects
		strings.Repeat("[", DefaultMaxDepth) + strings.Repeat("]", DefaultMaxDepth),
	} {
		if e := Check([]byte(s), all); e != nil {
			t.Errorf("Check(%q): %v", s, e)
		}
	}
}

func TestCheckRefuses(t *testing.T) {
	for _, tc := range []struct {
		in     string
		o      Options
		kind   Kind
		msg    string
		member string
	}{
		{"", Options{}, Empty, "empty input", ""},
		{" \n", Options{}, Empty, "empty input", ""},
		{`{"a":1}{}`, Options{}, Syntax, "unexpected data after the JSON value", ""},
		{`{"a":NaN}`, Options{}, Syntax, "where a value should start", "a"},
		{`{"a":01}`, Options{}, Syntax, "expected ',' or '}'", "a"},
		{`{"a":+1}`, Options{}, Syntax, "where a value should start", "a"},
		{`{"a":1.}`, Options{}, Syntax, "digit expected after '.'", "a"},
		{`{"a":tru}`, Options{}, Syntax, "invalid literal", "a"},
		{"{\"a\":\"x\ny\"}", Options{}, Syntax, "control character in string", "a"},
		{`{"a":"\x"}`, Options{}, Syntax, "invalid escape character", "a"},
		{`{"a":"\u12"}`, Options{}, Syntax, `invalid \u escape`, "a"},
		{`{"a":"\ud800"}`, Options{}, Syntax, "unpaired UTF-16 surrogate", "a"},
		{`{"a":"\udc00\ud800"}`, Options{}, Syntax, "unpaired UTF-16 surrogate", "a"},
		{`{"a":"\ud800\u0041"}`, Options{}, Syntax, "unpaired UTF-16 surrogate", "a"},
		{`{"a":[1,]}`, Options{}, Syntax, "where a value should start", "a"},
		{`{"a":1,}`, Options{}, Syntax, `expected '"' to start an object member name`, ""},
		{`{"a" 1}`, Options{}, Syntax, "expected ':' after object member name", "a"},
		{`{"a":[1}`, Options{}, Syntax, "expected ',' or ']' after array element", "a"},
		{`{"a":"b`, Options{}, Syntax, "unterminated string", "a"},
		{`{"a":[`, Options{}, Syntax, "unexpected end of input", "a"},
		{`{"a":` + strings.Repeat("[", 64) + strings.Repeat("]", 64) + `}`, Options{}, TooDeep, "nesting deeper than 64 levels", "a"},
		{strings.Repeat("[", 3) + strings.Repeat("]", 3), Options{MaxDepth: 2}, TooDeep, "nesting deeper than 2 levels", ""},
		{`[1,2,3]`, Options{MaxValues: 3}, TooManyValues, "more than 3 JSON values", ""},
		{"{\"a\":\"\xff\"}", Options{ValidUTF8: true}, InvalidUTF8, "invalid UTF-8", ""},
		{"{\"a\":1,\n\"b\":2}", Options{SpaceOnly: true}, Syntax, "control character 0xa", ""},
		{"{\"a\":1,\t\"b\":2}", Options{SpaceOnly: true}, Syntax, "control character 0x9", ""},
		{`{"a":1,"a":2}`, Options{UniqueNames: true}, DuplicateName, "duplicate member name", "a"},
		{`{"alg":1,"\u0061lg":2}`, Options{UniqueNames: true}, DuplicateName, "duplicate member name", `\u0061lg`},
		{`{"x":[{"b":1,"c":{},"b":2}]}`, Options{UniqueNames: true}, DuplicateName, "duplicate member name", "x"},
	} {
		e := Check([]byte(tc.in), tc.o)
		if e == nil {
			t.Errorf("Check(%q) accepted", tc.in)
			continue
		}
		if e.Kind != tc.kind || !strings.Contains(e.Msg, tc.msg) || e.Member != tc.member || e.Offset < 0 || e.Offset > len(tc.in) {
			t.Errorf("Check(%q) = kind %d offset %d msg %q member %q, want kind %d msg %q member %q",
				tc.in, e.Kind, e.Offset, e.Msg, e.Member, tc.kind, tc.msg, tc.member)
		}
	}
}

// What remotesign relies on: invalid UTF-8 and repeated names pass when the
// options leave them to the caller.
func TestOptionsOff(t *testing.T) {
	for _, s := range []string{"{\"a\":\"\xff\"}", `{"a":1,"a":2}`, "{\"a\":\n1}"} {
		if e := Check([]byte(s), Options{}); e != nil {
			t.Errorf("Check(%q): %v", s, e)
		}
	}
}

func TestDuplicateName(t *testing.T) {
	e := Check([]byte(`{"a":1,"b\u0022c":2,"b\"c":3}`), Options{UniqueNames: true})
	if e == nil || e.Name != `b"c` || e.Offset != len(`{"a":1,"b\u0022c":2,`) {
		t.Fatalf("got %+v", e)
	}
}

// TestUniqueNamesLargeObject: an object with many names must not stall the
// check (pairwise comparison would be 2e10 comparisons here), and a
// duplicate among them is still found.
func TestUniqueNamesLargeObject(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{`)
	for i := range 200000 {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"k%d":%d`, i, i)
	}
	o := Options{UniqueNames: true}
	if e := Check([]byte(b.String()+`}`), o); e != nil {
		t.Fatal(e)
	}
	if e := Check([]byte(b.String()+`,"k199999":0}`), o); e == nil || e.Kind != DuplicateName || e.Name != "k199999" {
		t.Fatalf("duplicate among 200,000 names: %v", e)
	}
	// The names of a closed object do not count in its parent.
	if e := Check([]byte(`{"a":{"b":1},"b":{"a":1}}`), o); e != nil {
		t.Fatal(e)
	}
}

func TestDecode(t *testing.T) {
	in := `{"a":[1,-2.5e3,"x\u00e9\ud83d\ude00",true,false,null,[],{}],"b\u0061":{"c":"\"\\\/\b\f\n\r\t"},"n":12345678901234567890}`
	got, e := Decode([]byte(in), Options{UniqueNames: true})
	if e != nil {
		t.Fatal(e)
	}
	d := json.NewDecoder(strings.NewReader(in))
	d.UseNumber()
	var want any
	if err := d.Decode(&want); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Decode\n got %#v\nwant %#v", got, want)
	}
	if _, e := Decode([]byte(`{"a":1,"a":2}`), Options{UniqueNames: true}); e == nil || e.Kind != DuplicateName {
		t.Fatalf("duplicate decoded: %v", e)
	}
	if v, e := Decode([]byte(` "s" `), Options{}); e != nil || v != "s" {
		t.Fatalf("scalar: %v %v", v, e)
	}
}
