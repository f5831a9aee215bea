package vend

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/countersign/countersign/auth"
	"github.com/countersign/countersign/internal/policyinput"
)

// Request asks for credentials: for a table (Iceberg REST's credentials
// route: its location comes from the TableLocator) or for a location
// (Unity Catalog's temporary path credentials).
type Request struct {
	// Identity is who asks; nil when authentication failed (Refused).
	Identity *auth.Identity
	// Table, when set, names the Iceberg table whose location is vended.
	Table *policyinput.Table
	// Location is the s3:// location vended when Table is nil.
	Location string
	// Access is the access class asked for. Empty (the Iceberg route, whose
	// protocol names none) mints the widest the policy grants: read-write,
	// else read.
	Access Access
	// Duration is the lifetime asked for; 0 is the configured maximum.
	Duration time.Duration
	// SourceIP and RequestID are recorded with the mint.
	SourceIP, RequestID string
}

// Credentials are vended credentials and what they cover.
type Credentials struct {
	// Location is the prefix they cover, "s3://bucket/prefix".
	Location       string
	Bucket, Prefix string
	Access         Access
	// Actions are the IAM actions of their session policy, sorted.
	Actions []string

	AccessKeyID, SecretAccessKey, SessionToken string
	Expires                                    time.Time
}

// TableLocator gives a table's location, "s3://bucket/path/"
// (policy.Manager.TableLocation from the table-scope data; a catalog front
// from the catalog's own answers). ok is false for a table it does not
// know; an error means it could not tell (the mint is answered 503).
type TableLocator interface {
	TableLocation(ctx context.Context, t *policyinput.Table) (loc string, ok bool, err error)
}

// Error is a refused mint: the HTTP status, and a message for the caller
// that names what was wrong and never the policy's internals. RetryAfter
// (seconds) is set on 503s.
type Error struct {
	Status     int
	Msg        string
	RetryAfter int
}

func (e *Error) Error() string { return "vend: " + strconv.Itoa(e.Status) + ": " + e.Msg }

func refusal(status int, msg string) *Error {
	e := &Error{Status: status, Msg: msg}
	if status == http.StatusServiceUnavailable {
		e.RetryAfter = 1
	}
	return e
}
