// Package remotesign is the wire codec of Apache Iceberg's S3 remote-signing
// protocol: it decodes a RemoteSignRequest body into a validated Request and
// appends RemoteSignResult and Iceberg error-model JSON to a caller's buffer.
//
// It sits on the hot path (one call per signed S3 request, tens of thousands
// per table scan), so decoding reuses a pooled Decoder and copies every kept
// string into one allocation, and encoding appends to a caller-owned []byte
// without reflection. Nothing in this package decides what may be signed; it
// only guarantees that what later stages see is well-formed and unambiguous.
package remotesign
