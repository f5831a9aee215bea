// Package bench is countersign's load generator: it replays the sign
// requests of an Iceberg scan (and optionally writes and deletes) against a
// running countersign, the way Iceberg's Java S3V4RestSignerClient sends
// them, and measures throughput, latency, scan completion time and the
// server's own stage timings (scraped from /metrics).
//
// The pieces: a Workload describes the scan and NewPlan turns it into a
// deterministic list of sign requests (Plan); Run drives one target with a
// closed loop of concurrent connections (fasthttp client) and returns a
// RunReport; Histogram, Scrape and Report do the measuring and the
// printing. cmd/countersign's "bench" command wires them from flags.
package bench

import (
	"crypto/md5"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"net/url"
	"strconv"
	"strings"

	"github.com/countersign/countersign/internal/jsonstr"
)

// Kind is the S3 operation a sign request describes.
type Kind uint8

// The S3 operations a plan can contain, as Iceberg's S3FileIO issues them.
const (
	KindFooter            Kind = iota // GetObject, Range: bytes=-N (Parquet footer)
	KindRead                          // GetObject, Range: bytes=a-b (a column chunk)
	KindHead                          // HeadObject (file length / existence)
	KindCreateMultipart               // POST key?uploads
	KindUploadPart                    // PUT key?partNumber=N&uploadId=U
	KindCompleteMultipart             // POST key?uploadId=U
	KindDeleteObjects                 // POST bucket?delete, XML body bound by Content-MD5
)

var kindNames = [...]string{"footer", "read", "head", "create-multipart", "upload-part", "complete-multipart", "delete-objects"}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "kind-" + strconv.Itoa(int(k))
}

// Java SDK v2 header values as S3FileIO sends them at signing time (the
// remote signer replaces the SDK's signer, so the SDK has not added
// x-amz-content-sha256, X-Amz-Date or Host yet).
const (
	// JavaUserAgent is the User-Agent of Iceberg's S3FileIO (AWS SDK for Java v2).
	JavaUserAgent = "aws-sdk-java/2.29.52 Linux/6.8.0 Java/17.0.13 vendor/Eclipse_Adoptium io/sync http/Apache cfg/retry-mode/legacy"
	// JavaSDKRequest is amz-sdk-request on a first attempt (legacy retry mode).
	JavaSDKRequest = "attempt=1; max=4"
	// IcebergClientVersion is what Iceberg's REST HTTPClient sends as
	// X-Client-Version on its calls to the signer.
	IcebergClientVersion = "Apache Iceberg 1.10.0 (commit 2114bf631e49af532d66e2ce148ee49dd1dd1f1f)"

	deleteXMLHead = `<?xml version="1.0" encoding="UTF-8"?><Delete xmlns="http://s3.amazonaws.com/doc/2006-03-01/">`
	deleteXMLTail = `</Delete>`
)

