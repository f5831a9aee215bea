package remotesign

import "github.com/countersign/countersign/internal/strictjson"

// maxNesting bounds how deeply arrays and objects may nest. The protocol
// needs three levels (request, headers, values); the rest is headroom for
// unknown members.
const maxNesting = 64

// checkSyntax reports whether data is exactly one strict JSON value (see
// internal/strictjson) nesting at most maxNesting deep and holding at most
// maxValues values. The last bounds what fastjson then builds: it makes a
// tree node for every value, ignored members included, so without it a
// body of "[0,0,0,...]" would cost some 40 times its size. UTF-8 and
// duplicate names are left to Decode: it checks them for the members it
// keeps, and bytes in ignored members do not matter.
//
// It exists because fastjson accepts more than JSON (raw control
// characters, unknown escapes, lone surrogates, NaN) and because fastjson's
// error messages can quote the entire input. Errors here give a byte offset
// and, inside a top-level member, that member's name.
func checkSyntax(data []byte, maxValues int) *DecodeError {
	e := strictjson.Check(data, strictjson.Options{MaxDepth: maxNesting, MaxValues: maxValues})
	if e == nil {
		return nil
	}
	de := &DecodeError{Field: clip(e.Member), Msg: e.Error()}
	switch e.Kind {
	case strictjson.Empty:
		de.Msg = "empty body"
	case strictjson.TooManyValues:
		de.Msg = e.Msg
	}
	return de
}
