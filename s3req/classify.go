package s3req

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/countersign/countersign/remotesign"
)

// Options configures a Classifier.
type Options struct {
	// Endpoints is the allow-list of S3 services. At least one is required.
	Endpoints []Endpoint
	// AllowUnsafeKeys permits keys with empty, "." or ".." segments or a
	// '\'. Off by default: S3-compatible stores backed by file systems may
	// resolve them to other objects than the policy saw.
	AllowUnsafeKeys bool
	// MaxDeleteKeys caps the keys of one DeleteObjects request (S3's own
	// limit, 1000, by default).
	MaxDeleteKeys int
	// MaxDeleteBodyBytes caps the DeleteObjects XML body (default 1 MiB).
	MaxDeleteBodyBytes int
}

// Classifier turns sign requests into classified S3 requests. It is
// immutable after New and safe for concurrent use.
type Classifier struct {
	opts Options
}

// New validates the options and returns a Classifier.
func New(opts Options) (*Classifier, error) {
	if len(opts.Endpoints) == 0 {
		return nil, fmt.Errorf("s3req: at least one endpoint must be configured")
	}
	eps := make([]Endpoint, len(opts.Endpoints))
	copy(eps, opts.Endpoints)
	for i := range eps {
		if eps[i].Name == "" {
			eps[i].Name = fmt.Sprintf("endpoint-%d", i)
		}
		if err := eps[i].Validate(); err != nil {
			return nil, err
		}
	}
	opts.Endpoints = eps
	if opts.MaxDeleteKeys <= 0 {
		opts.MaxDeleteKeys = 1000
	}
	if opts.MaxDeleteBodyBytes <= 0 {
		opts.MaxDeleteBodyBytes = 1 << 20
	}
	return &Classifier{opts: opts}, nil
}

// maxKeyBytes is S3's limit on the length of an object key.
const maxKeyBytes = 1024

// maxObjectBytes is S3's limit on the size of an object (5 TiB), and so on
// any Content-Length it accepts.
const maxObjectBytes = 5 << 40

// Classify parses and checks one sign request. The returned error is an
// *Error carrying the HTTP status to answer with.
func (c *Classifier) Classify(in *remotesign.Request) (*Request, error) {
	r := new(Request)
	if err := c.ClassifyInto(r, in); err != nil {
		return nil, err
	}
	return r, nil
}