// Workload describes the simulated Iceberg job. The zero value is not
// valid; start from DefaultWorkload.
type Workload struct {
	// Endpoint is the S3 endpoint the signed requests are for, as the
	// engine's s3.endpoint: scheme://host[:port]. countersign must have it
	// in its endpoint allow-list.
	Endpoint string `json:"endpoint"`
	// PathStyle addresses buckets in the path (s3.path-style-access=true);
	// otherwise as a sub-domain of the endpoint host.
	PathStyle bool   `json:"path_style"`
	Region    string `json:"region"`
	Bucket    string `json:"bucket"`
	// Warehouse and Namespace make the table locations:
	// s3://Bucket/Warehouse/Namespace/t<i>/ for i < Tables.
	Warehouse string `json:"warehouse"`
	Namespace string `json:"namespace"`
	Tables    int    `json:"tables"`
	// Files is the number of data files one scan reads, spread over the
	// tables round-robin.
	Files int `json:"files"`
	// Partitions, when > 0, puts data files under data/day=YYYY-MM-DD/
	// (Hive-style partition directories, whose "=" is percent-encoded in the
	// URI as the Java SDK does).
	Partitions int `json:"partitions"`
	// Per data file: HeadsPerFile HEADs, one footer read, ReadsPerFile
	// ranged column reads.
	HeadsPerFile int `json:"heads_per_file"`
	ReadsPerFile int `json:"reads_per_file"`
	// Per scan: Writes multipart uploads of PartsPerWrite parts each
	// (CreateMultipartUpload, UploadPart..., CompleteMultipartUpload), and
	// Deletes DeleteObjects requests of KeysPerDelete keys each.
	Writes        int `json:"writes"`
	PartsPerWrite int `json:"parts_per_write"`
	Deletes       int `json:"deletes"`
	KeysPerDelete int `json:"keys_per_delete"`
	// ContentSHA256 adds "x-amz-content-sha256: UNSIGNED-PAYLOAD" to every
	// request (the body's SHA-256 to DeleteObjects), as some SDK versions do; S3FileIO's default client sends none
	// and countersign adds it.
	ContentSHA256 bool `json:"content_sha256"`
	// Route is "legacy" (POST /v1/aws/s3/sign) or "table" (Iceberg 1.11:
	// POST /v1/{prefix}/namespaces/{ns}/tables/{table}/sign).
	Route string `json:"route"`
	// CatalogPrefix is the {prefix} of the per-table route ("" for none).
	CatalogPrefix string `json:"catalog_prefix,omitempty"`
	// Principals is how many callers share the work: data file i is read
	// by principal i % Principals (tokens are assigned the same way).
	Principals int `json:"principals"`
	// Seed makes file names, sizes and ranges reproducible.
	Seed uint64 `json:"seed"`
}

// DefaultWorkload is a 20,000-file scan of ten tables in bucket "lake",
// one footer and one column read per file (40,000 signatures), against
// serve -dev's S3 endpoint, path-style.
func DefaultWorkload() Workload {
	return Workload{
		Endpoint:      "http://127.0.0.1:7070",
		PathStyle:     true,
		Region:        "us-east-1",
		Bucket:        "lake",
		Warehouse:     "wh",
		Namespace:     "db",
		Tables:        10,
		Files:         20000,
		ReadsPerFile:  1,
		PartsPerWrite: 2,
		KeysPerDelete: 250, // S3FileIO's default s3.delete.batch-size
		Route:         "legacy",
		CatalogPrefix: "prod",
		Principals:    1,
		Seed:          1,
	}
}

// Header is one request header as the Java client lists it.
type Header struct {
	Name  string
	Value string
}

// SignRequest is one RemoteSignRequest as the Java client sends it, plus
// where it is sent and by whom.
type SignRequest struct {
	// Path is the sign route, e.g. /v1/aws/s3/sign.
	Path string
	// Principal indexes the caller's token.
	Principal int
	Kind      Kind
	// Objects is the number of per-object decisions the request asks for
	// (the keys of a DeleteObjects, otherwise 1).
	Objects int

	Region  string
	Method  string
	URI     string
	Headers []Header // sorted by name, case-insensitively (Java's TreeMap)
	Body    string   // DeleteObjects only
}

// Plan is a workload turned into the sign requests of one scan, in the
// order an engine would issue them. Plans are immutable and safe for
// concurrent use.
type Plan struct {
	w         Workload
	files     []dataFile
	ops       []op
	units     []int32 // where each unit of ops starts (see Units)
	writes    []write
	dels      []deleteOp
	routes    []string // per table
	bucketURI string
	objects   int64 // decisions per scan
}

type dataFile struct {
	table int
	uri   string
	key   string
	size  int64
}

type op struct {
	kind  Kind
	index int32  // file, write or delete index
	part  int32  // part number (upload-part)
	rng   string // Range value (footer, read)
}

type write struct {
	table    int
	uri      string
	uploadID string
	partSize int64
	complete int // CompleteMultipartUpload body length
}

type deleteOp struct {
	table int
	keys  int
	body  string
	md5   string
	sha   string // hex SHA-256 of body
}

