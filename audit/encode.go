package audit

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/countersign/countersign/internal/jsonstr"
)

// The encoder appends records as JSON by hand: field order is fixed by the
// schema (the tree hashes the exact bytes, so one record has exactly one
// encoding), and it runs once per object on the signing path, where
// encoding/json costs several times as much and allocates
// (BenchmarkEncodeRecord against BenchmarkEncodeRecordJSON). Strings are
// escaped by internal/jsonstr (shared with remotesign's responses); its
// rules are part of the record format, pinned by golden_test.go.
//
// A record is encoded in two parts. The tail (from "node" to the closing
// brace) is encoded by the caller's goroutine in Append, in parallel; the
// head (v, seq, id, time) is prepended by the single writer goroutine when
// it sequences the batch, so the serial part stays a few copies.

// AppendRecord appends r's line (without newline) exactly as the log writes
// it, using the fields as they are set, including Seq, ID, Time and Node,
// and Principal.TokenHMAC (records built by tools, tests, re-encoding).
func AppendRecord(dst []byte, r *Record) []byte {
	dst = append(dst, `{"v":`...)
	dst = strconv.AppendInt(dst, int64(r.Version), 10)
	dst = append(dst, `,"seq":`...)
	dst = strconv.AppendUint(dst, r.Seq, 10)
	dst = append(dst, `,"id":`...)
	dst = jsonstr.Append(dst, r.ID)
	dst = append(dst, `,"time":"`...)
	dst = r.Time.UTC().AppendFormat(dst, time.RFC3339Nano)
	dst = append(dst, `",`...)
	return appendTail(dst, r, r.Node, nil)
}

// appendHead appends the writer-assigned fields and the comma before the
// tail. nonce is the segment's random half of the id; ts is the batch's
// formatted time.
func appendHead(dst []byte, seq uint64, nonce *[8]byte, ts []byte) []byte {
	dst = append(dst, `{"v":1,"seq":`...)
	dst = strconv.AppendUint(dst, seq, 10)
	dst = append(dst, `,"id":"`...)
	dst = appendID(dst, nonce, seq)
	dst = append(dst, `","time":"`...)
	dst = append(dst, ts...)
	return append(dst, `",`...)
}

// appendID appends the 32 hex digits of an event id: the segment nonce,
// then seq. Ids are unique even across the abandoned tail of a failed
// segment (whose seqs are reused): each segment draws a new nonce.
func appendID(dst []byte, nonce *[8]byte, seq uint64) []byte {
	dst = hex.AppendEncode(dst, nonce[:])
	var b [8]byte
	for i := 7; i >= 0; i-- {
		b[i] = byte(seq)
		seq >>= 8
	}
	return hex.AppendEncode(dst, b[:])
}

// appendTail appends the record from "node" to its closing brace. With a
// non-nil mac, the principal's token_hmac is computed from TokenSHA256;
// with nil, TokenHMAC is written as set.
func appendTail(dst []byte, r *Record, node string, mac *tokenMAC) []byte {
	return appendTailFields(dst, r, node, mac, nil)
}

// tailFields are where appendTailFields wrote what the segment index
// reads of an access record (indexFields), as offsets from the tail's
// start: the 'k' of kind, and the bodies (quotes excluded) of the
// principal's id, the bucket and the key. The writer indexes a record by
// them instead of searching its line (locate).
type tailFields struct {
	access, principal bool
	kind              int
	p0, p1            int
	b0, b1            int
	k0, k1            int
}

