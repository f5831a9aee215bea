package strictjson

import (
	"bytes"
	"strconv"
	"unicode/utf8"
)

// Options select the rules that differ between call sites (see the package
// doc). The zero value is RFC 8259 with the surrogate rule and nesting at
// most DefaultMaxDepth.
type Options struct {
	// MaxDepth bounds how deeply arrays and objects nest; zero means
	// DefaultMaxDepth, and more than MaxDepthLimit means MaxDepthLimit.
	MaxDepth int
	// MaxValues bounds the number of values (members' values, array
	// elements and containers themselves); zero means no bound.
	MaxValues int
	// ValidUTF8 refuses input that is not valid UTF-8.
	ValidUTF8 bool
	// UniqueNames refuses an object with two members of the same
	// (unescaped) name, at any depth.
	UniqueNames bool
	// SpaceOnly refuses tab, LF and CR between tokens.
	SpaceOnly bool
}

const (
	// DefaultMaxDepth is the nesting bound of a zero Options.
	DefaultMaxDepth = 64
	// MaxDepthLimit is the largest bound Options can ask for; it keeps the
	// scanner's container stack a fixed array.
	MaxDepthLimit = 64 * depthWords
)

func (o Options) maxDepth() int {
	switch {
	case o.MaxDepth <= 0:
		return DefaultMaxDepth
	case o.MaxDepth > MaxDepthLimit:
		return MaxDepthLimit
	}
	return o.MaxDepth
}

// Kind says which rule an input broke, for call sites that word some
// errors their own way.
type Kind uint8

const (
	Syntax        Kind = iota // RFC 8259 grammar, surrogates, SpaceOnly
	Empty                     // nothing but white space
	TooDeep                   // MaxDepth
	TooManyValues             // MaxValues
	InvalidUTF8               // ValidUTF8
	DuplicateName             // UniqueNames
)

// Error says what is wrong with an input and where. Msg never repeats the
// input; Name and Member do, unbounded, so a caller that echoes them
// should clip them.
type Error struct {
	Kind   Kind
	Offset int    // byte offset of the problem
	Msg    string // what is wrong, without the offset
	// Member is the raw (still escaped) name of the top-level member in
	// whose value the problem is, or "" when it is not inside one.
	Member string
	// Name is the repeated name of a DuplicateName error, unescaped.
	Name string
}

func (e *Error) Error() string {
	return "malformed JSON at byte " + strconv.Itoa(e.Offset) + ": " + e.Msg
}

// Check reports whether data is exactly one JSON value that keeps the rules
// o selects. It allocates only when o.UniqueNames is set (once; a Checker
// keeps that scratch between inputs).
func Check(data []byte, o Options) *Error {
	if o.UniqueNames {
		return new(Checker).Check(data, o)
	}
	s := newScanner(data, o)
	return s.run()
}

// Checker is Check with its scratch for o.UniqueNames kept from one input
// to the next, so that checking many inputs (the lines of an audit log)
// allocates nothing once the scratch fits them. The zero value is ready;
// a Checker is for one goroutine at a time.
type Checker struct {
	names names
}

// Check is the package's Check.
func (c *Checker) Check(data []byte, o Options) *Error {
	s := newScanner(data, o)
	if o.UniqueNames {
		c.names.reset(data)
		s.names = &c.names
	}
	e := s.run()
	c.names.data = nil // do not keep the input alive
	return e
}

// Decode checks data as Check does and then builds its value as
// encoding/json does with UseNumber: map[string]any, []any, string,
// json.Number, bool or nil. Building is a second walk over checked bytes
// rather than hooks in the scanner: they cost remotesign's Check 15%.
func Decode(data []byte, o Options) (any, *Error) {
	if e := Check(data, o); e != nil {
		return nil, e
	}
	var b builder
	v, _ := b.value(data, 0)
	return v, nil
}

// precheck applies the whole-input options before scanning.
func precheck(data []byte, o Options) *Error {
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
		// Outside strings these are white space, inside they must be
		// escaped anyway: so any of them breaks one rule or the other.
		// The first of them: three vectorized searches beat one loop
		// over the bytes by about ten times on an audit record.
		i := len(data)
		for _, c := range [...]byte{'\t', '\n', '\r'} {
			if j := bytes.IndexByte(data[:i], c); j >= 0 {
				i = j
			}
		}
		if i < len(data) {
			return &Error{Kind: Syntax, Offset: i, Msg: "control character 0x" + strconv.FormatUint(uint64(data[i]), 16)}
		}
	}
	return nil
}
