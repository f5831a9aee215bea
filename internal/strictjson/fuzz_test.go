package strictjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"testing"
	"unicode/utf8"
)

var fuzzSeeds = []string{
	`{"region":"us-east-1","uri":"https://b.s3.amazonaws.com/k","method":"GET","headers":{"A":["1"]}}`,
	`{"alg":"RS256","kid":"k","\u0061lg":"none"}`,
	`{"a":{"b":1,"b":2}}`,
	`{"x":[[[[[[[[[[]]]]]]]]]]}`,
	`{"x":-0.5e-7,"y":1E+2,"z":[true,false,null]}`,
	`{"s":"\ud83d\ude00\ud800\u0041"}`,
	"{\"s\":\"\xff\xfe\"}",
	"{\"a\":1,\n\"b\":\t2}\r",
	`{"a":NaN,"b":01,"c":"\x"}`,
	`[1,2,3,4,5,6,7,8,9]`,
	`{"region":"r",`,
	` `,
}

// FuzzCheck compares Check's verdict, for every combination of options,
// with an independent reading: encoding/json's validator and token stream,
// plus a few lines for each rule it does not know.
func FuzzCheck(f *testing.F) {
	for i, s := range fuzzSeeds {
		f.Add([]byte(s), byte(i*37))
	}
	f.Fuzz(func(t *testing.T, data []byte, flags byte) {
		o := Options{
			ValidUTF8:   flags&1 != 0,
			UniqueNames: flags&2 != 0,
			SpaceOnly:   flags&4 != 0,
			MaxDepth:    int(flags>>3&3) * 3, // 0 (the default), 3, 6, 9
		}
		if flags&32 != 0 {
			o.MaxValues = 1 + int(flags>>6)*3
		}
		in := bytes.Clone(data)
		e := Check(data, o)
		if !bytes.Equal(in, data) {
			t.Fatal("Check modified its input")
		}
		if e != nil {
			checkError(t, data, e)
		}
		want, sure := oracle(data, o)
		if sure && (e == nil) != want {
			t.Fatalf("Check(%q, %+v) = %v, independent reading says valid=%v", data, o, e, want)
		}
		if !sure && e == nil && !json.Valid(data) {
			t.Fatalf("Check(%q, %+v) accepted invalid JSON", data, o)
		}
	})
}

// FuzzDecode: Decode's verdict is Check's, and what it accepts reads as
// encoding/json reads it.
func FuzzDecode(f *testing.F) {
	for i, s := range fuzzSeeds {
		f.Add([]byte(s), i%2 == 0)
	}
	f.Fuzz(func(t *testing.T, data []byte, unique bool) {
		o := Options{ValidUTF8: true, UniqueNames: unique, MaxDepth: 300}
		v, e := Decode(data, o)
		if ce := Check(data, o); !reflect.DeepEqual(ce, e) {
			t.Fatalf("Decode(%q) = %v, Check = %v", data, e, ce)
		}
		if e != nil {
			return
		}
		d := json.NewDecoder(bytes.NewReader(data))
		d.UseNumber()
		var want any
		if err := d.Decode(&want); err != nil {
			t.Fatalf("encoding/json refused %q: %v", data, err)
		}
		if !reflect.DeepEqual(v, want) {
			t.Fatalf("Decode(%q)\n got %#v\nwant %#v", data, v, want)
		}
	})
}

func checkError(t *testing.T, data []byte, e *Error) {
	t.Helper()
	if e.Offset < 0 || e.Offset > len(data) {
		t.Fatalf("offset %d outside %d bytes", e.Offset, len(data))
	}
	if e.Msg == "" || len(e.Msg) > 80 || !utf8.ValidString(e.Msg) {
		t.Fatalf("message %q", e.Msg)
	}
	if e.Member != "" && !bytes.Contains(data, []byte(`"`+e.Member+`"`)) {
		t.Fatalf("member %q is not in the input", e.Member)
	}
	if e.Name != "" && e.Kind != DuplicateName {
		t.Fatalf("kind %d with name %q", e.Kind, e.Name)
	}
}

// oracle says whether data keeps o's rules, read without this package's
// scanner. sure is false where encoding/json cannot tell (duplicate names
// among strings it had to repair).
func oracle(data []byte, o Options) (valid, sure bool) {
	if !json.Valid(data) {
		return false, true
	}
	if o.ValidUTF8 && !utf8.Valid(data) {
		return false, true
	}
	if o.SpaceOnly && bytes.ContainsAny(data, "\t\n\r") {
		return false, true
	}
	if loneSurrogate(data) {
		return false, true
	}
	depth, values, dup, err := walkTokens(data)
	if err != nil {
		return false, true
	}
	if depth > o.maxDepth() || o.MaxValues > 0 && values > o.MaxValues {
		return false, true
	}
	if o.UniqueNames && dup {
		// encoding/json turns invalid UTF-8 into U+FFFD, so two names it
		// reads alike may differ in the input.
		return false, utf8.Valid(data)
	}
	return true, true
}

// loneSurrogate finds an unpaired \uD800-\uDFFF escape in valid JSON,
// where every backslash is in a string and starts an escape.
func loneSurrogate(data []byte) bool {
	hex := func(i int) (int, bool) {
		if i+6 > len(data) || data[i] != '\\' || data[i+1] != 'u' {
			return 0, false
		}
		var r int
		for _, c := range string(data[i+2 : i+6]) {
			r <<= 4
			switch {
			case '0' <= c && c <= '9':
				r |= int(c - '0')
			case 'a' <= c && c <= 'f':
				r |= int(c-'a') + 10
			case 'A' <= c && c <= 'F':
				r |= int(c-'A') + 10
			}
		}
		return r, true
	}
	for i := 0; i < len(data); i++ {
		if data[i] != '\\' {
			continue
		}
		r, ok := hex(i)
		if !ok {
			i++ // a two-byte escape
			continue
		}
		switch {
		case 0xD800 <= r && r < 0xDC00:
			lo, ok := hex(i + 6)
			if !ok || lo < 0xDC00 || lo >= 0xE000 {
				return true
			}
			i += 11
		case 0xDC00 <= r && r < 0xE000:
			return true
		default:
			i += 5
		}
	}
	return false
}

// walkTokens reads valid JSON with encoding/json's token stream and reports
// its nesting depth, its number of values and whether an object repeats a
// name.
func walkTokens(data []byte) (depth, values int, dup bool, err error) {
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	type open struct {
		object  bool
		names   map[string]bool
		wantKey bool
	}
	var stack []open
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			return depth, values, dup, nil
		}
		if err != nil {
			return 0, 0, false, err
		}
		if n := len(stack); n > 0 && stack[n-1].object {
			top := &stack[n-1]
			if tok != json.Delim('}') {
				if top.wantKey {
					k := tok.(string)
					dup = dup || top.names[k]
					top.names[k] = true
					top.wantKey = false
					continue
				}
				top.wantKey = true
			}
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			values++
			stack = append(stack, open{object: tok == json.Delim('{'), names: map[string]bool{}, wantKey: true})
			depth = max(depth, len(stack))
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
		default:
			values++
		}
	}
}