// appendTailFields is appendTail, noting the index's fields in f (nil: not).
func appendTailFields(dst []byte, r *Record, node string, mac *tokenMAC, f *tailFields) []byte {
	start := len(dst)
	dst = append(dst, `"node":`...)
	dst = jsonstr.Append(dst, node)
	dst = append(dst, `,"kind":`...)
	if f != nil {
		*f = tailFields{access: r.Kind == KindAccess, kind: len(dst) - start - len(`kind":`)}
	}
	dst = jsonstr.Append(dst, string(r.Kind))
	if r.Kind == KindLifecycle {
		dst = append(dst, `,"event":`...)
		dst = jsonstr.Append(dst, string(r.Event))
		dst = append(dst, `,"detail":`...)
		dst = appendDetail(dst, r.Detail)
		return append(dst, '}')
	}
	dst = append(dst, `,"source_ip":`...)
	dst = jsonstr.Append(dst, r.SourceIP)
	dst = append(dst, `,"request_id":`...)
	dst = jsonstr.Append(dst, r.RequestID)
	if p := r.Principal; p != nil {
		dst = append(dst, `,"principal":{"issuer":`...)
		dst = jsonstr.Append(dst, p.Issuer)
		dst = append(dst, `,"id":`...)
		if f != nil {
			f.principal, f.p0 = true, len(dst)-start+1
		}
		dst = jsonstr.Append(dst, p.ID)
		if f != nil {
			f.p1 = len(dst) - start - 1
		}
		dst = append(dst, `,"groups":`...)
		dst = appendStrings(dst, p.Groups)
		dst = append(dst, `,"jti":`...)
		dst = jsonstr.Append(dst, p.JTI)
		dst = append(dst, `,"token_hmac":"`...)
		switch {
		case mac == nil:
			dst = jsonstr.AppendBody(dst, p.TokenHMAC)
		case p.TokenSHA256 != [32]byte{}:
			dst = mac.appendHex(dst, &p.TokenSHA256)
		}
		dst = append(dst, `"}`...)
	}
	dst = append(dst, `,"operation":`...)
	dst = jsonstr.Append(dst, r.Operation)
	dst = append(dst, `,"action":`...)
	dst = jsonstr.Append(dst, r.Action)
	dst = append(dst, `,"access":`...)
	dst = jsonstr.Append(dst, r.Access)
	dst = append(dst, `,"bucket":`...)
	if f != nil {
		f.b0 = len(dst) - start + 1
	}
	dst = jsonstr.Append(dst, r.Bucket)
	if f != nil {
		f.b1 = len(dst) - start - 1
	}
	dst = append(dst, `,"key":`...)
	if f != nil {
		f.k0 = len(dst) - start + 1
	}
	dst = jsonstr.Append(dst, r.Key)
	if f != nil {
		f.k1 = len(dst) - start - 1
	}
	if r.VersionID != "" {
		dst = append(dst, `,"version_id":`...)
		dst = jsonstr.Append(dst, r.VersionID)
	}
	if r.Prefix != nil {
		dst = append(dst, `,"prefix":`...)
		dst = jsonstr.Append(dst, *r.Prefix)
	}
	dst = append(dst, `,"region":`...)
	dst = jsonstr.Append(dst, r.Region)
	if t := r.Table; t != nil {
		dst = append(dst, `,"table":{"prefix":`...)
		dst = jsonstr.Append(dst, t.Prefix)
		dst = append(dst, `,"namespace":`...)
		dst = appendStrings(dst, t.Namespace)
		dst = append(dst, `,"name":`...)
		dst = jsonstr.Append(dst, t.Name)
		dst = append(dst, '}')
	}
	dst = append(dst, `,"role":`...)
	dst = jsonstr.Append(dst, string(r.Role))
	dst = append(dst, `,"decision":`...)
	dst = jsonstr.Append(dst, string(r.Decision))
	dst = append(dst, `,"reason":`...)
	dst = jsonstr.Append(dst, r.Reason)
	dst = append(dst, `,"status":`...)
	dst = strconv.AppendInt(dst, int64(r.Status), 10)
	dst = append(dst, `,"policy_revision":`...)
	dst = jsonstr.Append(dst, r.PolicyRevision)
	dst = append(dst, `,"eval_us":`...)
	dst = strconv.AppendInt(dst, r.EvalMicros, 10)
	if s := r.Signing; s != nil {
		dst = append(dst, `,"signing":{"access_key_id":`...)
		dst = jsonstr.Append(dst, s.AccessKeyID)
		dst = append(dst, `,"scope":`...)
		dst = jsonstr.Append(dst, s.Scope)
		dst = append(dst, `,"amz_date":`...)
		dst = jsonstr.Append(dst, s.AmzDate)
		dst = append(dst, `,"signed_headers":`...)
		dst = appendStrings(dst, s.SignedHeaders)
		dst = append(dst, `,"payload":`...)
		dst = jsonstr.Append(dst, s.Payload)
		dst = append(dst, `,"canonical_request_sha256":`...)
		dst = jsonstr.Append(dst, s.CanonicalRequestSHA256)
		dst = append(dst, `,"signature_sha256":`...)
		dst = jsonstr.Append(dst, s.SignatureSHA256)
		if s.SourceIdentity != "" {
			dst = append(dst, `,"source_identity":`...)
			dst = jsonstr.Append(dst, s.SourceIdentity)
		}
		if s.SessionName != "" {
			dst = append(dst, `,"session_name":`...)
			dst = jsonstr.Append(dst, s.SessionName)
		}
		dst = append(dst, '}')
	}
	if m := r.Mint; m != nil {
		dst = append(dst, `,"mint":{"actions":`...)
		dst = appendStrings(dst, m.Actions)
		dst = append(dst, `,"duration_s":`...)
		dst = strconv.AppendInt(dst, m.DurationSeconds, 10)
		dst = append(dst, `,"expires":`...)
		dst = jsonstr.Append(dst, m.Expires)
		dst = append(dst, `,"access_key_id":`...)
		dst = jsonstr.Append(dst, m.AccessKeyID)
		dst = append(dst, `,"source_identity":`...)
		dst = jsonstr.Append(dst, m.SourceIdentity)
		dst = append(dst, `,"session_name":`...)
		dst = jsonstr.Append(dst, m.SessionName)
		dst = append(dst, '}')
	}
	return append(dst, '}')
}

