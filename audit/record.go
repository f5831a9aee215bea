package audit

import (
	"errors"
	"fmt"
	"time"

	"github.com/countersign/countersign/internal/swar"
)

// SchemaVersion is the record schema's version ("v"). It changes only when
// a field is removed or changes meaning; adding a field keeps it, so
// readers must ignore fields they do not know.
const SchemaVersion = 1

// Record is one audit record: one line of a segment file, one leaf of the
// log's Merkle tree. Schema version 1, field by field, in the order they
// appear on the line (this block is the README's schema reference; keep it
// and SCHEMA.md in step):
//
//	v                 schema version, 1
//	seq               position in this node's log: 0, 1, 2, ... with no gap,
//	                  across segments; also the record's leaf index in the tree
//	id                event id, 32 lower-case hex digits: 16 random (fixed per
//	                  segment) then seq as 16 hex digits; unique
//	time              when the record was sequenced, UTC RFC 3339 with
//	                  nanoseconds; never earlier than the previous record's
//	node              node id (audit.node_id); the log's origin is "countersign/<node>"
//	kind              "access" (a sign request's decision about one object)
//	                  or "lifecycle" (the node's own events)
//
//	access records, in this order:
//	source_ip         the caller's address
//	request_id        the sign request's id (as logged and returned by the server)
//	principal         absent when the caller was not authenticated, else:
//	  issuer          token issuer (iss), or the mTLS source
//	  id              principal id (the configured principal claim, or the
//	                  certificate's identity)
//	  groups          groups claim, [] when none
//	  jti             the token's jti, "" when absent or for mTLS
//	  token_hmac      hex HMAC-SHA256, keyed with audit.hmac_key_file, of the
//	                  SHA-256 of the bearer token; "" for mTLS. The token
//	                  itself is never recorded; with the key, a known token
//	                  can be matched to its records
//	operation         S3 operation, e.g. "GetObject" ("" if not classified);
//	                  on a catalog front's refusal the REST catalog
//	                  operationId, e.g. "updateTable", or "unknown route"
//	action            IAM action, e.g. "s3:GetObject"
//	access            "read", "write", "delete", "delete_version" (the
//	                  permanent removal of an object version), "list" or "admin"
//	bucket            bucket ("" if not classified)
//	key               object key ("" for bucket-level operations)
//	version_id        the object version the request names (?versionId=,
//	                  a DeleteObjects <VersionId>, a copy source's
//	                  ?versionId=); absent when it names none
//	prefix            list prefix of ListObjects(V2); absent otherwise
//	region            the request's region
//	table             absent on the legacy route, else the Iceberg table of
//	                  the per-table route: {prefix, namespace: [...], name};
//	                  on a catalog front's refusal the table or namespace
//	                  its route names (name "" for a namespace)
//	role              what this object is to the request: "object" (the
//	                  target), "copy-source" (CopyObject/UploadPartCopy
//	                  source), "delete-key" (one key of DeleteObjects),
//	                  "bucket" (bucket-level and list operations), "prefix"
//	                  (everything under a prefix: a credential mint); ""
//	                  when the request was never classified
//	decision          "allow", "deny", "error" (no decision could be made,
//	                  e.g. policy unavailable), "unauthenticated", "malformed"
//	reason            the policy's reason or the refusal's message
//	status            the HTTP status of the answer to the sign request
//	policy_revision   revision of the policy that decided ("" if none did)
//	eval_us           policy evaluation time, microseconds
//	signing           only on allowed records that were signed:
//	  access_key_id   the signing credential's access key id (not secret)
//	  scope           credential scope, e.g. "20261130/us-east-1/s3/aws4_request"
//	  amz_date        x-amz-date signed, e.g. "20261130T120000Z"
//	  signed_headers  lower-case, sorted
//	  payload         x-amz-content-sha256 as signed: "UNSIGNED-PAYLOAD",
//	                  "STREAMING-...", or the body's hex SHA-256
//	  canonical_request_sha256  hex SHA-256 of the canonical request
//	  signature_sha256          hex SHA-256 of the hex signature; the
//	                  signature itself is never recorded (a signed request is
//	                  a bearer credential for minutes)
//	  source_identity optional: the per-principal session's SourceIdentity
//	                  (credentials.per_principal), then access_key_id is
//	                  the session's; absent otherwise
//	  session_name    optional: the session's RoleSessionName, likewise
//	mint              only on credential mints (operation "MintCredentials",
//	                  role "prefix", access "read" or "read-write", the
//	                  prefix asked for in bucket and prefix), allowed or not:
//	  actions         the IAM actions of the session policy, sorted ([] when
//	                  refused)
//	  duration_s      the credentials' lifetime in seconds (asked for, when
//	                  refused)
//	  expires         when they expire, UTC RFC 3339; "" when refused
//	  access_key_id   the vended credentials' access key id (not secret); ""
//	                  when refused. The secret and the session token are
//	                  never recorded
//	  source_identity the STS SourceIdentity naming the principal; "" when refused
//	  session_name    the STS RoleSessionName; "" when refused
//
//	lifecycle records:
//	event             "start", "stop", "config", "policy_revision",
//	                  "key_rotation" (signing credentials changed),
//	                  "heartbeat" (idle), "seal" (last record of a segment),
//	                  "recover" (first record of the segment opened after a
//	                  write/sync failure or a torn tail; names the abandoned
//	                  segment and how many of its bytes belong to the log),
//	                  "checkpoint_key" (the checkpoint signing key changed)
//	detail            string to string map, keys sorted (see SCHEMA.md for
//	                  each event's keys)
//
// Optional objects are absent, never null; every other field of the
// record's kind is always present (strings may be empty).
//
// Nothing secret can be put in a Record: the token is represented only by
// its SHA-256 (Principal.TokenSHA256, never written), which Append turns
// into a keyed HMAC; signing is represented only by digests.
type Record struct {
	// Version, Seq, ID, Time and Node are assigned by Append (after it
	// returns nil) and filled in by DecodeRecord; values set by the caller
	// are ignored.
	Version int       `json:"v"`
	Seq     uint64    `json:"seq"`
	ID      string    `json:"id"`
	Time    time.Time `json:"time"`
	Node    string    `json:"node"`
	Kind    Kind      `json:"kind"`

	// Access records.
	SourceIP       string     `json:"source_ip,omitempty"`
	RequestID      string     `json:"request_id,omitempty"`
	Principal      *Principal `json:"principal,omitempty"`
	Operation      string     `json:"operation,omitempty"`
	Action         string     `json:"action,omitempty"`
	Access         string     `json:"access,omitempty"`
	Bucket         string     `json:"bucket,omitempty"`
	Key            string     `json:"key,omitempty"`
	VersionID      string     `json:"version_id,omitempty"`
	Prefix         *string    `json:"prefix,omitempty"`
	Region         string     `json:"region,omitempty"`
	Table          *Table     `json:"table,omitempty"`
	Role           Role       `json:"role,omitempty"`
	Decision       Decision   `json:"decision,omitempty"`
	Reason         string     `json:"reason,omitempty"`
	Status         int        `json:"status,omitempty"`
	PolicyRevision string     `json:"policy_revision,omitempty"`
	EvalMicros     int64      `json:"eval_us,omitempty"`
	Signing        *Signing   `json:"signing,omitempty"`
	Mint           *Mint      `json:"mint,omitempty"`

	// Lifecycle records.
	Event  Event             `json:"event,omitempty"`
	Detail map[string]string `json:"detail,omitempty"`
}

