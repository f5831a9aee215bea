// Package strictjson is the one place where countersign decides what JSON
// it accepts from outside: sign requests (remotesign), token headers and
// claims (auth) and audit log lines (audit). Each of them used to check its
// own subset of the rules and then parse again with a lenient parser; they
// now share this scanner.
//
// Always enforced, because parsers disagree on anything else and a
// differential between two readings of one input is how requests get
// smuggled past a check:
//
//   - exactly one JSON value as RFC 8259 defines it, with optional white
//     space around it and no trailing data;
//   - no raw control characters in strings, only the escapes RFC 8259
//     lists, numbers in its grammar (no NaN, no leading zeros, no '+');
//   - no unpaired UTF-16 surrogate escape (I-JSON, RFC 7493 §2.1): parsers
//     replace, keep or refuse them, so they cannot be read one way;
//   - nesting at most MaxDepth arrays and objects deep, checked without
//     recursion, so hostile nesting costs no stack.
//
// By option, where the call sites differ:
//
//   - ValidUTF8 (auth, audit): the whole input is valid UTF-8. remotesign
//     leaves it off: it validates the strings it keeps and ignores the
//     bytes of unknown members.
//   - UniqueNames (auth, audit): no object at any depth has two members
//     whose names are equal once unescaped. remotesign leaves it off: it
//     refuses duplicates among the members it reads (with its own rules,
//     such as header names ignoring case) and ignores unknown ones.
//   - SpaceOnly (audit): the only white space between tokens is U+0020, so
//     a record is one line; the writer writes no tab, LF or CR.
//   - MaxValues (remotesign): at most that many values in all, so what a
//     tree-building parser does afterwards is bounded by limits, not size.
//   - MaxDepth: remotesign 64, auth and audit 300 (the bound of the parser
//     they used before, kept so that no token or line changes verdict).
//
// Check validates only; Decode validates and then builds encoding/json's
// natural Go values (with numbers as json.Number) from the checked bytes,
// which the call sites used to parse a second time with another parser.
// Errors carry a byte offset and a message that never repeats the input,
// except the duplicate name itself, which is given apart.
package strictjson