// NewPlan checks w and builds the requests of one scan.
func NewPlan(w Workload) (*Plan, error) {
	if err := w.validate(); err != nil {
		return nil, err
	}
	ep, err := url.Parse(w.Endpoint)
	if err != nil {
		return nil, fmt.Errorf("bench: endpoint: %w", err)
	}
	p := &Plan{w: w}
	base := ep.Scheme + "://" + ep.Host
	if !w.PathStyle {
		base = ep.Scheme + "://" + w.Bucket + "." + ep.Host
	}
	if w.PathStyle {
		p.bucketURI = base + "/" + escapePath(w.Bucket)
	} else {
		p.bucketURI = base + "/"
	}
	objectURI := func(key string) string {
		if w.PathStyle {
			return p.bucketURI + "/" + escapePath(key)
		}
		return p.bucketURI + escapePath(key)
	}

	rng := rand.New(rand.NewPCG(w.Seed, 0x636f756e74657273))
	for t := 0; t < w.Tables; t++ {
		p.routes = append(p.routes, signRoute(w, t))
	}
	p.files = make([]dataFile, w.Files)
	for i := range p.files {
		t := i % w.Tables
		dir := w.TableKey(t) + "data/"
		if w.Partitions > 0 {
			day := i / w.Tables % w.Partitions
			dir += fmt.Sprintf("day=2026-%02d-%02d/", 1+day/28%12, 1+day%28)
		}
		// Iceberg's data file names: <partition id>-<task id>-<query uuid>-<file count>.parquet
		key := fmt.Sprintf("%s%05d-%d-%s-%05d.parquet", dir, i/w.Tables%100000, rng.IntN(400), uuid(rng), 1+rng.IntN(3))
		size := 8<<20 + rng.Int64N(248<<20) // 8–256 MiB
		p.files[i] = dataFile{table: t, key: key, uri: objectURI(key), size: size}
	}

	// Writes and deletes are spread evenly over the scan.
	extras := w.Writes + w.Deletes
	every := 0
	if extras > 0 {
		every = max(1, w.Files/extras)
	}
	wi, di := 0, 0
	nextWrite := true
	for i := range p.files {
		f := &p.files[i]
		p.units = append(p.units, int32(len(p.ops)))
		for range w.HeadsPerFile {
			p.ops = append(p.ops, op{kind: KindHead, index: int32(i)})
		}
		// Footer: the last 8 bytes plus the footer, in one suffix read.
		footer := 16<<10 + rng.Int64N(240<<10)
		p.ops = append(p.ops, op{kind: KindFooter, index: int32(i), rng: "bytes=-" + strconv.FormatInt(footer, 10)})
		for range w.ReadsPerFile {
			n := 1<<20 + rng.Int64N(15<<20) // a 1–16 MiB column chunk
			start := 4 + rng.Int64N(max(1, f.size-footer-n-4))
			p.ops = append(p.ops, op{kind: KindRead, index: int32(i), rng: "bytes=" + strconv.FormatInt(start, 10) + "-" + strconv.FormatInt(start+n-1, 10)})
		}
		if every > 0 && (i+1)%every == 0 && wi+di < extras {
			if (nextWrite || di == w.Deletes) && wi < w.Writes {
				p.addWrite(rng, wi, objectURI)
				wi++
			} else if di < w.Deletes {
				p.addDelete(di)
				di++
			}
			nextWrite = !nextWrite
		}
	}
	for wi < w.Writes {
		p.units = append(p.units, int32(len(p.ops)))
		p.addWrite(rng, wi, objectURI)
		wi++
	}
	for di < w.Deletes {
		p.units = append(p.units, int32(len(p.ops)))
		p.addDelete(di)
		di++
	}
	for i := range p.ops {
		if p.ops[i].kind == KindDeleteObjects {
			p.objects += int64(p.dels[p.ops[i].index].keys)
		} else {
			p.objects++
		}
	}
	return p, nil
}