// Principal is the authenticated caller of an access record. Append never
// modifies it, so one Principal may be shared by every record of a request
// and by concurrent requests.
type Principal struct {
	Issuer string   `json:"issuer"`
	ID     string   `json:"id"`
	Groups []string `json:"groups"`
	JTI    string   `json:"jti"`
	// TokenSHA256 is the SHA-256 of the bearer token (auth.Identity's
	// TokenHash), zero for mTLS. It is never written: the record gets
	// token_hmac, its HMAC under the log's key, so that the log alone
	// cannot be used to confirm a guessed token.
	TokenSHA256 [32]byte `json:"-"`
	// TokenHMAC is token_hmac as read back by DecodeRecord. When writing,
	// it is used only if TokenSHA256 is zero (re-encoding a decoded record).
	TokenHMAC string `json:"token_hmac"`
}

// Table is the Iceberg table a per-table sign route names.
type Table struct {
	Prefix    string   `json:"prefix"`
	Namespace []string `json:"namespace"`
	Name      string   `json:"name"`
}

// Signing describes how an allowed request was signed, by digests only
// (signer.Signed carries exactly these values).
type Signing struct {
	AccessKeyID            string   `json:"access_key_id"`
	Scope                  string   `json:"scope"`
	AmzDate                string   `json:"amz_date"`
	SignedHeaders          []string `json:"signed_headers"`
	Payload                string   `json:"payload"`
	CanonicalRequestSHA256 string   `json:"canonical_request_sha256"`
	SignatureSHA256        string   `json:"signature_sha256"`
	// SourceIdentity and SessionName name the per-principal session the
	// request was signed with (credentials.per_principal); absent when
	// one credential signs for everyone.
	SourceIdentity string `json:"source_identity,omitempty"`
	SessionName    string `json:"session_name,omitempty"`
}