// ClassifyInto is Classify into r, which it overwrites whatever the
// outcome (r means nothing after an error): a caller that keeps its
// per-request state in one struct saves the Request's allocation.
func (c *Classifier) ClassifyInto(r *Request, in *remotesign.Request) error {
	*r = Request{Method: in.Method, Region: in.Region, Headers: in.Headers}

	scheme, rest, err := splitScheme(in.URI)
	if err != nil {
		return err
	}
	if strings.IndexByte(rest, '#') >= 0 {
		return malformed("uri must not contain a fragment")
	}
	authority, pathQuery := rest, ""
	if i := strings.IndexAny(rest, "/?"); i >= 0 {
		authority, pathQuery = rest[:i], rest[i:]
	}
	defPort := 443
	if scheme == "http" {
		defPort = 80
	}
	host, port, err := parseAuthority(authority, defPort)
	if err != nil {
		return err
	}
	r.Scheme, r.Host = scheme, authority

	rawPath, rawQuery, _ := strings.Cut(pathQuery, "?")
	if rawPath == "" {
		rawPath = "/"
	}
	if rawPath[0] != '/' {
		return malformed("uri path must start with '/'")
	}
	r.RawPath, r.RawQuery = rawPath, rawQuery

	if err := checkHeaders(in.Headers, authority); err != nil {
		return err
	}

	m, err := matchEndpoint(c.opts.Endpoints, scheme, host, port, in.Region)
	if err != nil {
		return err
	}
	r.Endpoint = m.endpoint

	if err := c.splitBucketKey(r, m, rawPath); err != nil {
		return err
	}

	q, err := parseQuery(rawQuery)
	if err != nil {
		return err
	}

	copySrc, hasCopy, err := c.parseCopySource(in.Headers)
	if err != nil {
		return err
	}

	op := classifyOperation(in.Method, r.Bucket != "", r.Key != "", hasCopy, q)
	r.Operation = op.name
	if hasCopy && op.name == OperationUnknown {
		return malformed("x-amz-copy-source is only valid on CopyObject and UploadPartCopy, and this %s is neither: its query (subresource, x-id or parameters) names no operation countersign knows", in.Method)
	}
	if hasCopy && op.name != "CopyObject" && op.name != "UploadPartCopy" {
		return malformed("x-amz-copy-source is only valid on CopyObject and UploadPartCopy, not on %s %s", in.Method, op.name)
	}

	if err := checkMultipartParams(op.name, q); err != nil {
		return err
	}

	main := Target{Operation: op.name, Action: op.action, Access: op.access, Bucket: r.Bucket, Key: r.Key, Role: "object"}
	if r.Key == "" {
		main.Role = "bucket"
	}
	if p, ok := q.get("versionId"); ok {
		// S3 refuses an empty version id; a server that took it for "no
		// version" would delete or read other than what was decided.
		if p.value == "" {
			return malformed("uri query parameter \"versionId\" is empty: name a version or leave the parameter out")
		}
		main.VersionID = p.value
	}

	if err := c.setPayloadHash(r); err != nil {
		return err
	}

	switch {
	case op.name == "DeleteObjects":
		keys, err := c.deleteTargets(r, in)
		if err != nil {
			return err
		}
		r.Targets = keys
		return nil
	case isListOperation(op.name):
		prefix := ""
		if p, ok := q.get("prefix"); ok {
			prefix = p.value
		}
		if err := c.checkPrefix(prefix); err != nil {
			return err
		}
		main.Prefix = &prefix
	}
	r.Targets = append(r.ownTarget[:0], main)
	if hasCopy {
		r.Targets = append(r.Targets, Target{
			Operation: op.name, Action: copySourceAction(copySrc.versionID), Access: AccessRead,
			Bucket: copySrc.bucket, Key: copySrc.key, VersionID: copySrc.versionID, Role: "copy-source",
		})
	}
	return nil
}

func splitScheme(uri string) (scheme, rest string, err error) {
	if uri == "" {
		return "", "", malformed("uri is empty")
	}
	switch {
	case strings.HasPrefix(uri, "https://"):
		return "https", uri[len("https://"):], nil
	case strings.HasPrefix(uri, "http://"):
		return "http", uri[len("http://"):], nil
	}
	return "", "", malformed("uri must be an absolute http:// or https:// URL (lower-case scheme)")
}

// splitBucketKey reads the bucket and key from the host and path. The path
// must be exactly the AWS canonical encoding of bucket and key — what every
// AWS SDK sends. Accepting any other spelling (%2F for '/', lower-case hex,
// unencoded reserved characters) would let two parsers split or decode the
// same bytes differently; insisting on one spelling removes the question.
func (c *Classifier) splitBucketKey(r *Request, m hostMatch, rawPath string) error {
	var rawKey string
	if m.virtual {
		if err := checkBucket(m.bucket); err != nil {
			return err
		}
		r.Bucket = m.bucket
		rawKey = rawPath[1:]
	} else {
		seg, after, hasSlash := strings.Cut(rawPath[1:], "/")
		if seg == "" {
			if hasSlash {
				return malformed("uri path has an empty bucket segment")
			}
			return nil // "/" on the service host: ListBuckets and friends
		}
		if err := checkBucket(seg); err != nil {
			return err
		}
		r.Bucket = seg
		rawKey = after
	}
	if rawKey == "" {
		return nil
	}
	key, err := percentDecode(rawKey, "uri path")
	if err != nil {
		return err
	}
	if !isAWSEscapedPath(rawKey, key) {
		return malformed("uri path is not in canonical S3 encoding: the key must be sent as %q", truncate(string(appendAWSEscapedPath(nil, key))))
	}
	if err := c.checkKey(key, "object key"); err != nil {
		return err
	}
	r.Key = key
	return nil
}

