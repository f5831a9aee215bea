package s3req

import "strings"

// param is one decoded query parameter.
type param struct {
	key, value string
	hasValue   bool // "k=" and "k=v" versus a bare "k"
}

type params []param

func (q params) get(key string) (param, bool) {
	for _, p := range q {
		if p.key == key {
			return p, true
		}
	}
	return param{}, false
}

// presignParams are the query parameters of presigned URLs (SigV4 and V2).
// A description carrying them is either confused or trying to smuggle a
// second signature, so it is refused outright.
var presignParams = [...]string{
	"x-amz-algorithm", "x-amz-credential", "x-amz-date", "x-amz-expires",
	"x-amz-signedheaders", "x-amz-signature", "x-amz-security-token",
	"awsaccesskeyid", "signature", "expires",
}

const maxQueryParams = 64

// parseQuery splits and decodes a raw query string. Keys are case-sensitive
// (as S3's are); a duplicate key is an error because two parsers may pick
// different copies.
func parseQuery(raw string) (params, error) {
	if raw == "" {
		return nil, nil
	}
	// Some parsers (Go's url.ParseQuery among them, older HTML ones)
	// split pairs on ';' or drop them: "x-id=GetObject;acl" must not be
	// one request to countersign and another to the server.
	if strings.IndexByte(raw, ';') >= 0 {
		return nil, malformed("uri query must not contain ';': separate parameters with '&' and encode ';' as %%3B")
	}
	q := make(params, 0, 4)
	for part := range strings.SplitSeq(raw, "&") {
		if part == "" {
			return nil, malformed("uri query has an empty parameter")
		}
		if len(q) == maxQueryParams {
			return nil, malformed("uri query has more than %d parameters", maxQueryParams)
		}
		rawKey, rawValue, hasValue := strings.Cut(part, "=")
		key, err := percentDecode(rawKey, "uri query parameter name")
		if err != nil {
			return nil, err
		}
		if key == "" {
			return nil, malformed("uri query has a parameter without a name")
		}
		if err := checkText(key, "uri query parameter name"); err != nil {
			return nil, err
		}
		value, err := percentDecode(rawValue, "uri query parameter "+quoteShort(key))
		if err != nil {
			return nil, err
		}
		if err := checkText(value, "uri query parameter "+quoteShort(key)); err != nil {
			return nil, err
		}
		for _, name := range presignParams {
			if strings.EqualFold(key, name) {
				return nil, malformed("uri must not carry presigned-URL parameter %q", key)
			}
		}
		for _, p := range q {
			if p.key == key {
				return nil, malformed("uri query parameter %q appears more than once", truncate(key))
			}
		}
		q = append(q, param{key: key, value: value, hasValue: hasValue})
	}
	return q, nil
}

func quoteShort(s string) string { return `"` + truncate(s) + `"` }