// OperationMint is the operation of a credential mint's record.
const OperationMint = "MintCredentials"

// Mint describes a credential mint (vended temporary credentials), by
// their access key id only: the secret and the session token are never
// recorded.
type Mint struct {
	Actions         []string `json:"actions"`
	DurationSeconds int64    `json:"duration_s"`
	Expires         string   `json:"expires"`
	AccessKeyID     string   `json:"access_key_id"`
	SourceIdentity  string   `json:"source_identity"`
	SessionName     string   `json:"session_name"`
}

// Kind is what a record describes.
type Kind string

// The record kinds.
const (
	KindAccess    Kind = "access"
	KindLifecycle Kind = "lifecycle"
)

// Decision is the outcome recorded for one object.
type Decision string

// The decisions.
const (
	DecisionAllow           Decision = "allow"
	DecisionDeny            Decision = "deny"
	DecisionError           Decision = "error"
	DecisionUnauthenticated Decision = "unauthenticated"
	DecisionMalformed       Decision = "malformed"
)

// Role is what the recorded object is to its request.
type Role string

// The roles.
const (
	RoleNone       Role = "" // the request was never classified
	RoleObject     Role = "object"
	RoleCopySource Role = "copy-source"
	RoleDeleteKey  Role = "delete-key"
	RoleBucket     Role = "bucket"
	RolePrefix     Role = "prefix" // everything under a prefix: a credential mint
)

// Event is a lifecycle record's event.
type Event string

// Events callers may append.
const (
	EventConfig         Event = "config"
	EventPolicyRevision Event = "policy_revision"
	EventKeyRotation    Event = "key_rotation" // the S3 signing credentials changed
	// EventRefusalsSuppressed counts one source's refusals that went
	// unrecorded past its limit (detail: source_ip, count, since, until,
	// statuses).
	EventRefusalsSuppressed Event = "refusals_suppressed"
)

// Events only the log itself writes.
const (
	EventStart         Event = "start"
	EventStop          Event = "stop"
	EventHeartbeat     Event = "heartbeat"
	EventSeal          Event = "seal"
	EventRecover       Event = "recover"
	EventCheckpointKey Event = "checkpoint_key"
)

// Limits on what one record may hold: the log is read line by line, and a
// record is written inside one batch.
const (
	// MaxRecordBytes bounds one encoded line.
	MaxRecordBytes = 1 << 20
	maxDetail      = 64
)

// ErrInvalidRecord wraps every reason Append refuses a record. It is a
// caller bug, not a log failure: the log stays healthy.
var ErrInvalidRecord = errors.New("audit: invalid record")

