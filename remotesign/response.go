package remotesign

import (
	"strconv"

	"github.com/countersign/countersign/internal/jsonstr"
)

// AppendResult appends a RemoteSignResult, {"uri":...,"headers":{...}}, to
// dst and returns the extended buffer. Headers are written in the order
// given, each with its values in order (a header with no values is written
// as []); the caller must not pass two headers with the same name.
func AppendResult(dst []byte, uri string, headers Headers) []byte {
	dst = append(dst, `{"uri":`...)
	dst = jsonstr.Append(dst, uri)
	dst = append(dst, `,"headers":{`...)
	for i := range headers {
		h := &headers[i]
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = jsonstr.Append(dst, h.Name)
		dst = append(dst, ':', '[')
		for j, v := range h.Values {
			if j > 0 {
				dst = append(dst, ',')
			}
			dst = jsonstr.Append(dst, v)
		}
		dst = append(dst, ']')
	}
	return append(dst, '}', '}')
}

// AppendError appends an error in Iceberg's REST error model,
// {"error":{"message":...,"type":...,"code":N}}, to dst and returns the
// extended buffer. typ is the exception type name, for example
// "BadRequestException"; code is the HTTP status.
func AppendError(dst []byte, code int, typ, message string) []byte {
	dst = append(dst, `{"error":{"message":`...)
	dst = jsonstr.Append(dst, message)
	dst = append(dst, `,"type":`...)
	dst = jsonstr.Append(dst, typ)
	dst = append(dst, `,"code":`...)
	dst = strconv.AppendInt(dst, int64(code), 10)
	return append(dst, '}', '}')
}
