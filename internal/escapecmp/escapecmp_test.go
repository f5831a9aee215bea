// Package escapecmp compares the two JSON string escapers that exist before
// they are merged: audit's (reached through audit.AppendRecord's "id") and
// remotesign's (reached through remotesign.AppendError's "message"). Both
// are driven through their exported callers, so what is compared is what
// each package really writes.
package escapecmp

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/audit"
	"github.com/countersign/countersign/remotesign"
)

// auditEsc returns audit's encoding of s (with quotes): the record's bytes
// minus what an empty id leaves around it.
func auditEsc(s string) []byte {
	r := &audit.Record{Time: time.Unix(0, 0)}
	empty := audit.AppendRecord(nil, r)
	r.ID = s
	out := audit.AppendRecord(nil, r)
	prefix := []byte(`{"v":0,"seq":0,"id":`)
	suffix := empty[len(prefix)+2:]
	if !bytes.HasPrefix(out, prefix) || !bytes.HasSuffix(out, suffix) {
		panic("unexpected record shape")
	}
	return out[len(prefix) : len(out)-len(suffix)]
}

func remoteEsc(s string) []byte {
	out := remotesign.AppendError(nil, 0, "", s)
	prefix := []byte(`{"error":{"message":`)
	suffix := []byte(`,"type":"","code":0}}`)
	if !bytes.HasPrefix(out, prefix) || !bytes.HasSuffix(out, suffix) {
		panic("unexpected error shape")
	}
	return out[len(prefix) : len(out)-len(suffix)]
}

func stdEsc(s string) []byte {
	var b bytes.Buffer
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(false)
	if err := e.Encode(s); err != nil {
		panic(err)
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

func inputs() []string {
	var in []string
	pad := "abcdefghijklmnop"
	// Every byte alone, and at every offset of a 16-byte ASCII run (so that
	// remotesign's 8-byte word path meets it in every lane), and repeated.
	for c := range 256 {
		b := string([]byte{byte(c)})
		in = append(in, b, strings.Repeat(b, 17))
		for i := 0; i <= 16; i++ {
			in = append(in, pad[:i]+b+pad[i:])
		}
	}
	// Every pair of bytes, after 7 ASCII bytes and alone.
	for a := range 256 {
		for b := range 256 {
			p := string([]byte{byte(a), byte(b)})
			in = append(in, p, "1234567"+p+"x")
		}
	}
	specials := []string{
		"\u2028", "\u2029", "\u2027", "\u202a", "a\u2028b\u2029c",
		"\xe2\x80\xa8", "\xe2\x80", "\xe2", // U+2028 and its truncations
		"\xc0\x80", "\xc1\xbf", "\xe0\x80\x80", "\xe0\x9f\xbf", "\xf0\x80\x80\x80", "\xf0\x8f\xbf\xbf", // overlong
		"\xed\xa0\x80", "\xed\xbf\xbf", "\xed\xa0\x80\xed\xb0\x80", // surrogates
		"\xf4\x90\x80\x80", "\xf5\x80\x80\x80", "\xf8\x88\x80\x80\x80", "\xfc\x84\x80\x80\x80\x80", // beyond U+10FFFF, 5/6-byte forms
		"\x80", "\xbf", "\x80\x80\x80", "\xfe", "\xff", "\xfe\xff", // lone continuation, never-valid
		"\xc3", "\xc3(", "\xe6\x97", "\xe6\x97(", "\xf0\x9f\x98", "\xf0\x9f\x98(", "\xf0\x9f", "\xf0", // truncated
		"\U0001F600", "é", "日本語", "\ufffd", "\uffff", "\U0010FFFF", "\x7f", "\x00\x01\x1f\x20",
		"\b\f\n\r\t\v\x00", `"\/<>&`, "</script>", "\u00a0\u0085",
	}
	for _, s := range specials {
		in = append(in, s)
		for i := 0; i <= 9; i++ {
			in = append(in, pad[:i]+s+pad[:i], s+pad+s)
		}
	}
	// ASCII control characters in long plain runs.
	for c := range 0x20 {
		in = append(in, strings.Repeat("x", 31)+string(rune(c))+strings.Repeat("y", 40))
	}
	// Random strings: uniform bytes, mostly-ASCII, and valid mixed UTF-8.
	rng := rand.New(rand.NewPCG(7, 11))
	alphabet := []string{"a", "Z", " ", "\"", "\\", "\n", "\x01", "\x7f", "é", "日", "\U0001F600", "\u2028", "\u2029", "\xff", "\x80", "\xe2\x80", "\xf0\x9f\x98"}
	for range 100000 {
		n := rng.IntN(64)
		b := make([]byte, 0, n*2)
		switch rng.IntN(3) {
		case 0:
			for range n {
				b = append(b, byte(rng.IntN(256)))
			}
		case 1:
			for range n {
				if rng.IntN(10) == 0 {
					b = append(b, byte(rng.IntN(256)))
				} else {
					b = append(b, byte(0x20+rng.IntN(0x5f)))
				}
			}
		case 2:
			for range n {
				b = append(b, alphabet[rng.IntN(len(alphabet))]...)
			}
		}
		in = append(in, string(b))
	}
	return in
}

func TestEscapersAgree(t *testing.T) {
	in := inputs()
	var diffStd, n int
	for _, s := range in {
		a, r := auditEsc(s), remoteEsc(s)
		if !bytes.Equal(a, r) {
			n++
			if n <= 20 {
				t.Errorf("%q: audit %s, remotesign %s", s, a, r)
			}
		}
		if std := stdEsc(s); !bytes.Equal(a, std) {
			if diffStd++; diffStd <= 10 {
				t.Logf("differs from encoding/json: %q: audit %s, encoding/json %s", s, a, std)
			}
		}
	}
	t.Logf("%d inputs; audit vs remotesign: %d differ; audit vs encoding/json (no HTML escaping): %d differ", len(in), n, diffStd)
}