// checkMultipartParams: an uploadId names an upload and a partNumber is a
// part's number (1 to 10,000, in its one decimal spelling), or the request
// is refused. A server that takes an empty uploadId for none runs another
// operation than the one decided: Ceph RGW serves DELETE ?uploadId= as
// DeleteObject, which a grant of write (AbortMultipartUpload) must not
// reach. UploadPart without a part number is not a request S3 serves.
func checkMultipartParams(op string, q params) error {
	if p, ok := q.get("uploadId"); ok && p.value == "" {
		return malformed("uri query parameter \"uploadId\" is empty: name the upload")
	}
	p, ok := q.get("partNumber")
	if !ok {
		if op == "UploadPart" || op == "UploadPartCopy" {
			return malformed("%s needs the uri query parameter \"partNumber\"", op)
		}
		return nil
	}
	n, err := strconv.Atoi(p.value)
	if err != nil || n < 1 || n > 10000 || strconv.Itoa(n) != p.value {
		return malformed("uri query parameter \"partNumber\" is %q: a part number is 1 to 10000, in decimal without sign or leading zeros", truncate(p.value))
	}
	return nil
}

// checkKey applies the key rules to a decoded key.
func (c *Classifier) checkKey(key, what string) error {
	if key == "" {
		return malformed("%s is empty", what)
	}
	return checkKeyText(key, what, false, c.opts.AllowUnsafeKeys)
}

// checkPrefix applies the key rules to a list prefix, which may be empty and
// may end in '/' or a partial segment.
func (c *Classifier) checkPrefix(prefix string) error {
	if prefix == "" {
		return nil
	}
	return checkKeyText(prefix, "list prefix", true, c.opts.AllowUnsafeKeys)
}

// CheckPrefix applies the classifier's rules for a list prefix, unsafe
// keys refused, to a non-empty key prefix: vending applies them to the
// prefixes it mints for, so a credential never names a prefix the sign
// routes would refuse. what names the value in the error.
func CheckPrefix(prefix, what string) error {
	return checkKeyText(prefix, what, true, false)
}

// checkKeyText is the one rule every key and prefix passes (object keys,
// copy-source keys, DeleteObjects keys, list prefixes, vended prefixes):
// at most 1024 bytes of valid UTF-8 without control characters
// (checkText), and unless unsafe keys are allowed, no '\' (SeaweedFS reads
// it as '/', so wh\secret is wh/secret there), no empty, "." or ".."
// segment (a prefix may end in an empty one), and no segment naming
// SeaweedFS's folders of versions or uploads (a prefix may end in a
// partial one).
func checkKeyText(s, what string, prefix, unsafe bool) error {
	if len(s) > maxKeyBytes {
		return malformed("%s is longer than %d bytes", what, maxKeyBytes)
	}
	if err := checkText(s, what); err != nil {
		return err
	}
	if unsafe {
		return nil
	}
	if strings.IndexByte(s, '\\') >= 0 {
		return malformed("%s %q contains '\\', which some servers (SeaweedFS) read as '/': the key decided would not be the key read", what, truncate(s))
	}
	for rest := s; ; {
		seg, after, more := strings.Cut(rest, "/")
		switch {
		case seg == "" && (more || !prefix):
			return malformed("%s %q has an empty path segment", what, truncate(s))
		case seg == "." || seg == "..":
			return malformed("%s %q has a %q path segment", what, truncate(s), seg)
		case strings.HasSuffix(seg, versionsFolder) && (more || !prefix):
			return malformed("%s %q has a segment ending in %q, the folder where SeaweedFS keeps an object's versions: a key under it reads or removes a version of another object, without the version action", what, truncate(s), versionsFolder)
		case rest == s && isInternalFolder(seg):
			return malformed("%s %q starts with %q, a folder where an S3 server keeps its own files (SeaweedFS's and versitygw's multipart upload parts): a key under it reads or writes another object's upload", what, truncate(s), seg)
		}
		if !more {
			return nil
		}
		rest = after
	}
}

// SeaweedFS stores an object's versions as the files of a folder named
// after the key with this suffix, and serves them as keys of their own:
// GET wh/t.parquet.versions/v_<id> answered that version of wh/t.parquet
// as a GetObject, so a policy's exact key and its version actions did
// not hold.
const versionsFolder = ".versions"

