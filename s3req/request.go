// Package s3req turns an unsigned request description (method, URI, headers,
// body, region) into a typed S3 request: which endpoint, which bucket, which
// object(s), which S3 API operation and IAM action. It is the security core
// of countersign: the policy authorizes exactly what this package parsed, and
// the signer signs exactly the request it describes.
package s3req

import "github.com/countersign/countersign/remotesign"

// Access classes group IAM actions the way policies usually reason about them.
type Access string

const (
	AccessRead   Access = "read"
	AccessWrite  Access = "write"
	AccessDelete Access = "delete"
	// AccessDeleteVersion is the permanent removal of one object version
	// (s3:DeleteObjectVersion). It is not "delete": on a versioned bucket a
	// plain delete only adds a delete marker, and the versions it hides are
	// the recovery path a grant for snapshot expiry must not take away.
	AccessDeleteVersion Access = "delete_version"
	AccessList          Access = "list"
	AccessAdmin         Access = "admin"
)

// Target is one authorization question: may the caller perform Action on the
// object Key (or the list Prefix) in Bucket? A request has one Target per
// object it touches: CopyObject has two, DeleteObjects one per key.
type Target struct {
	Operation string // S3 API operation, e.g. "GetObject"
	Action    string // IAM action, e.g. "s3:GetObject"
	Access    Access
	Bucket    string
	Key       string  // object key; empty for bucket-level operations
	Prefix    *string // list prefix for ListObjects(V2); nil otherwise
	VersionID string  // versionId of the object, when the request names one
	// Role says why this target exists: "object" for the request's own
	// object, "copy-source" for the source of a copy, "delete-key" for one
	// key of a DeleteObjects body, "bucket" for bucket-level operations.
	Role string
}

// ARN is the IAM resource ARN of the target, as policies expect it.
func (t *Target) ARN() string {
	if t.Key == "" {
		return "arn:aws:s3:::" + t.Bucket
	}
	return "arn:aws:s3:::" + t.Bucket + "/" + t.Key
}

// Request is a classified S3 request. Every field was derived from, and
// checked against, the client's description; the signer uses the raw parts
// (Scheme, Host, RawPath, RawQuery) so that it signs byte for byte what the
// client will send.
type Request struct {
	Endpoint *Endpoint

	Method   string
	Region   string
	Scheme   string // "http" or "https"
	Host     string // host[:port] exactly as in the URI (lower-cased)
	RawPath  string // escaped path exactly as in the URI
	RawQuery string // query string exactly as in the URI

	Headers remotesign.Headers

	Operation string // the request's own operation, e.g. "DeleteObjects"
	Bucket    string
	Key       string

	// Targets lists every authorization decision the request needs. All
	// must be allowed before it may be signed.
	Targets []Target

	// ContentSHA256 is the x-amz-content-sha256 value to sign. When
	// AddContentSHA256 is true the client did not send one and the signer
	// must add it (S3 requires the header on every request).
	ContentSHA256    string
	AddContentSHA256 bool

	// ownTarget holds Targets' one element when the request touches one
	// object (nearly every request), so that classifying it allocates the
	// Request alone. A Request is used through its pointer, never copied.
	ownTarget [1]Target
}