func (w *Workload) validate() error {
	switch {
	case w.Endpoint == "":
		return fmt.Errorf("bench: the S3 endpoint is required")
	case w.Region == "" || w.Bucket == "":
		return fmt.Errorf("bench: region and bucket are required")
	case w.Tables < 1:
		return fmt.Errorf("bench: at least one table is required")
	case w.Files < 1:
		return fmt.Errorf("bench: at least one data file is required")
	case w.ReadsPerFile < 0 || w.HeadsPerFile < 0 || w.Writes < 0 || w.Deletes < 0 || w.Partitions < 0:
		return fmt.Errorf("bench: counts may not be negative")
	case w.Writes > 0 && (w.PartsPerWrite < 1 || w.PartsPerWrite > 10000):
		return fmt.Errorf("bench: parts per write must be between 1 and 10000")
	case w.Deletes > 0 && (w.KeysPerDelete < 1 || w.KeysPerDelete > 1000):
		return fmt.Errorf("bench: keys per delete must be between 1 and 1000 (S3's limit)")
	case w.Principals < 1:
		return fmt.Errorf("bench: at least one principal is required")
	case w.Route != "legacy" && w.Route != "table":
		return fmt.Errorf("bench: route must be \"legacy\" or \"table\", got %q", w.Route)
	}
	u, err := url.Parse(w.Endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" {
		return fmt.Errorf("bench: S3 endpoint must be scheme://host[:port], got %q", w.Endpoint)
	}
	return nil
}

// TableKey is the key prefix of table t's location, ending in "/".
func (w *Workload) TableKey(t int) string {
	k := ""
	if w.Warehouse != "" {
		k = w.Warehouse + "/"
	}
	if w.Namespace != "" {
		k += w.Namespace + "/"
	}
	return k + TableName(t) + "/"
}

// TableName is the name of the bench's table t.
func TableName(t int) string { return "t" + strconv.Itoa(t) }

func signRoute(w Workload, t int) string {
	if w.Route == "legacy" {
		return "/v1/aws/s3/sign"
	}
	p := "/v1/"
	if w.CatalogPrefix != "" {
		p += url.PathEscape(w.CatalogPrefix) + "/"
	}
	ns := w.Namespace
	if ns == "" {
		ns = "default"
	}
	return p + "namespaces/" + url.PathEscape(ns) + "/tables/" + url.PathEscape(TableName(t)) + "/sign"
}

func (p *Plan) addWrite(rng *rand.Rand, i int, objectURI func(string) string) {
	t := i % p.w.Tables
	key := fmt.Sprintf("%sdata/00000-%d-%s-00001.parquet", p.w.TableKey(t), i, uuid(rng))
	// S3 upload ids are long opaque strings; these use only characters
	// that need no escaping in a query.
	uploadID := strings.ReplaceAll(uuid(rng)+uuid(rng), "-", "") + "." + strconv.Itoa(i)
	wr := write{table: t, uri: objectURI(key), uploadID: uploadID, partSize: 32 << 20}
	// CompleteMultipartUpload's XML lists every part and its ETag.
	wr.complete = len(`<?xml version="1.0" encoding="UTF-8"?><CompleteMultipartUpload xmlns="http://s3.amazonaws.com/doc/2006-03-01/"></CompleteMultipartUpload>`) +
		p.w.PartsPerWrite*len(`<Part><ETag>"0123456789abcdef0123456789abcdef"</ETag><PartNumber>1</PartNumber></Part>`)
	idx := int32(len(p.writes))
	p.writes = append(p.writes, wr)
	p.ops = append(p.ops, op{kind: KindCreateMultipart, index: idx})
	for n := 1; n <= p.w.PartsPerWrite; n++ {
		p.ops = append(p.ops, op{kind: KindUploadPart, index: idx, part: int32(n)})
	}
	p.ops = append(p.ops, op{kind: KindCompleteMultipart, index: idx})
}

// addDelete deletes KeysPerDelete data files of one table, as snapshot
// expiry does (S3FileIO.deleteFiles batches keys per bucket).
func (p *Plan) addDelete(i int) {
	T := p.w.Tables
	t := i % min(T, len(p.files))           // a table with files
	count := (len(p.files) - t + T - 1) / T // the files of table t: t, t+T, t+2T, ...
	n := min(p.w.KeysPerDelete, count)      // each key at most once per request
	start := i / T * p.w.KeysPerDelete
	var b strings.Builder
	b.WriteString(deleteXMLHead)
	for j := 0; j < n; j++ {
		f := &p.files[t+(start+j)%count*T]
		b.WriteString("<Object><Key>")
		xmlEscape(&b, f.key)
		b.WriteString("</Key></Object>")
	}
	b.WriteString(deleteXMLTail)
	body := b.String()
	sum := md5.Sum([]byte(body))
	idx := int32(len(p.dels))
	sha := sha256.Sum256([]byte(body))
	p.dels = append(p.dels, deleteOp{table: t, keys: n, body: body, md5: base64.StdEncoding.EncodeToString(sum[:]), sha: hex.EncodeToString(sha[:])})
	p.ops = append(p.ops, op{kind: KindDeleteObjects, index: idx})
}

