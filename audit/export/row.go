package export

import (
	"encoding/hex"
	"time"

	"github.com/countersign/countersign/audit"
)

// Row is one record as a Parquet row: the table's schema (the README's
// audit section documents it for SQL engines; keep the two in step).
//
// Nested objects are flattened into <object>_<field> columns
// (principal_id, signing_scope): every engine reads a flat column the same
// way, filters and partitions it without struct syntax, and pushes
// predicates down into its statistics. Arrays are Parquet LISTs of strings
// and detail a MAP of strings, which Trino, Athena, Spark and DuckDB all
// read natively.
//
// A column is NULL exactly when its field is absent from the record's
// line: the access columns on lifecycle records, event and detail on
// access records, principal_* without a principal, table_* on the legacy
// route, signing_* on unsigned records, mint_* on records that are not mints, version_id and prefix when the
// request named none. Everything else is non-NULL (strings may be empty),
// so a row says as much as its line.
//
// time is TIMESTAMP(MICROS, UTC), the precision every one of those engines
// reads (Spark refuses NANOS, Athena keeps milliseconds); time_ns is the
// record's exact time, nanoseconds since the Unix epoch.
type Row struct {
	Node     string `parquet:"node,dict"`
	Seq      int64  `parquet:"seq,delta"`
	LeafHash string `parquet:"leaf_hash"`

	V      int32     `parquet:"v"`
	ID     string    `parquet:"id"`
	Time   time.Time `parquet:"time,timestamp(microsecond:utc)"`
	TimeNS int64     `parquet:"time_ns,delta"`
	Kind   string    `parquet:"kind,dict"`

	SourceIP  *string `parquet:"source_ip,optional,dict"`
	RequestID *string `parquet:"request_id,optional"`

	PrincipalIssuer    *string  `parquet:"principal_issuer,optional,dict"`
	PrincipalID        *string  `parquet:"principal_id,optional,dict"`
	PrincipalGroups    []string `parquet:"principal_groups,optional,list"`
	PrincipalJTI       *string  `parquet:"principal_jti,optional,dict"`
	PrincipalTokenHMAC *string  `parquet:"principal_token_hmac,optional,dict"`

	Operation *string `parquet:"operation,optional,dict"`
	Action    *string `parquet:"action,optional,dict"`
	Access    *string `parquet:"access,optional,dict"`
	Bucket    *string `parquet:"bucket,optional,dict"`
	Key       *string `parquet:"key,optional"`
	VersionID *string `parquet:"version_id,optional"`
	Prefix    *string `parquet:"prefix,optional"`
	Region    *string `parquet:"region,optional,dict"`

	TablePrefix    *string  `parquet:"table_prefix,optional,dict"`
	TableNamespace []string `parquet:"table_namespace,optional,list"`
	TableName      *string  `parquet:"table_name,optional,dict"`

	Role           *string `parquet:"role,optional,dict"`
	Decision       *string `parquet:"decision,optional,dict"`
	Reason         *string `parquet:"reason,optional,dict"`
	Status         *int32  `parquet:"status,optional"`
	PolicyRevision *string `parquet:"policy_revision,optional,dict"`
	EvalMicros     *int64  `parquet:"eval_us,optional"`

	SigningAccessKeyID            *string  `parquet:"signing_access_key_id,optional,dict"`
	SigningScope                  *string  `parquet:"signing_scope,optional,dict"`
	SigningAmzDate                *string  `parquet:"signing_amz_date,optional,dict"`
	SigningSignedHeaders          []string `parquet:"signing_signed_headers,optional,list"`
	SigningPayload                *string  `parquet:"signing_payload,optional,dict"`
	SigningCanonicalRequestSHA256 *string  `parquet:"signing_canonical_request_sha256,optional"`
	SigningSignatureSHA256        *string  `parquet:"signing_signature_sha256,optional"`
	SigningSourceIdentity         *string  `parquet:"signing_source_identity,optional,dict"`
	SigningSessionName            *string  `parquet:"signing_session_name,optional,dict"`

	MintActions         []string `parquet:"mint_actions,optional,list"`
	MintDurationSeconds *int64   `parquet:"mint_duration_s,optional"`
	MintExpires         *string  `parquet:"mint_expires,optional"`
	MintAccessKeyID     *string  `parquet:"mint_access_key_id,optional,dict"`
	MintSourceIdentity  *string  `parquet:"mint_source_identity,optional,dict"`
	MintSessionName     *string  `parquet:"mint_session_name,optional,dict"`

	Event  *string           `parquet:"event,optional,dict"`
	Detail map[string]string `parquet:"detail,optional"`
}

