package jsonstr

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"
)

// reference is the byte-by-byte escaper that audit and remotesign each
// had before they shared this package (audit's appendStringBody, verbatim
// but for its name; remotesign's differed only by the word-at-a-time skip,
// and the two agreed on every input below). AppendBody must match it
// exactly: the audit log's bytes are hashed.
func reference(dst []byte, s string) []byte {
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	return append(dst, s[start:]...)
}

// specials are the inputs with a rule of their own.
var specials = []string{
	"", "plain ASCII text", `"quoted"`, `back\slash \\ \"`,
	"\x00\x01\x07\x1f", "\b\f\n\r\t\v", "\x7f DEL stays raw", `/ <>&'`, "</script><!-- & -->",
	"naïve 日本語 😀 \u00a0 \u0085", "\ufffd", "\uffff", "\U0010FFFF", "ok\uFFFDalready replaced",
	"\u2028", "\u2029", "\u2027\u202a", "\u2028line\u2029para",
	"\xe2\x80\xa8", "\xe2\x80", "\xe2", // U+2028 and its truncations
	"\xc0\x80", "\xc0\xaf", "\xc1\xbf", "\xe0\x80\x80", "\xe0\x9f\xbf", "\xf0\x80\x80\x80", "\xf0\x8f\xbf\xbf", // overlong
	"\xed\xa0\x80", "\xed\xbf\xbf", "\xed\xa0\x80\xed\xb0\x80", // encoded surrogates
	"\xf4\x90\x80\x80", "\xf5\x80\x80\x80", "\xf8\x88\x80\x80\x80", "\xfc\x84\x80\x80\x80\x80", // above U+10FFFF
	"\x80", "\xbf", "\x80\x80\x80", "\xfe", "\xff", "\xfe\xff", // never valid here
	"\xc3", "\xc3(", "\xe6\x97", "\xe6\x97(", "\xf0\x9f\x98", "\xf0\x9f\x98(", "\xf0\x9f", "\xf0", "a\xe2\x82", // truncated
	strings.Repeat("long run ", 50) + "\x01",
}

// inputs is the comparison set: every byte alone and in every lane of the
// eight-byte words, every pair of bytes, the specials at every offset, and
// random strings of three kinds.
func inputs() []string {
	var in []string
	pad := "abcdefghijklmnop"
	for c := range 256 {
		b := string([]byte{byte(c)})
		in = append(in, b, strings.Repeat(b, 17))
		for i := 0; i <= 16; i++ {
			in = append(in, pad[:i]+b+pad[i:])
		}
	}
	for a := range 256 {
		for b := range 256 {
			p := string([]byte{byte(a), byte(b)})
			in = append(in, p, "1234567"+p+"x")
		}
	}
	for _, s := range specials {
		in = append(in, s)
		for i := 0; i <= 9; i++ {
			in = append(in, pad[:i]+s+pad[:i], s+pad+s)
		}
	}
	for c := range 0x20 {
		in = append(in, strings.Repeat("x", 31)+string(rune(c))+strings.Repeat("y", 40))
	}
	rng := rand.New(rand.NewPCG(7, 11))
	alphabet := []string{"a", "Z", " ", "\"", "\\", "\n", "\x01", "\x7f", "é", "日", "\U0001F600", "\u2028", "\u2029", "\xff", "\x80", "\xe2\x80", "\xf0\x9f\x98"}
	for range 100000 {
		n := rng.IntN(64)
		b := make([]byte, 0, n*2)
		switch rng.IntN(3) {
		case 0: // any bytes
			for range n {
				b = append(b, byte(rng.IntN(256)))
			}
		case 1: // mostly printable ASCII
			for range n {
				if rng.IntN(10) == 0 {
					b = append(b, byte(rng.IntN(256)))
				} else {
					b = append(b, byte(0x20+rng.IntN(0x5f)))
				}
			}
		case 2: // pieces that each take a different path
			for range n {
				b = append(b, alphabet[rng.IntN(len(alphabet))]...)
			}
		}
		in = append(in, string(b))
	}
	return in
}

func TestMatchesReference(t *testing.T) {
	for _, s := range inputs() {
		want := reference([]byte(`pre"`), s)
		want = append(want, '"')
		if got := Append([]byte("pre"), s); !bytes.Equal(got, want) {
			t.Fatalf("Append(%q) = %s, want %s", s, got, want)
		}
		if got := AppendBody([]byte(`pre"`), s); !bytes.Equal(got, want[:len(want)-1]) {
			t.Fatalf("AppendBody(%q) = %s, want %s", s, got, want[:len(want)-1])
		}
	}
}

