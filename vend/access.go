package vend

import (
	"fmt"
	"strings"

	"github.com/countersign/countersign/internal/policyinput"
	"github.com/countersign/countersign/s3req"
)

// Access is a mint's access class.
type Access string

// The access classes of a mint.
const (
	Read      Access = "read"       // read and list
	ReadWrite Access = "read-write" // read, list, write and delete
)

// ParseAccess reads an access class, naming the valid ones when s is not.
func ParseAccess(s string) (Access, error) {
	switch a := Access(s); a {
	case Read, ReadWrite:
		return a, nil
	}
	return "", fmt.Errorf("access class %q: read or read-write", s)
}

// classes are the S3 access classes (s3req's, as the policy sees them in
// input.access) a mint of access a asks the policy and the scope compiler
// about. A required class must be allowed and its required action
// (requiredAction) exact on the whole prefix, or the mint is refused;
// every other action, and the optional classes, are granted where their
// scope is exact under the prefix, and left out otherwise.
func (a Access) classes() (required, optional []string) {
	if a == ReadWrite {
		return []string{"read", "write"}, []string{"list", "delete"}
	}
	return []string{"read"}, []string{"list"}
}

// requiredAction is the IAM action without which a required class's
// credentials are useless: reading objects, writing them.
var requiredAction = map[string]string{"read": "s3:GetObject", "write": "s3:PutObject"}

// metachars are the characters IAM reads as a pattern in a resource or a
// StringLike condition (sessionpolicy.Metachars): * and ? are wildcards,
// $ starts a policy variable. IAM's escapes for them (${*}, ${?}, ${$})
// are not honoured by every STS (SeaweedFS's IAM leaves them as written),
// so a prefix holding one cannot be named exactly and is refused.
const metachars = "*?$"

// splitLocation reads "s3://bucket/path" (or s3a://, s3n://) into a bucket
// and a key prefix that ends in "/" (or is "" for the whole bucket), the
// way deploy/policies/lib/location.rego reads a table location: the
// location wh/db/t covers wh/db/t/ but not wh/db/t_old/.
func splitLocation(loc string) (bucket, prefix string, err error) {
	if _, ok := policyinput.CutLocationScheme(loc); !ok {
		return "", "", fmt.Errorf("location %q is not an s3:// URL", loc)
	}
	l, ok := policyinput.ParseLocation(loc)
	if !ok {
		return "", "", fmt.Errorf("location %q names no bucket", loc)
	}
	bucket, prefix = l.Bucket, l.Prefix
	if err := s3req.CheckBucket(bucket); err != nil {
		return "", "", fmt.Errorf("location %q: %v", loc, err)
	}
	// The sign routes' key rules (s3req), so that no credential names a
	// prefix they would refuse: valid UTF-8 without control characters
	// (C0, DEL, C1), no '\' (SeaweedFS reads it as '/'), no empty, "."
	// or ".." segment (servers that clean paths would read another prefix
	// than the one decided).
	if prefix != "" {
		if err := s3req.CheckPrefix(prefix, fmt.Sprintf("location %q: prefix", loc)); err != nil {
			return "", "", err
		}
	}
	for i := 0; i < len(prefix); i++ {
		if c := prefix[i]; strings.IndexByte(metachars, c) >= 0 {
			return "", "", fmt.Errorf("location %q contains %q, which IAM reads as a wildcard or a policy variable: a session policy cannot name this prefix exactly (an STS need not honour IAM's escape for it), so no credentials are minted for it", loc, c)
		}
	}
	return bucket, prefix, nil
}