func appendStrings(dst []byte, ss []string) []byte {
	dst = append(dst, '[')
	for i, s := range ss {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = jsonstr.Append(dst, s)
	}
	return append(dst, ']')
}

// appendDetail writes the map with sorted keys, so a record has one
// encoding. Lifecycle records are rare; the sort's allocation is fine.
func appendDetail(dst []byte, m map[string]string) []byte {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sortStrings(keys)
	dst = append(dst, '{')
	for i, k := range keys {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = jsonstr.Append(dst, k)
		dst = append(dst, ':')
		dst = jsonstr.Append(dst, m[k])
	}
	return append(dst, '}')
}

// sortStrings is an insertion sort: detail maps are small, and this keeps
// the encoder free of the sort package's interface conversions.
func sortStrings(s []string) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

// tokenMAC computes HMAC-SHA256(key, token SHA-256) without allocating:
// the pads are prepared once, and both hashes run over stack buffers
// (crypto/hmac allocates its state per use or needs a pool and an
// interface call per record).
type tokenMAC struct {
	ipad, opad [sha256.BlockSize]byte
	// last is the most recent token's HMAC, hex-encoded: a scan's records
	// carry the same token thousands of times.
	last atomic.Pointer[macHex]
}

type macHex struct {
	msg [32]byte
	hex [2 * sha256.Size]byte
}

// appendHex appends the hex HMAC of msg, computed once per token in a row.
func (m *tokenMAC) appendHex(dst []byte, msg *[32]byte) []byte {
	if l := m.last.Load(); l != nil && l.msg == *msg {
		return append(dst, l.hex[:]...)
	}
	sum := m.sum(msg)
	l := &macHex{msg: *msg}
	hex.Encode(l.hex[:], sum[:])
	m.last.Store(l)
	return append(dst, l.hex[:]...)
}

func newTokenMAC(key []byte) *tokenMAC {
	if len(key) > sha256.BlockSize {
		sum := sha256.Sum256(key)
		key = sum[:]
	}
	m := &tokenMAC{}
	copy(m.ipad[:], key)
	copy(m.opad[:], key)
	for i := range m.ipad {
		m.ipad[i] ^= 0x36
		m.opad[i] ^= 0x5c
	}
	return m
}

func (m *tokenMAC) sum(msg *[32]byte) [32]byte {
	var buf [sha256.BlockSize + sha256.Size]byte
	copy(buf[:], m.ipad[:])
	copy(buf[sha256.BlockSize:], msg[:])
	inner := sha256.Sum256(buf[:])
	copy(buf[:], m.opad[:])
	copy(buf[sha256.BlockSize:], inner[:])
	return sha256.Sum256(buf[:])
}
