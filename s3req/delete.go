package s3req

import (
	"bytes"
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/xml"
	"errors"
	"hash"
	"hash/crc32"
	"hash/crc64"
	"io"
	"strconv"
	"strings"

	"github.com/countersign/countersign/remotesign"
)

// DeleteKey is one object named in a DeleteObjects body.
type DeleteKey struct {
	Key       string
	VersionID string
}

// ParseDeleteBody parses an S3 DeleteObjects XML body strictly: root
// <Delete>, children <Object> (with <Key> and optional <VersionId>) and an
// optional <Quiet>. Anything else — unknown elements, directives, entities,
// text outside elements, more than maxKeys objects — is an error, because a
// lenient parser here could disagree with S3's about which keys are deleted.
func ParseDeleteBody(body []byte, maxKeys int) ([]DeleteKey, error) {
	if err := checkCharRefs(body); err != nil {
		return nil, err
	}
	d := xml.NewDecoder(bytes.NewReader(body))
	d.Strict = true
	d.Entity = nil
	var keys []DeleteKey
	var hasKey []bool // per object: did it have a <Key>? (an empty <Key/> is still a Key)
	depth := 0
	var cur *DeleteKey
	var field string // "Key", "VersionId" or "Quiet" while inside one
	var text strings.Builder
	seenRoot, seenQuiet := false, false
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, malformed("DeleteObjects body is not valid XML: %v", err)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			if t.Name.Space != "" && t.Name.Space != "http://s3.amazonaws.com/doc/2006-03-01/" {
				return nil, malformed("DeleteObjects body: unexpected XML namespace %q", truncate(t.Name.Space))
			}
			for _, a := range t.Attr {
				if a.Name.Local != "xmlns" {
					return nil, malformed("DeleteObjects body: unexpected attribute %q", truncate(a.Name.Local))
				}
			}
			depth++
			name := t.Name.Local
			switch {
			case depth == 1 && name == "Delete" && !seenRoot:
				seenRoot = true
			case depth == 2 && name == "Object":
				if len(keys) == maxKeys {
					return nil, malformed("DeleteObjects body names more than %d keys", maxKeys)
				}
				keys = append(keys, DeleteKey{})
				hasKey = append(hasKey, false)
				cur = &keys[len(keys)-1]
			case depth == 2 && name == "Quiet" && !seenQuiet:
				seenQuiet = true
				field = name
				text.Reset()
			case depth == 3 && cur != nil && (name == "Key" || name == "VersionId"):
				field = name
				text.Reset()
			case depth == 3 && cur != nil && (name == "ETag" || name == "LastModifiedTime" || name == "Size"):
				// Conditional-delete fields: they narrow a delete, never widen it.
				field = "ignore"
			default:
				return nil, malformed("DeleteObjects body: unexpected element <%s>", truncate(name))
			}
		case xml.EndElement:
			switch {
			case depth == 3 && field == "Key":
				if hasKey[len(keys)-1] {
					return nil, malformed("DeleteObjects body: an <Object> has more than one <Key>")
				}
				hasKey[len(keys)-1] = true
				cur.Key = text.String()
			case depth == 3 && field == "VersionId":
				if cur.VersionID != "" {
					return nil, malformed("DeleteObjects body: an <Object> has more than one <VersionId>")
				}
				cur.VersionID = text.String()
				if cur.VersionID == "" {
					return nil, malformed("DeleteObjects body: empty <VersionId>")
				}
			case depth == 2 && field == "Quiet":
				if v := text.String(); v != "true" && v != "false" {
					return nil, malformed("DeleteObjects body: <Quiet> must be true or false")
				}
			case depth == 2 && t.Name.Local == "Object":
				if !hasKey[len(keys)-1] {
					return nil, malformed("DeleteObjects body: an <Object> has no <Key>")
				}
				cur = nil
			}
			if depth == 3 || (depth == 2 && field == "Quiet") {
				field = ""
			}
			depth--
		case xml.CharData:
			switch {
			case field == "Key" || field == "VersionId" || field == "Quiet":
				text.Write(t)
			case field == "ignore":
			case len(bytes.TrimSpace(t)) != 0:
				return nil, malformed("DeleteObjects body: unexpected text outside an element")
			}
		case xml.Directive:
			return nil, malformed("DeleteObjects body must not contain XML directives (DOCTYPE/ENTITY)")
		case xml.ProcInst:
			if t.Target != "xml" {
				return nil, malformed("DeleteObjects body: unexpected processing instruction")
			}
		case xml.Comment:
		}
	}
	if !seenRoot {
		return nil, malformed("DeleteObjects body has no <Delete> element")
	}
	if len(keys) == 0 {
		return nil, malformed("DeleteObjects body names no keys")
	}
	return keys, nil
}