// Workload returns the workload the plan was built from.
func (p *Plan) Workload() Workload { return p.w }

// Len is the number of sign requests in one scan.
func (p *Plan) Len() int { return len(p.ops) }

// Units is the number of units of one scan. A unit is what one engine
// thread does in order: a data file's HEADs, footer read and column reads
// (a Parquet reader finds the column chunks in the footer, so it cannot
// read them before the footer's answer), with a write or delete spread
// over the scan after it; a multipart upload's requests are in order too
// (the parts need the upload id).
func (p *Plan) Units() int { return len(p.units) }

// Unit returns the requests of unit u: indexes start <= i < end.
func (p *Plan) Unit(u int) (start, end int) {
	start = int(p.units[u])
	end = len(p.ops)
	if u+1 < len(p.units) {
		end = int(p.units[u+1])
	}
	return start, end
}

// Objects is the number of per-object decisions in one scan.
func (p *Plan) Objects() int64 { return p.objects }

// Count returns how many requests of kind k one scan has.
func (p *Plan) Count(k Kind) int {
	n := 0
	for i := range p.ops {
		if p.ops[i].kind == k {
			n++
		}
	}
	return n
}

// Request returns the i-th sign request of a scan (0 <= i < Len) with the
// given amz-sdk-invocation-id.
func (p *Plan) Request(i int, invocationID string) SignRequest {
	var r SignRequest
	p.Fill(&r, i, invocationID)
	return r
}

// Fill sets r to the i-th sign request of a scan, reusing r's header
// slice.
func (p *Plan) Fill(r *SignRequest, i int, invocationID string) {
	o := &p.ops[i]
	h := r.Headers[:0]
	*r = SignRequest{Kind: o.kind, Objects: 1, Region: p.w.Region}
	h = append(h, Header{"amz-sdk-invocation-id", invocationID}, Header{"amz-sdk-request", JavaSDKRequest})
	table := 0
	switch o.kind {
	case KindFooter, KindRead, KindHead:
		f := &p.files[o.index]
		table = f.table
		r.Principal = int(o.index) % p.w.Principals
		r.URI = f.uri
		r.Method = "GET"
		if o.kind == KindHead {
			r.Method = "HEAD"
		} else {
			h = append(h, Header{"Range", o.rng})
		}
	case KindCreateMultipart:
		wr := &p.writes[o.index]
		table = wr.table
		r.Principal = int(o.index) % p.w.Principals
		r.Method, r.URI = "POST", wr.uri+"?uploads"
		h = append(h, Header{"Content-Length", "0"}, Header{"Content-Type", "binary/octet-stream"})
	case KindUploadPart:
		wr := &p.writes[o.index]
		table = wr.table
		r.Principal = int(o.index) % p.w.Principals
		r.Method, r.URI = "PUT", wr.uri+"?partNumber="+strconv.Itoa(int(o.part))+"&uploadId="+wr.uploadID
		h = append(h, Header{"Content-Length", strconv.FormatInt(wr.partSize, 10)}, Header{"Content-Type", "application/octet-stream"}, Header{"Expect", "100-continue"})
	case KindCompleteMultipart:
		wr := &p.writes[o.index]
		table = wr.table
		r.Principal = int(o.index) % p.w.Principals
		r.Method, r.URI = "POST", wr.uri+"?uploadId="+wr.uploadID
		h = append(h, Header{"Content-Length", strconv.Itoa(wr.complete)}, Header{"Content-Type", "application/xml"})
	case KindDeleteObjects:
		d := &p.dels[o.index]
		table = d.table
		r.Principal = int(o.index) % p.w.Principals
		r.Objects = d.keys
		r.Method, r.URI, r.Body = "POST", p.bucketURI+"?delete", d.body
		h = append(h, Header{"Content-Length", strconv.Itoa(len(d.body))}, Header{"Content-MD5", d.md5}, Header{"Content-Type", "application/xml"})
	}
	h = append(h, Header{"User-Agent", JavaUserAgent})
	switch {
	case p.w.ContentSHA256 && o.kind == KindDeleteObjects:
		// SDKs that send a payload hash hash this small body; countersign
		// accepts no weaker binding for it.
		h = append(h, Header{"x-amz-content-sha256", p.dels[o.index].sha})
	case p.w.ContentSHA256:
		h = append(h, Header{"x-amz-content-sha256", "UNSIGNED-PAYLOAD"})
	}
	sortHeaders(h)
	r.Headers = h
	r.Path = p.routes[table]
}

