package strictjson

import (
	"math"
	"strconv"
)

// depthWords is the size of the container stack, in 64-bit words.
const depthWords = 8

// scanner is one pass over one input. It is iterative: open containers are
// one bit per level (1 for an object, 0 for an array), so hostile nesting
// costs no stack.
type scanner struct {
	data     []byte
	opts     Options
	maxDepth int
	depth    int
	kinds    [depthWords]uint64 // bit i: the container at depth i+1 is an object

	values, maxValues int

	// The raw name of the top-level member being scanned, for messages.
	keyStart, keyEnd int

	names *names // UniqueNames only
}

func newScanner(data []byte, o Options) scanner {
	s := scanner{data: data, opts: o, maxDepth: o.maxDepth(), maxValues: o.MaxValues, keyStart: -1}
	if s.maxValues <= 0 {
		s.maxValues = math.MaxInt
	}
	return s
}

func (s *scanner) isObject(depth int) bool {
	return s.kinds[(depth-1)>>6]&(1<<((depth-1)&63)) != 0
}

func (s *scanner) push(object bool) {
	w, bit := s.depth>>6, uint64(1)<<(s.depth&63)
	if object {
		s.kinds[w] |= bit
	} else {
		s.kinds[w] &^= bit
	}
	s.depth++
}

func (s *scanner) run() *Error {
	data := s.data
	if s.opts.ValidUTF8 || s.opts.SpaceOnly {
		if e := precheck(data, s.opts); e != nil {
			return e
		}
	}
	i := skipWS(data, 0)
	if i == len(data) {
		return &Error{Kind: Empty, Offset: i, Msg: "empty input"}
	}
value:
	for {
		// A value starts at i.
		if i >= len(data) {
			return s.fail(i, "unexpected end of input")
		}
		if s.values++; s.values > s.maxValues {
			e := s.fail(i, "more than "+strconv.Itoa(s.maxValues)+" JSON values")
			e.Kind = TooManyValues
			return e
		}
		switch c := data[i]; c {
		case '{', '[':
			if s.depth == s.maxDepth {
				e := s.fail(i, "nesting deeper than "+strconv.Itoa(s.maxDepth)+" levels")
				e.Kind = TooDeep
				return e
			}
			closer := byte(']')
			if c == '{' {
				closer = '}'
			}
			i = skipWS(data, i+1)
			if i < len(data) && data[i] == closer {
				i++
				break // an empty container is a complete value
			}
			s.push(c == '{')
			if c == '{' {
				if s.names != nil {
					s.names.open()
				}
				var e *Error
				if i, e = s.key(i); e != nil {
					return e
				}
			}
			continue value
		case '"':
			var msg string
			if i, msg = scanString(data, i+1); msg != "" {
				return s.fail(i, msg)
			}
		case 't', 'f', 'n':
			word := "null"
			if c == 't' {
				word = "true"
			} else if c == 'f' {
				word = "false"
			}
			var ok bool
			if i, ok = literal(data, i, word); !ok {
				return s.fail(i, "invalid literal")
			}
		default:
			if c != '-' && (c < '0' || c > '9') {
				return s.fail(i, "unexpected "+describeByte(c)+" where a value should start")
			}
			var msg string
			if i, msg = scanNumber(data, i); msg != "" {
				return s.fail(i, msg)
			}
		}

		// The value that ended at i is complete: close containers until a
		// ',' asks for the next element.
		for {
			i = skipWS(data, i)
			if s.depth == 0 {
				if i != len(data) {
					return s.fail(i, "unexpected data after the JSON value")
				}
				return nil
			}
			if i >= len(data) {
				return s.fail(i, "unexpected end of input")
			}
			inObject := s.isObject(s.depth)
			switch c := data[i]; {
			case c == ',':
				i = skipWS(data, i+1)
				if inObject {
					var e *Error
					if i, e = s.key(i); e != nil {
						return e
					}
				}
				continue value
			case c == '}' && inObject, c == ']' && !inObject:
				s.depth--
				i++
				if inObject && s.names != nil {
					s.names.close()
				}
			case inObject:
				return s.fail(i, "expected ',' or '}' after object member")
			default:
				return s.fail(i, "expected ',' or ']' after array element")
			}
		}
	}
}

// key scans `"name" :` at i and returns the offset of the member's value.
func (s *scanner) key(i int) (int, *Error) {
	data := s.data
	if s.depth == 1 {
		s.keyStart = -1 // a bad key must not be blamed on the previous member
	}
	if i >= len(data) {
		return i, s.fail(i, "unexpected end of input")
	}
	if data[i] != '"' {
		return i, s.fail(i, "expected '\"' to start an object member name")
	}
	end, msg := scanString(data, i+1)
	if msg != "" {
		return end, s.fail(end, msg)
	}
	if s.depth == 1 {
		s.keyStart, s.keyEnd = i+1, end-1
	}
	if s.names != nil {
		if e := s.member(i, i+1, end-1); e != nil {
			return i, e
		}
	}
	i = skipWS(data, end)
	if i >= len(data) || data[i] != ':' {
		return i, s.fail(i, "expected ':' after object member name")
	}
	return skipWS(data, i+1), nil
}

// member records a member name and refuses a repeated one. It is apart
// from key so that the common case, without UniqueNames, stays small.
func (s *scanner) member(at, start, end int) *Error {
	unq, repeated := s.names.add(start, end)
	if !repeated {
		return nil
	}
	e := s.fail(at, "duplicate member name")
	e.Kind, e.Name = DuplicateName, string(unq)
	return e
}

// fail reports a syntax error at byte offset at, attributed to the
// top-level member being scanned, if any.
func (s *scanner) fail(at int, msg string) *Error {
	e := &Error{Kind: Syntax, Offset: at, Msg: msg}
	if s.keyStart >= 0 && s.depth >= 1 {
		e.Member = string(s.data[s.keyStart:s.keyEnd])
	}
	return e
}