// checkCharRefs refuses a body with a character reference to what is not
// an XML character (XML 1.0's Char: a surrogate, U+FFFE, U+FFFF, NUL and
// the other C0 controls but tab, LF and CR, or beyond U+10FFFF), or one
// that is not a reference at all. encoding/xml decodes "&#xD800;" to
// U+FFFD where a conforming parser refuses the document: the key decided
// would not be the key any server deletes. The scan covers the whole body
// (CDATA and comments too, where "&#" is literal text: refusing those is
// only stricter).
func checkCharRefs(body []byte) error {
	for i := 0; ; {
		j := bytes.Index(body[i:], []byte("&#"))
		if j < 0 {
			return nil
		}
		i += j + 2
		end := bytes.IndexByte(body[i:], ';')
		if end < 0 {
			return malformed("DeleteObjects body is not valid XML: an unterminated character reference")
		}
		ref := body[i : i+end]
		i += end + 1
		base, digits := 10, ref
		if len(ref) > 0 && ref[0] == 'x' {
			base, digits = 16, ref[1:]
		}
		n, err := strconv.ParseUint(string(digits), base, 32)
		if err != nil || len(digits) == 0 || digits[0] == '+' || digits[0] == '-' {
			return malformed("DeleteObjects body is not valid XML: %q is not a character reference", truncate("&#"+string(ref)+";"))
		}
		if !isXMLChar(n) {
			return malformed("DeleteObjects body is not valid XML: the character reference %q names U+%04X, which is not an XML character (a surrogate, U+FFFE, U+FFFF, a control other than tab, LF and CR, or beyond U+10FFFF)", truncate("&#"+string(ref)+";"), n)
		}
	}
}

// isXMLChar is XML 1.0's Char production.
func isXMLChar(r uint64) bool {
	return r == 0x9 || r == 0xA || r == 0xD ||
		r >= 0x20 && r <= 0xD7FF ||
		r >= 0xE000 && r <= 0xFFFD ||
		r >= 0x10000 && r <= 0x10FFFF
}

// deleteTargets parses and binds a DeleteObjects body. Every key is its own
// target. The body must be bound to the signature by SHA-256, the only
// binding a holder of the signature cannot satisfy with a second body:
// CRCs are linear (a same-length body deleting other keys with the same
// CRC32/CRC32C/CRC64NVME takes microseconds to compute) and MD5 and SHA-1
// have practical collisions. So Content-MD5 and x-amz-checksum-* headers
// are checked against the body but never count as binding it; the payload
// hash does (countersign signs the body's SHA-256 when the client sent no
// x-amz-content-sha256), or a matching x-amz-checksum-sha256.
func (c *Classifier) deleteTargets(r *Request, in *remotesign.Request) ([]Target, error) {
	if !in.HasBody || in.Body == "" {
		return nil, malformed("DeleteObjects requires the request body in the sign request's \"body\" field")
	}
	if len(in.Body) > c.opts.MaxDeleteBodyBytes {
		return nil, malformed("DeleteObjects body is larger than %d bytes", c.opts.MaxDeleteBodyBytes)
	}
	body := []byte(in.Body)
	if v, ok := r.Headers.Get("Content-Length"); ok && v != strconv.Itoa(len(body)) {
		// The length the client will send is not the body decided on.
		return nil, malformed("DeleteObjects Content-Length %q is not the body's length %d", truncate(v), len(body))
	}
	if err := bindDeleteBody(r, body); err != nil {
		return nil, err
	}
	keys, err := ParseDeleteBody(body, c.opts.MaxDeleteKeys)
	if err != nil {
		return nil, err
	}
	targets := make([]Target, 0, len(keys))
	for _, k := range keys {
		if err := c.checkKey(k.Key, "DeleteObjects key"); err != nil {
			return nil, err
		}
		action, access := deleteAction(k.VersionID)
		targets = append(targets, Target{
			Operation: "DeleteObjects", Action: action, Access: access,
			Bucket: r.Bucket, Key: k.Key, VersionID: k.VersionID, Role: "delete-key",
		})
	}
	return targets, nil
}

