// Package policyinput holds the document a policy decides on (Input and
// the types it is made of) and the Decision it returns. It is a leaf: it
// imports only the standard library, so auth and server can build and read inputs without
// linking the OPA engine that package policy wraps. Package policy
// re-exports every type here under the same name.
package policyinput

// InputVersion is the version of the input document. It changes only when a
// field is removed or changes meaning; adding fields keeps it.
const InputVersion = 1

// Input is the document a policy sees as `input` (version 1). It is a public
// API: policies are written against it, and the README documents it.
type Input struct {
	Version    int        `json:"version"`
	Principal  *Principal `json:"principal"`
	Operation  string     `json:"operation"`
	Action     string     `json:"action"`
	Access     string     `json:"access"`
	Resource   Resource   `json:"resource"`
	CopySource *Resource  `json:"copy_source"`
	Table      *Table     `json:"table"`
	Request    Request    `json:"request"`
	Source     Source     `json:"source"`
	// Mint is set when the input asks whether credentials may be vended
	// (operation "MintCredentials"), null for every sign request. Added in
	// version 1.
	Mint *Mint `json:"mint"`
}

// The operation and action of a mint's input (Input.Mint set): no S3
// request has them, which is why a scope, compiled for S3 requests, leaves
// out what a policy allows only for mints (docs/design.md, "Scope
// compiler").
const (
	OperationMint = "MintCredentials"
	ActionMint    = "sts:AssumeRole"
)

// Mint describes a request for vended credentials: temporary S3
// credentials for everything under one prefix, for a while. The decision
// input's resource is then {bucket, prefix: Prefix}, and access one S3
// access class the mint needs (a read-write mint is decided once for
// "read" and once for "write").
type Mint struct {
	// Prefix is the key prefix the credentials would cover ("" for the
	// whole bucket), as in resource.prefix.
	Prefix string `json:"prefix"`
	// Access is the mint's access class: "read" or "read-write".
	Access string `json:"access"`
	// DurationSeconds is how long the credentials would last.
	DurationSeconds int64 `json:"duration_seconds"`
}

// Principal is the authenticated caller. It is nil until authentication is
// configured (policies then see null and must deny).
type Principal struct {
	ID     string         `json:"id"`
	Issuer string         `json:"issuer"`
	Groups []string       `json:"groups"`
	Claims map[string]any `json:"claims"`
	// Key is AppendPrincipalKey's encoding of the fields above, or "" (the
	// policy's fast path then encodes them at each decision). SetKey sets
	// it once a principal is complete and about to be shared by many
	// inputs, as auth's cached identities are. It is not part of the
	// policy input. Change no field of a principal after SetKey: change a
	// copy, then SetKey the copy.
	Key string `json:"-"`
}

// Resource is the object (or, for lists, the prefix) being accessed.
type Resource struct {
	Bucket string  `json:"bucket"`
	Key    string  `json:"key"`
	Prefix *string `json:"prefix"`
	ARN    string  `json:"arn"`
	// VersionID is the object version the request names (?versionId=, a
	// DeleteObjects <VersionId>, a copy source's ?versionId=), "" when it
	// names none. Added in version 1.
	VersionID string `json:"version_id"`
}

// Table is the Iceberg table named by the per-table sign route.
type Table struct {
	Prefix    string   `json:"prefix"`
	Namespace []string `json:"namespace"`
	Name      string   `json:"name"`
	// Location is the table's location as its catalog gave it to this
	// caller (metadata.location, e.g. "s3://lake/wh/db/t"), when
	// countersign fronts the catalog (catalog.upstream); "" otherwise.
	// Added in version 1.
	Location string `json:"location"`
}

// Request describes the S3 request being signed.
type Request struct {
	Method  string  `json:"method"`
	Region  string  `json:"region"`
	Host    string  `json:"host"`
	Headers Headers `json:"headers"`
}

// Source is where the sign request came from.
type Source struct {
	IP string `json:"ip"`
}

// Decision is the policy's answer for one input. It lives here, beside the
// input, because it is the other half of server's Authorizer contract:
// server needs both types and nothing else of policy.
type Decision struct {
	Allow  bool
	Reason string
	// Revision identifies the policy that decided, for the audit record.
	Revision string
}