// validate checks a caller's record. internal is true for the log's own
// lifecycle records.
func (r *Record) validate(internal bool) error {
	switch r.Kind {
	case KindAccess:
		switch r.Decision {
		case DecisionAllow, DecisionDeny, DecisionError, DecisionUnauthenticated, DecisionMalformed:
		default:
			return fmt.Errorf("%w: decision %q", ErrInvalidRecord, r.Decision)
		}
		switch r.Role {
		case RoleObject, RoleCopySource, RoleDeleteKey, RoleBucket, RolePrefix:
		case RoleNone:
			// Allow is a decision about a classified object. Deny without a
			// role is a request refused before it named one (for example,
			// a host outside the endpoint allow-list).
			if r.Decision == DecisionAllow {
				return fmt.Errorf("%w: role is required with decision %q", ErrInvalidRecord, r.Decision)
			}
		default:
			return fmt.Errorf("%w: role %q", ErrInvalidRecord, r.Role)
		}
		if r.Status < 100 || r.Status > 599 {
			return fmt.Errorf("%w: status %d", ErrInvalidRecord, r.Status)
		}
		if r.Signing != nil {
			if r.Decision != DecisionAllow {
				return fmt.Errorf("%w: signing details on a %q record", ErrInvalidRecord, r.Decision)
			}
			// Digests only: 64 lower-case hex digits. This is also what
			// keeps a raw signature out of the record by mistake.
			if !isHexDigest(r.Signing.CanonicalRequestSHA256) || !isHexDigest(r.Signing.SignatureSHA256) {
				return fmt.Errorf("%w: signing digests must be hex SHA-256", ErrInvalidRecord)
			}
		}
		if r.Mint != nil {
			if r.Signing != nil || r.Role != RolePrefix || r.Operation != OperationMint {
				return fmt.Errorf("%w: mint details need operation %q and role %q, and no signing details", ErrInvalidRecord, OperationMint, RolePrefix)
			}
			if r.Decision != DecisionAllow && r.Mint.AccessKeyID != "" {
				return fmt.Errorf("%w: an access key id on a %q mint", ErrInvalidRecord, r.Decision)
			}
		}
		if r.Event != "" || r.Detail != nil {
			return fmt.Errorf("%w: event/detail on an access record", ErrInvalidRecord)
		}
	case KindLifecycle:
		switch r.Event {
		case EventConfig, EventPolicyRevision, EventKeyRotation, EventRefusalsSuppressed:
		case EventStart, EventStop, EventHeartbeat, EventSeal, EventRecover, EventCheckpointKey:
			if !internal {
				return fmt.Errorf("%w: event %q is written by the log itself", ErrInvalidRecord, r.Event)
			}
		default:
			return fmt.Errorf("%w: event %q", ErrInvalidRecord, r.Event)
		}
		if len(r.Detail) > maxDetail {
			return fmt.Errorf("%w: %d detail entries (at most %d)", ErrInvalidRecord, len(r.Detail), maxDetail)
		}
		if r.Principal != nil || r.Signing != nil || r.Mint != nil || r.Table != nil || r.Prefix != nil || r.VersionID != "" || r.Decision != "" {
			return fmt.Errorf("%w: access fields on a lifecycle record", ErrInvalidRecord)
		}
	default:
		return fmt.Errorf("%w: kind %q", ErrInvalidRecord, r.Kind)
	}
	return nil
}

func isHexDigest(s string) bool {
	if len(s) != 64 {
		return false
	}
	// Eight bytes at a time: validate runs on every signed record, and a
	// byte loop over its two digests was ~2% of the server's CPU in situ.
	for i := 0; i < 64; i += 8 {
		if !isLowerHex8(swar.Load64(s, i)) {
			return false
		}
	}
	return true
}

// isLowerHex8 reports whether all eight bytes of x are '0'-'9' or 'a'-'f'.
// For bytes below 0x80 (checked first) no per-byte sum below carries into
// the next byte: b+(0x80-lo) has its high bit set iff b >= lo, and
// b+(0x7f-hi) iff b > hi.
func isLowerHex8(x uint64) bool {
	const lsb = 0x0101010101010101
	if x&swar.MSB != 0 {
		return false
	}
	digit := (x + lsb*(0x80-'0')) &^ (x + lsb*(0x7f-'9'))
	lower := (x + lsb*(0x80-'a')) &^ (x + lsb*(0x7f-'f'))
	return (digit|lower)&swar.MSB == swar.MSB
}
