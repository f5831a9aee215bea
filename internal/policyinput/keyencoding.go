package policyinput

import "encoding/binary"

// The string encodings of the principal's key (AppendPrincipalKey) and of
// the policy fast path's scope and object keys. One definition for both, so
// that a principal's Key spliced into a scope key is the encoding the scope
// key would have written itself.

// AppendKeyString appends s length-prefixed: no two strings, nor two
// sequences of strings, share an encoding.
func AppendKeyString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// AppendKeyStrings appends ss tagged and counted: nil ('n') and empty ('a'
// with count 0) differ, as their JSON (null, []) does.
func AppendKeyStrings(b []byte, ss []string) []byte {
	if ss == nil {
		return append(b, 'n')
	}
	b = append(b, 'a')
	b = binary.AppendUvarint(b, uint64(len(ss)))
	for _, s := range ss {
		b = AppendKeyString(b, s)
	}
	return b
}