// sortHeaders orders headers as Java's case-insensitive TreeMap does
// (insertion sort: a handful of headers).
func sortHeaders(h []Header) {
	for i := 1; i < len(h); i++ {
		for j := i; j > 0 && lessFold(h[j].Name, h[j-1].Name); j-- {
			h[j], h[j-1] = h[j-1], h[j]
		}
	}
}

func lessFold(a, b string) bool {
	for i := 0; i < len(a) && i < len(b); i++ {
		x, y := lower(a[i]), lower(b[i])
		if x != y {
			return x < y
		}
	}
	return len(a) < len(b)
}

func lower(c byte) byte {
	if c >= 'A' && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// AppendJSON appends r's RemoteSignRequest body as Iceberg's
// RemoteSignRequestParser writes it: region, method, uri, headers, then
// body when there is one, then provider. Strings go through jsonstr, which
// escapes as Jackson does ('"', '\\' and control characters) for valid
// UTF-8 without U+2028 and U+2029; a plan's strings are that (its URIs are
// percent-encoded), so the bytes are the Java client's.
func AppendJSON(dst []byte, r *SignRequest) []byte {
	dst = append(dst, `{"region":`...)
	dst = jsonstr.Append(dst, r.Region)
	dst = append(dst, `,"method":`...)
	dst = jsonstr.Append(dst, r.Method)
	dst = append(dst, `,"uri":`...)
	dst = jsonstr.Append(dst, r.URI)
	dst = append(dst, `,"headers":{`...)
	for i := range r.Headers {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = jsonstr.Append(dst, r.Headers[i].Name)
		dst = append(dst, ":["...)
		dst = jsonstr.Append(dst, r.Headers[i].Value)
		dst = append(dst, ']')
	}
	dst = append(dst, '}')
	if r.Body != "" {
		dst = append(dst, `,"body":`...)
		dst = jsonstr.Append(dst, r.Body)
	}
	dst = append(dst, `,"provider":"s3"}`...)
	return dst
}

// escapePath is the AWS SDKs' URI encoding of a key: every byte but the
// unreserved characters and '/' as %XX with upper-case hex.
func escapePath(s string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.' || c == '~' || c == '/' {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hex[c>>4])
		b.WriteByte(hex[c&15])
	}
	return b.String()
}

func xmlEscape(b *strings.Builder, s string) {
	for _, c := range s {
		switch c {
		case '<':
			b.WriteString("&lt;")
		case '>':
			b.WriteString("&gt;")
		case '&':
			b.WriteString("&amp;")
		case '"':
			b.WriteString("&quot;")
		case '\'':
			b.WriteString("&apos;")
		default:
			b.WriteRune(c)
		}
	}
}

// uuid returns a random (version 4) UUID in its 36-character form.
func uuid(rng *rand.Rand) string {
	var b [36]byte
	appendUUID(b[:0], rng.Uint64(), rng.Uint64())
	return string(b[:])
}

func appendUUID(dst []byte, hi, lo uint64) []byte {
	const hex = "0123456789abcdef"
	hi = hi&^0xf000 | 0x4000           // version 4
	lo = lo&^(0xc000<<48) | 0x8000<<48 // RFC 4122 variant
	var raw [16]byte
	for i := 0; i < 8; i++ {
		raw[i] = byte(hi >> (56 - 8*i))
		raw[8+i] = byte(lo >> (56 - 8*i))
	}
	for i, c := range raw {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			dst = append(dst, '-')
		}
		dst = append(dst, hex[c>>4], hex[c&15])
	}
	return dst
}
