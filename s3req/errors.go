package s3req

import (
	"fmt"
	"net/http"
)

// Error is a classification failure. Status is 400 when the description is
// malformed or ambiguous and 403 when it is well-formed but outside what
// countersign is configured to sign (unknown host, region not allowed).
type Error struct {
	Status int
	Msg    string
}

func (e *Error) Error() string { return e.Msg }

func malformed(format string, args ...any) error {
	return &Error{Status: http.StatusBadRequest, Msg: fmt.Sprintf(format, args...)}
}

func forbidden(format string, args ...any) error {
	return &Error{Status: http.StatusForbidden, Msg: fmt.Sprintf(format, args...)}
}

// truncate keeps echoed client input short in error messages.
func truncate(s string) string {
	const max = 64
	if len(s) <= max {
		return s
	}
	return s[:max] + "..."
}
