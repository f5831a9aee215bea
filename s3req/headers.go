package s3req

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/countersign/countersign/remotesign"
)

// Headers whose value the classifier reads for meaning must have one
// spelling, the way the path has. What the signature covers is not the
// bytes the client sends but SigV4's canonical form of them: values
// trimmed (spaces, tabs and, by the signers' TrimSpace, Unicode white
// space), inner runs of spaces collapsed, and a header sent as several
// lines joined with ','. So "k " and "k", "a  b" and "a b", one line
// "a,b" and two lines "a" and "b" all carry the same signature, and
// whichever the server reads after HTTP has trimmed or split them need not
// be what countersign authorized. Every value these headers legitimately
// carry (payload hashes, base64 checksums, decimal lengths, URL-encoded
// copy sources, byte ranges) is printable ASCII without space, tab or
// comma, so anything else is refused rather than interpreted.

// meaningHeader reports whether the classifier reads the header's value.
func meaningHeader(name string) bool {
	const checksum = "x-amz-checksum-"
	if len(name) > len(checksum) && strings.EqualFold(name[:len(checksum)], checksum) {
		return true
	}
	for _, m := range meaningHeaders {
		if len(m) == len(name) && strings.EqualFold(m, name) {
			return true
		}
	}
	return false
}

// meaningHeaders are the headers besides x-amz-checksum-* whose values
// the classifier reads.
var meaningHeaders = [...]string{"content-md5", "content-length", "x-amz-copy-source", "x-amz-content-sha256", "x-amz-copy-source-range"}

// meaningValue returns the single value of a meaning header, or an error
// naming what is wrong with it. The header must be present.
func meaningValue(h remotesign.Headers, name string) (string, error) {
	vs := h.Values(name)
	if len(vs) != 1 {
		return "", malformed("header %s must have exactly one value (sent as one line), has %d", name, len(vs))
	}
	v := vs[0]
	if v == "" {
		return "", malformed("header %s is empty", name)
	}
	for i := 0; i < len(v); i++ {
		switch c := v[i]; {
		case c == ' ' || c == '\t':
			return "", malformed("header %s must not contain spaces or tabs: SigV4 signs it trimmed and collapsed, so the server could read another value", name)
		case c == ',':
			return "", malformed("header %s must not contain a comma: SigV4 signs one \"a,b\" line and two lines \"a\" and \"b\" alike", name)
		case c < 0x21 || c > 0x7e:
			return "", malformed("header %s must be printable ASCII (encode the copy source's key and version as %%XX)", name)
		}
	}
	return v, nil
}

// isAmzHeader reports an x-amz-* header: S3 requires every one to be
// signed, so its value is fixed by the signature, and policies read
// their values (x-amz-acl, x-amz-storage-class, x-amz-server-side-
// encryption, x-amz-meta-*).
func isAmzHeader(name string) bool {
	const p = "x-amz-"
	return len(name) > len(p) && strings.EqualFold(name[:len(p)], p)
}

// checkSignedSpelling refuses an x-amz-* header the policy would read in
// another spelling than the one signed: SigV4 signs each value trimmed
// (TrimSpace: spaces, tabs, Unicode white space) with runs of spaces
// collapsed, and several lines joined with ','. A policy refusing
// "x-amz-storage-class: GLACIER" saw "GLACIER " as another value, and
// the holder of the signature sent "GLACIER" under it; it saw two lines
// "x, GLACIER" where a server reads the first or the last. So each such
// header is one line, already in its signed spelling.
func checkSignedSpelling(h remotesign.Header) error {
	if len(h.Values) != 1 {
		return malformed("header %s must have exactly one value (sent as one line), has %d: SigV4 signs several lines joined with ',', and servers read one of them", truncate(h.Name), len(h.Values))
	}
	v := h.Values[0]
	if v == "" {
		return nil
	}
	first, _ := utf8.DecodeRuneInString(v)
	last, _ := utf8.DecodeLastRuneInString(v)
	if unicode.IsSpace(first) || unicode.IsSpace(last) || strings.Contains(v, "  ") {
		return malformed("header %s has white space at an end or a run of spaces: SigV4 signs the value trimmed and collapsed, so the policy would decide on another spelling than the one signed; send %q", truncate(h.Name), truncate(strings.Join(strings.Fields(v), " ")))
	}
	return nil
}
