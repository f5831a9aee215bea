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

// deleteTargets parses and binds a DeleteObjects body. Every key is its own
// target. The body must be bound to the signature — by a Content-MD5 or
// x-amz-checksum-* header the client sent, or by a payload hash — after
// checking that it matches the body being authorized. Otherwise a caller
// could get "delete a.parquet" signed and send a body that deletes
// everything.
func (c *Classifier) deleteTargets(r *Request, in *remotesign.Request) ([]Target, error) {
	if !in.HasBody || in.Body == "" {
		return nil, malformed("DeleteObjects requires the request body in the sign request's \"body\" field")
	}
	if len(in.Body) > c.opts.MaxDeleteBodyBytes {
		return nil, malformed("DeleteObjects body is larger than %d bytes", c.opts.MaxDeleteBodyBytes)
	}
	body := []byte(in.Body)
	bound, err := checkBodyBinding(r, body)
	if err != nil {
		return nil, err
	}
	if !bound {
		if !r.AddContentSHA256 {
			return nil, malformed("DeleteObjects body is not bound to the signature: send Content-MD5 or an x-amz-checksum-* header, or let countersign set x-amz-content-sha256")
		}
		sum := sha256.Sum256(body)
		r.ContentSHA256 = hex.EncodeToString(sum[:])
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
		targets = append(targets, Target{
			Operation: "DeleteObjects", Action: "s3:DeleteObject", Access: AccessDelete,
			Bucket: r.Bucket, Key: k.Key, VersionID: k.VersionID, Role: "delete-key",
		})
	}
	return targets, nil
}

// checkBodyBinding verifies every body-binding header the client sent
// against the body. It reports whether at least one binds it.
func checkBodyBinding(r *Request, body []byte) (bool, error) {
	bound := false
	if v, ok := r.Headers.Get("Content-MD5"); ok {
		sum := md5.Sum(body)
		if v != base64.StdEncoding.EncodeToString(sum[:]) {
			return false, malformed("header Content-MD5 does not match the DeleteObjects body")
		}
		bound = true
	} else if r.Headers.Has("Content-MD5") {
		return false, malformed("header Content-MD5 must have exactly one value")
	}
	for _, alg := range checksumAlgorithms {
		name := "x-amz-checksum-" + alg.name
		if !r.Headers.Has(name) {
			continue
		}
		v, ok := r.Headers.Get(name)
		if !ok {
			return false, malformed("header %s must have exactly one value", name)
		}
		h := alg.new()
		h.Write(body)
		if v != base64.StdEncoding.EncodeToString(h.Sum(nil)) {
			return false, malformed("header %s does not match the DeleteObjects body", name)
		}
		bound = true
	}
	if isLowerHex(r.ContentSHA256, 64) {
		sum := sha256.Sum256(body)
		if r.ContentSHA256 != hex.EncodeToString(sum[:]) {
			return false, malformed("header x-amz-content-sha256 does not match the DeleteObjects body")
		}
		bound = true
	}
	return bound, nil
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