func TestRules(t *testing.T) {
	for in, want := range map[string]string{
		"":                          `""`,
		"abc":                       `"abc"`,
		"a\"b\\c":                   `"a\"b\\c"`,
		"\n\r\t\b\f\x00\x1f\x0b":    `"\n\r\t\u0008\u000c\u0000\u001f\u000b"`,
		"é😀\x7f/":                   "\"é😀\x7f/\"",
		"\u2028\u2029":              `"\u2028\u2029"`,
		"\u2027\u202a\u2028 normal": "\"\u2027\u202a\\u2028 normal\"",
		"x\xffy":                    `"x\ufffdy"`,
		"\xe2\x82":                  `"\ufffd\ufffd"`,
		"\xed\xa0\x80":              `"\ufffd\ufffd\ufffd"`,
		"\xc0\xaf":                  `"\ufffd\ufffd"`,
		"\ufffd":                    "\"\ufffd\"",
		"</script>&":                `"</script>&"`,
		"0123456789abcdef\"x":       `"0123456789abcdef\"x"`,
	} {
		if got := string(Append(nil, in)); got != want {
			t.Errorf("Append(%q) = %s, want %s", in, got, want)
		}
	}
}

// wantDecoded is what a JSON parser must read back: the input with each
// byte of invalid UTF-8 replaced by U+FFFD (converting to []rune does
// exactly that), so the input itself when it is valid UTF-8.
func wantDecoded(s string) string { return string([]rune(s)) }

func checkDecodes(t testing.TB, in string, out []byte) {
	t.Helper()
	if !utf8.Valid(out) {
		t.Fatalf("Append(%q) = %q: not valid UTF-8", in, out)
	}
	for _, c := range out {
		if c < 0x20 {
			t.Fatalf("Append(%q) = %q: raw control byte", in, out)
		}
	}
	if bytes.Contains(out, []byte("\u2028")) || bytes.Contains(out, []byte("\u2029")) {
		t.Fatalf("Append(%q) = %q: raw U+2028/U+2029", in, out)
	}
	var got string
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("Append(%q) = %q: %v", in, out, err)
	}
	if want := wantDecoded(in); got != want {
		t.Fatalf("Append(%q) decodes to %q, want %q", in, got, want)
	}
	if utf8.ValidString(in) && got != in {
		t.Fatalf("Append(%q) of valid UTF-8 decodes to %q", in, got)
	}
}

func TestDecodesBack(t *testing.T) {
	for _, s := range inputs() {
		checkDecodes(t, s, Append(nil, s))
	}
}

// encodingJSON is encoding/json's encoding of s without HTML escaping,
// with its \b and \f written as \u0008 and \u000c.
func encodingJSON(t testing.TB, s string) []byte {
	var b bytes.Buffer
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(false)
	if err := e.Encode(s); err != nil {
		t.Fatal(err)
	}
	in := bytes.TrimSuffix(b.Bytes(), []byte("\n"))
	var out []byte
	for i := 0; i < len(in); i++ {
		if in[i] != '\\' {
			out = append(out, in[i])
			continue
		}
		i++
		switch in[i] {
		case 'b':
			out = append(out, `\u0008`...)
		case 'f':
			out = append(out, `\u000c`...)
		default:
			out = append(out, '\\', in[i])
		}
	}
	return out
}

func TestLikeEncodingJSON(t *testing.T) {
	for _, s := range inputs() {
		if got, want := Append(nil, s), encodingJSON(t, s); !bytes.Equal(got, want) {
			t.Fatalf("Append(%q) = %s, encoding/json (\\b, \\f as \\u00XX) %s", s, got, want)
		}
	}
}

// FuzzAppend checks any string, valid UTF-8 or not, against the reference
// and that the output is valid JSON reading back as the input (each byte
// of invalid UTF-8 as U+FFFD).
func FuzzAppend(f *testing.F) {
	for _, s := range specials {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out := Append([]byte("pre"), s)
		want := append(reference([]byte(`pre"`), s), '"')
		if !bytes.Equal(out, want) {
			t.Fatalf("Append(%q) = %s, reference %s", s, out, want)
		}
		checkDecodes(t, s, out[len("pre"):])
	})
}

func BenchmarkAppend(b *testing.B) {
	for _, bc := range []struct{ name, s string }{
		{"ascii-64", "warehouse/sales.db/orders/data/00042-17-8e4f2b6a-00001.parquet"},
		{"ascii-256", strings.Repeat("IQoJb3JpZ2luX2VjEPr//////////wEaCXVzLXdlc3QtMiJHMEUCIQ", 5)[:256]},
		{"escapes", "a \"quoted\" key\twith\\back\nslashes"},
		{"utf8", "naïve 日本語 😀 résumé Ærøskøbing"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			buf := make([]byte, 0, 1024)
			b.SetBytes(int64(len(bc.s)))
			b.ReportAllocs()
			for b.Loop() {
				buf = Append(buf[:0], bc.s)
			}
		})
	}
}