// isInternalFolder reports a bucket's top-level folder where a server
// keeps its own files and serves them as keys: SeaweedFS's ".uploads",
// versitygw's (posix) ".sgwtmp", where GET
// .sgwtmp/multipart/<sha256 of the key>/<upload id>/1 answered the
// in-progress part of another key's upload.
func isInternalFolder(seg string) bool {
	return seg == ".uploads" || seg == ".sgwtmp"
}

// CheckBucket reports whether name is a bucket name by S3's naming rules,
// as the classifier applies them to requests; vending applies them to the
// locations it mints for.
func CheckBucket(name string) error { return checkBucket(name) }

// checkBucket enforces S3's bucket naming rules: 3-63 characters of
// lower-case letters, digits, '.' and '-', starting and ending with a letter
// or digit, no "..", and not an IP address.
func checkBucket(b string) error {
	if len(b) < 3 || len(b) > 63 {
		return malformed("bucket name %q must be 3 to 63 characters", truncate(b))
	}
	for i := 0; i < len(b); i++ {
		c := b[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '.' || c == '-') {
			return malformed("bucket name %q has an invalid character", truncate(b))
		}
	}
	if !isAlnum(b[0]) || !isAlnum(b[len(b)-1]) || strings.Contains(b, "..") {
		return malformed("bucket name %q is not a valid S3 bucket name", truncate(b))
	}
	if isIPAddr(b) {
		return malformed("bucket name %q must not be an IP address", truncate(b))
	}
	for _, p := range reservedBucketPrefixes {
		if strings.HasPrefix(b, p) {
			return malformed("bucket name %q starts with %q, which S3 reserves", truncate(b), p)
		}
	}
	for _, sfx := range reservedBucketSuffixes {
		if strings.HasSuffix(b, sfx) {
			return malformed("bucket name %q ends with %q, which S3 reserves for aliases of access points and other resources: name the bucket itself", truncate(b), sfx)
		}
	}
	return nil
}

// S3 reserves these name forms (its bucket naming rules). The suffixes
// are aliases (an access point's, an Object Lambda access point's, a
// Multi-Region Access Point's): a request to one reaches another bucket
// than the one the policy sees named. Directory buckets ("--x-s3") are
// buckets and stay valid.
var (
	reservedBucketPrefixes = [...]string{"xn--", "sthree-", "amzn-s3-demo-"}
	reservedBucketSuffixes = [...]string{"-s3alias", "--ol-s3", ".mrap", "--table-s3"}
)