// NewRow is the row of a record decoded from line.
func NewRow(r *audit.Record, line []byte) Row {
	leaf := audit.LeafHash(line)
	row := Row{
		Node:     r.Node,
		Seq:      int64(r.Seq),
		LeafHash: hex.EncodeToString(leaf[:]),
		V:        int32(r.Version),
		ID:       r.ID,
		Time:     r.Time.UTC().Truncate(time.Microsecond), // as stored
		TimeNS:   r.Time.UnixNano(),
		Kind:     string(r.Kind),
	}
	if r.Kind == audit.KindLifecycle {
		row.Event = ptr(string(r.Event))
		row.Detail = r.Detail
		if row.Detail == nil {
			row.Detail = map[string]string{} // always written, {} when empty
		}
		return row
	}
	row.SourceIP = ptr(r.SourceIP)
	row.RequestID = ptr(r.RequestID)
	if p := r.Principal; p != nil {
		row.PrincipalIssuer = ptr(p.Issuer)
		row.PrincipalID = ptr(p.ID)
		row.PrincipalGroups = nonNil(p.Groups)
		row.PrincipalJTI = ptr(p.JTI)
		row.PrincipalTokenHMAC = ptr(p.TokenHMAC)
	}
	row.Operation = ptr(r.Operation)
	row.Action = ptr(r.Action)
	row.Access = ptr(r.Access)
	row.Bucket = ptr(r.Bucket)
	row.Key = ptr(r.Key)
	if r.VersionID != "" {
		row.VersionID = ptr(r.VersionID)
	}
	if r.Prefix != nil {
		row.Prefix = ptr(*r.Prefix)
	}
	row.Region = ptr(r.Region)
	if t := r.Table; t != nil {
		row.TablePrefix = ptr(t.Prefix)
		row.TableNamespace = nonNil(t.Namespace)
		row.TableName = ptr(t.Name)
	}
	row.Role = ptr(string(r.Role))
	row.Decision = ptr(string(r.Decision))
	row.Reason = ptr(r.Reason)
	row.Status = ptr(int32(r.Status))
	row.PolicyRevision = ptr(r.PolicyRevision)
	row.EvalMicros = ptr(r.EvalMicros)
	if s := r.Signing; s != nil {
		row.SigningAccessKeyID = ptr(s.AccessKeyID)
		row.SigningScope = ptr(s.Scope)
		row.SigningAmzDate = ptr(s.AmzDate)
		row.SigningSignedHeaders = nonNil(s.SignedHeaders)
		row.SigningPayload = ptr(s.Payload)
		row.SigningCanonicalRequestSHA256 = ptr(s.CanonicalRequestSHA256)
		row.SigningSignatureSHA256 = ptr(s.SignatureSHA256)
		if s.SourceIdentity != "" {
			row.SigningSourceIdentity = ptr(s.SourceIdentity)
		}
		if s.SessionName != "" {
			row.SigningSessionName = ptr(s.SessionName)
		}
	}
	if m := r.Mint; m != nil {
		row.MintActions = nonNil(m.Actions)
		row.MintDurationSeconds = ptr(m.DurationSeconds)
		row.MintExpires = ptr(m.Expires)
		row.MintAccessKeyID = ptr(m.AccessKeyID)
		row.MintSourceIdentity = ptr(m.SourceIdentity)
		row.MintSessionName = ptr(m.SessionName)
	}
	return row
}

// Record is the record a row holds, as DecodeRecord would return it from
// the line (Principal.TokenSHA256 is never in either).
func (row *Row) Record() *audit.Record {
	r := &audit.Record{
		Version: int(row.V),
		Seq:     uint64(row.Seq),
		ID:      row.ID,
		Time:    time.Unix(0, row.TimeNS).UTC(),
		Node:    row.Node,
		Kind:    audit.Kind(row.Kind),
	}
	if r.Kind == audit.KindLifecycle {
		r.Event = audit.Event(val(row.Event))
		r.Detail = row.Detail
		if r.Detail == nil {
			r.Detail = map[string]string{}
		}
		return r
	}
	r.SourceIP = val(row.SourceIP)
	r.RequestID = val(row.RequestID)
	if row.PrincipalID != nil {
		r.Principal = &audit.Principal{
			Issuer:    val(row.PrincipalIssuer),
			ID:        *row.PrincipalID,
			Groups:    nonNil(row.PrincipalGroups),
			JTI:       val(row.PrincipalJTI),
			TokenHMAC: val(row.PrincipalTokenHMAC),
		}
	}
	r.Operation = val(row.Operation)
	r.Action = val(row.Action)
	r.Access = val(row.Access)
	r.Bucket = val(row.Bucket)
	r.Key = val(row.Key)
	r.VersionID = val(row.VersionID)
	if row.Prefix != nil {
		r.Prefix = ptr(*row.Prefix)
	}
	r.Region = val(row.Region)
	if row.TableName != nil {
		r.Table = &audit.Table{Prefix: val(row.TablePrefix), Namespace: nonNil(row.TableNamespace), Name: *row.TableName}
	}
	r.Role = audit.Role(val(row.Role))
	r.Decision = audit.Decision(val(row.Decision))
	r.Reason = val(row.Reason)
	if row.Status != nil {
		r.Status = int(*row.Status)
	}
	r.PolicyRevision = val(row.PolicyRevision)
	if row.EvalMicros != nil {
		r.EvalMicros = *row.EvalMicros
	}
	if row.SigningScope != nil {
		r.Signing = &audit.Signing{
			AccessKeyID:            val(row.SigningAccessKeyID),
			Scope:                  *row.SigningScope,
			AmzDate:                val(row.SigningAmzDate),
			SignedHeaders:          nonNil(row.SigningSignedHeaders),
			Payload:                val(row.SigningPayload),
			CanonicalRequestSHA256: val(row.SigningCanonicalRequestSHA256),
			SignatureSHA256:        val(row.SigningSignatureSHA256),
			SourceIdentity:         val(row.SigningSourceIdentity),
			SessionName:            val(row.SigningSessionName),
		}
	}
	if row.MintDurationSeconds != nil {
		r.Mint = &audit.Mint{
			Actions:         nonNil(row.MintActions),
			DurationSeconds: *row.MintDurationSeconds,
			Expires:         val(row.MintExpires),
			AccessKeyID:     val(row.MintAccessKeyID),
			SourceIdentity:  val(row.MintSourceIdentity),
			SessionName:     val(row.MintSessionName),
		}
	}
	return r
}

func ptr[T any](v T) *T { return &v }

func val(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// nonNil keeps a present, empty array a non-NULL empty list.
func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
