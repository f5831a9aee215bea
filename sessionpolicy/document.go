package sessionpolicy

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// Document is an IAM policy document: version 2012-10-17, Allow
// statements only.
type Document struct {
	Statements []Statement
	// Coarsened is how many prefix merges were needed to fit MaxBytes (0:
	// the document is the scope's prefixes exactly).
	Coarsened int
}

// Statement is one Allow statement.
type Statement struct {
	Actions   []string // sorted
	Resources []string // ARNs, sorted
	// ListPrefixes, if set, is the s3:prefix StringLike condition of an
	// s3:ListBucket statement (each ending in "*"); nil: no condition.
	ListPrefixes []string
}

// JSON is the document as STS takes it: compact, keys in a fixed order,
// only characters STS accepts.
func (d Document) JSON() string {
	var b strings.Builder
	b.WriteString(`{"Version":"2012-10-17","Statement":[`)
	for i, s := range d.Statements {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"Effect":"Allow","Action":`)
		writeList(&b, s.Actions)
		b.WriteString(`,"Resource":`)
		writeList(&b, s.Resources)
		if s.ListPrefixes != nil {
			b.WriteString(`,"Condition":{"StringLike":{"s3:prefix":`)
			writeList(&b, s.ListPrefixes)
			b.WriteString(`}}`)
		}
		b.WriteByte('}')
	}
	b.WriteString(`]}`)
	return b.String()
}

func writeList(b *strings.Builder, ss []string) {
	b.WriteByte('[')
	for i, s := range ss {
		if i > 0 {
			b.WriteByte(',')
		}
		writeString(b, s)
	}
	b.WriteByte(']')
}

// writeString writes s as a JSON string of printable ASCII: quote,
// backslash and everything outside U+0020–U+007E escaped.
func writeString(b *strings.Builder, s string) {
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r >= 0x20 && r < 0x7f:
			b.WriteRune(r)
		case r > 0xffff:
			r1, r2 := surrogates(r)
			writeU(b, r1)
			writeU(b, r2)
		default:
			writeU(b, r)
		}
	}
	b.WriteByte('"')
}

func writeU(b *strings.Builder, r rune) {
	h := strconv.FormatInt(int64(r), 16)
	b.WriteString(`\u`)
	b.WriteString(strings.Repeat("0", 4-len(h)))
	b.WriteString(h)
}

func surrogates(r rune) (rune, rune) {
	r -= 0x10000
	return 0xd800 + (r>>10)&0x3ff, 0xdc00 + r&0x3ff
}

// encodedLen is len of s as writeString writes it.
func encodedLen(s string) int {
	n := 2
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			n += 2
		case r >= 0x20 && r < 0x7f:
			n++
		case r > 0xffff:
			n += 12
		case r == utf8.RuneError:
			n += 6
		default:
			n += 6
		}
	}
	return n
}