func isAlnum(c byte) bool { return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' }

// checkHeaders rejects headers that would make the described request differ
// from the one that gets signed.
func checkHeaders(h remotesign.Headers, authority string) error {
	for i := range h {
		name := h[i].Name
		if isRenameSourceHeader(name) {
			return malformed("header %s is refused: RenameObject moves the object x-amz-rename-source names (reads it, then deletes it), and countersign decides only the destination, so the source would be read and deleted without a decision; copy (x-amz-copy-source) and delete instead", truncate(name))
		}
		if meaningHeader(name) {
			if _, err := meaningValue(h, name); err != nil {
				return err
			}
		} else if isAmzHeader(name) {
			if err := checkSignedSpelling(h[i]); err != nil {
				return err
			}
		}
		switch {
		case strings.EqualFold(name, "Host"):
			if len(h[i].Values) != 1 || h[i].Values[0] != authority {
				return malformed("header Host must equal the uri's host %q", truncate(authority))
			}
		case strings.EqualFold(name, "Content-Length"):
			// One spelling, as SigV4 signs it ("010" is signed as 10, and
			// a server that hashes the header as sent refuses it): decimal
			// without sign or leading zeros, within S3's 5 TiB.
			v, _ := h.Get(name)
			n, err := strconv.ParseUint(v, 10, 63)
			if err != nil || (len(v) > 1 && v[0] == '0') || n > maxObjectBytes { // ParseUint takes no sign
				return malformed("header Content-Length %q is not a length: decimal without sign or leading zeros, at most %d", truncate(v), uint64(maxObjectBytes))
			}
		case strings.EqualFold(name, "x-amz-content-sha256"):
			v, ok := h.Get(name)
			if !ok {
				return malformed("header x-amz-content-sha256 must have exactly one value")
			}
			if !validContentSHA256(v) {
				return malformed("header x-amz-content-sha256 %q is not supported: use a hex SHA-256, UNSIGNED-PAYLOAD or STREAMING-UNSIGNED-PAYLOAD-TRAILER", truncate(v))
			}
		}
	}
	return nil
}

// isRenameSourceHeader reports x-amz-rename-source and its conditions
// (x-amz-rename-source-if-match, ...). The header names a second object,
// like x-amz-copy-source, and SeaweedFS executes RenameObject with it: the
// object it names is read into the destination and deleted. Only the copy
// source is a second object the classifier decides, so every header that
// names another is refused.
func isRenameSourceHeader(name string) bool {
	const p = "x-amz-rename-source"
	return len(name) >= len(p) && strings.EqualFold(name[:len(p)], p)
}

// validContentSHA256 lists the payload modes a remote signer can support.
// Signed streaming modes need per-chunk signatures, which only the key
// holder can compute, so they are refused.
func validContentSHA256(v string) bool {
	switch v {
	case "UNSIGNED-PAYLOAD", "STREAMING-UNSIGNED-PAYLOAD-TRAILER":
		return true
	}
	return isLowerHex(v, 64)
}

func isLowerHex(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// EmptySHA256 is the hex SHA-256 of an empty payload.
const EmptySHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

// setPayloadHash keeps the client's x-amz-content-sha256 or adds one: S3
// requires the header. A client that declares Content-Length: 0 gets the
// empty payload's hash, because SigV4 signers sign content-length only when
// it is positive: with UNSIGNED-PAYLOAD the holder of a signed empty PUT
// could send a body of any length, with the empty hash S3 refuses any
// body. Otherwise UNSIGNED-PAYLOAD: the client sends the body itself, so
// countersign cannot hash it. DeleteObjects overrides this.
func (c *Classifier) setPayloadHash(r *Request) error {
	if v, ok := r.Headers.Get("x-amz-content-sha256"); ok {
		r.ContentSHA256 = v
		return nil
	}
	r.ContentSHA256 = "UNSIGNED-PAYLOAD"
	if v, ok := r.Headers.Get("Content-Length"); ok && isZeroLength(v) {
		r.ContentSHA256 = EmptySHA256
	}
	r.AddContentSHA256 = true
	return nil
}

// isZeroLength reports whether a Content-Length value is a length of zero
// (its one spelling: checkHeaders refuses "00").
func isZeroLength(v string) bool { return v == "0" }

type objectRef struct {
	bucket, key, versionID string
}

// parseCopySource reads x-amz-copy-source: a copy is a read of another
// object, and that read must be authorized like any other. The one form
// accepted is what the SDKs send: an optional leading '/' (SDK for Java
// 1.x sends one, 2.x and boto3 do not; every server drops it), the
// bucket, '/', the key in AWS's canonical percent-encoding, and
// optionally the literal suffix "?versionId=" with the version in the
// same encoding. Servers do not agree on the order of decoding and
// splitting (versitygw decodes the whole value, then cuts at
// "?versionId="; MinIO decodes it, then parses it as a URL, decoding
// again; SeaweedFS splits at the raw '?'), so a decoded key or version
// holding a byte any of them may read as syntax after decoding is refused
// (copySourceKeyByte, copySourceVersionByte): what every server reads is
// then what was decided.
func (c *Classifier) parseCopySource(h remotesign.Headers) (objectRef, bool, error) {
	if !h.Has("x-amz-copy-source") {
		if h.Has("x-amz-copy-source-range") {
			return objectRef{}, false, malformed("header x-amz-copy-source-range requires x-amz-copy-source")
		}
		return objectRef{}, false, nil
	}
	// One value of printable ASCII without space, tab or comma
	// (checkHeaders, meaningValue): SigV4 signs the value trimmed,
	// collapsed and comma-joined, which HTTP would let a holder re-spell.
	v, err := meaningValue(h, "x-amz-copy-source")
	if err != nil {
		return objectRef{}, false, err
	}
	if strings.HasPrefix(v, "arn:") {
		return objectRef{}, false, malformed("header x-amz-copy-source: access point ARNs are not supported")
	}
	path, query, hasQuery := strings.Cut(v, "?")
	var ref objectRef
	if hasQuery {
		rawVersion, ok := strings.CutPrefix(query, "versionId=")
		if !ok || rawVersion == "" || strings.ContainsAny(rawVersion, "&=") {
			return objectRef{}, false, malformed("header x-amz-copy-source %q may only carry ?versionId= and a version", truncate(v))
		}
		version, err := percentDecode(rawVersion, "header x-amz-copy-source version")
		if err != nil {
			return objectRef{}, false, err
		}
		if !isAWSEscapedPath(rawVersion, version) {
			return objectRef{}, false, malformed("header x-amz-copy-source's version is not in canonical encoding: send ?versionId=%s", truncate(string(appendAWSEscapedPath(nil, version))))
		}
		for i := 0; i < len(version); i++ {
			if !copySourceVersionByte(version[i]) {
				return objectRef{}, false, malformed("header x-amz-copy-source %q: the version %q contains %q; a copy source's version id may hold only letters, digits and -._~/=", truncate(v), truncate(version), version[i])
			}
		}
		ref.versionID = version
	}
	path = strings.TrimPrefix(path, "/")
	bucket, rawKey, ok := strings.Cut(path, "/")
	if !ok || rawKey == "" {
		return objectRef{}, false, malformed("header x-amz-copy-source must be bucket/key")
	}
	if err := checkBucket(bucket); err != nil {
		return objectRef{}, false, malformed("header x-amz-copy-source: %v", err)
	}
	key, err := percentDecode(rawKey, "header x-amz-copy-source key")
	if err != nil {
		return objectRef{}, false, err
	}
	if err := c.checkKey(key, "copy source key"); err != nil {
		return objectRef{}, false, err
	}
	// One spelling, as for the path: what the server decodes is then
	// what was decided, whatever its decoder does with other spellings.
	if !isAWSEscapedPath(rawKey, key) {
		return objectRef{}, false, malformed("header x-amz-copy-source is not in canonical S3 encoding: the key must be sent as %q", truncate(string(appendAWSEscapedPath(nil, key))))
	}
	for i := 0; i < len(key); i++ {
		if !copySourceKeyByte(key[i]) {
			return objectRef{}, false, malformed("header x-amz-copy-source %q: the key %q contains %q, which a server that decodes the copy source before splitting it may read as syntax (query, fragment, second escape, separator, space); a copy source's key may hold only letters, digits, non-ASCII and -._~/!$'()*,:=@", truncate(v), truncate(key), key[i])
		}
	}
	ref.bucket, ref.key = bucket, key
	return ref, true, nil
}

// copySourceKeyByte is the allow-list of a copy source's decoded key
// bytes (C0, DEL, C1 and invalid UTF-8 are checkKey's): letters, digits,
// -._~ and '/', non-ASCII, and the ASCII punctuation no server reads as
// syntax once decoded. Out are '?' and '#' (a query or fragment to a
// server that decodes before it splits: versitygw, MinIO), '%' (a second
// escape to one that decodes twice: MinIO's url.Parse), '+' and space
// (space, or trimmed, to some decoders), '&' and ';' (parameter
// separators), '\' (a '/' to SeaweedFS) and the rest of the ASCII that
// URL parsers refuse or normalize ("<>[]^`{|}).
func copySourceKeyByte(c byte) bool {
	if unreserved(c) || c >= 0x80 {
		return true
	}
	switch c {
	case '/', '!', '$', '\'', '(', ')', '*', ',', ':', '=', '@':
		return true
	}
	return false
}

// copySourceVersionByte is the allow-list of a copy source's decoded
// version id: what S3 and the S3-compatible stores mint, letters, digits,
// -._~ and '/' and '='. Not '+', which a server that decodes the value
// and then parses its query (decoding again) reads as a space.
func copySourceVersionByte(c byte) bool {
	return unreserved(c) || c == '/' || c == '='
}