// errDeleteUnbound says what to send instead of a payload hash that does
// not bind the body.
const errDeleteUnbound = "DeleteObjects body is not bound to the signature: x-amz-content-sha256 %q lets another body through; " +
	"omit x-amz-content-sha256 (countersign then signs the body's SHA-256), send the body's hex SHA-256, " +
	"or send x-amz-checksum-sha256 (Content-MD5 and CRC checksums do not bind a body)"

// bindDeleteBody checks every body-binding header the client sent against
// the body and makes sure the signature binds the body by SHA-256.
func bindDeleteBody(r *Request, body []byte) error {
	hasSHA256Checksum, err := checkBodyChecksums(r, body)
	if err != nil {
		return err
	}
	sum := sha256.Sum256(body)
	hexSum := hex.EncodeToString(sum[:])
	switch {
	case r.AddContentSHA256:
		// The client sent no payload hash: sign the body's.
		r.ContentSHA256 = hexSum
	case isLowerHex(r.ContentSHA256, 64):
		if r.ContentSHA256 != hexSum {
			return malformed("header x-amz-content-sha256 does not match the DeleteObjects body")
		}
	case r.ContentSHA256 == "UNSIGNED-PAYLOAD" && hasSHA256Checksum:
		// The signed x-amz-checksum-sha256 binds the body; S3 checks it.
	default:
		// UNSIGNED-PAYLOAD without a SHA-256 checksum, or a streaming
		// mode (the body countersign saw would not be the one sent).
		return malformed(errDeleteUnbound, truncate(r.ContentSHA256))
	}
	return nil
}

// checkBodyChecksums verifies every Content-MD5 and x-amz-checksum-* header
// the client sent against the body: a mismatch is a confused client (S3
// would refuse it anyway). It reports whether a matching
// x-amz-checksum-sha256 was among them.
func checkBodyChecksums(r *Request, body []byte) (hasSHA256 bool, err error) {
	if r.Headers.Has("Content-MD5") {
		v, err := meaningValue(r.Headers, "Content-MD5")
		if err != nil {
			return false, err
		}
		sum := md5.Sum(body)
		if v != base64.StdEncoding.EncodeToString(sum[:]) {
			return false, malformed("header Content-MD5 does not match the DeleteObjects body")
		}
	}
	for _, alg := range checksumAlgorithms {
		name := "x-amz-checksum-" + alg.name
		if !r.Headers.Has(name) {
			continue
		}
		v, err := meaningValue(r.Headers, name)
		if err != nil {
			return false, err
		}
		h := alg.new()
		h.Write(body)
		if v != base64.StdEncoding.EncodeToString(h.Sum(nil)) {
			return false, malformed("header %s does not match the DeleteObjects body", name)
		}
		if alg.name == "sha256" {
			hasSHA256 = true
		}
	}
	return hasSHA256, nil
}

var checksumAlgorithms = [...]struct {
	name string
	new  func() hash.Hash
}{
	{"crc32", func() hash.Hash { return crc32.NewIEEE() }},
	{"crc32c", func() hash.Hash { return crc32.New(crc32.MakeTable(crc32.Castagnoli)) }},
	{"crc64nvme", func() hash.Hash { return crc64.New(crc64nvmeTable) }},
	{"sha1", sha1.New},
	{"sha256", sha256.New},
}

// crc64nvmeTable is CRC-64/NVME (reflected polynomial 0x9a6c9329ac4bc9b5);
// Go's crc64 applies the same init and final inversion.
var crc64nvmeTable = crc64.MakeTable(0x9a6c9329ac4bc9b5)
