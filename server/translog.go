package server

import (
	"fmt"
	"log/slog"
	"regexp"
)

// transportLogger is fasthttp's logger for what it reports itself (a
// connection it could not read a request from). fasthttp's default writes
// an unstructured line to stderr with the request's buffered bytes in it,
// Authorization header and all; countersign turns those snippets off
// (fasthttp.Server.SecureErrorLogMessage), logs through slog, and removes
// credentials from what is left, in case another of fasthttp's messages
// quotes the request.
type transportLogger struct{ log *slog.Logger }

// credentialText matches an Authorization or session-token header's value
// (to the end of its line) and a bearer or basic credential, where a
// message might quote them.
var credentialText = regexp.MustCompile(`(?i)((?:authorization|x-amz-security-token)\s*:\s*)[^\r\n"\\]+|((?:bearer|basic)\s+)[^\s"\\,]+`)

func (l transportLogger) Printf(format string, args ...any) {
	msg := credentialText.ReplaceAllString(fmt.Sprintf(format, args...), "${1}${2}[redacted]")
	l.log.Warn("http transport error", "err", msg)
}
