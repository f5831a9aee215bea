package bench

import (
	"bytes"
	"crypto/md5"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/countersign/countersign/remotesign"
	"github.com/countersign/countersign/s3req"
)

const testInvocationID = "5d0b5b6e-97c4-4f0e-a8a1-3b2f1c9d4e77"

func mixedWorkload() Workload {
	w := DefaultWorkload()
	w.Files = 200
	w.Tables = 3
	w.ReadsPerFile = 2
	w.HeadsPerFile = 1
	w.Writes = 3
	w.PartsPerWrite = 2
	w.Deletes = 2
	w.KeysPerDelete = 25
	w.Principals = 4
	return w
}

func mustPlan(t *testing.T, w Workload) *Plan {
	t.Helper()
	p, err := NewPlan(w)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestPlanCounts(t *testing.T) {
	w := mixedWorkload()
	p := mustPlan(t, w)
	want := w.Files*(1+w.ReadsPerFile+w.HeadsPerFile) + w.Writes*(w.PartsPerWrite+2) + w.Deletes
	if p.Len() != want {
		t.Errorf("Len = %d, want %d", p.Len(), want)
	}
	counts := map[Kind]int{
		KindFooter: w.Files, KindRead: w.Files * w.ReadsPerFile, KindHead: w.Files * w.HeadsPerFile,
		KindCreateMultipart: w.Writes, KindUploadPart: w.Writes * w.PartsPerWrite, KindCompleteMultipart: w.Writes,
		KindDeleteObjects: w.Deletes,
	}
	for k, n := range counts {
		if got := p.Count(k); got != n {
			t.Errorf("%v: %d requests, want %d", k, got, n)
		}
	}
	if wantObj := int64(want - w.Deletes + w.Deletes*w.KeysPerDelete); p.Objects() != wantObj {
		t.Errorf("Objects = %d, want %d", p.Objects(), wantObj)
	}

	// The default: the 20,000-file scan of the targets (docs/design.md, Targets), 40,000 signatures.
	d := mustPlan(t, DefaultWorkload())
	if d.Len() != 40000 || d.Objects() != 40000 || d.Count(KindFooter) != 20000 || d.Count(KindRead) != 20000 {
		t.Errorf("default plan: %d requests, %d objects", d.Len(), d.Objects())
	}
}

func TestPlanIsDeterministic(t *testing.T) {
	a, b := mustPlan(t, mixedWorkload()), mustPlan(t, mixedWorkload())
	w := mixedWorkload()
	w.Seed = 2
	c := mustPlan(t, w)
	same, differ := true, false
	for i := 0; i < a.Len(); i++ {
		ra, rb, rc := a.Request(i, "x"), b.Request(i, "x"), c.Request(i, "x")
		if string(AppendJSON(nil, &ra)) != string(AppendJSON(nil, &rb)) {
			same = false
		}
		if ra.URI != rc.URI {
			differ = true
		}
	}
	if !same || !differ {
		t.Errorf("same seed gives the same plan: %v; another seed another: %v", same, differ)
	}
}

var (
	uuidRE   = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	footerRE = regexp.MustCompile(`^bytes=-([0-9]+)$`)
	rangeRE  = regexp.MustCompile(`^bytes=([0-9]+)-([0-9]+)$`)
	// Iceberg data file names: <partition>-<task>-<uuid>-<n>.parquet
	dataKeyRE = regexp.MustCompile(`^wh/db/t[0-9]+/data/(day=2026-[0-9]{2}-[0-9]{2}/)?[0-9]{5}-[0-9]+-[0-9a-f-]{36}-[0-9]{5}\.parquet$`)
)

// TestJavaRequestShapes checks every kind of request against what Iceberg's
// S3V4RestSignerClient sends: the SDK's headers at signing time (no Host,
// no X-Amz-Date, no Authorization, no x-amz-content-sha256), in the order
// of a case-insensitive TreeMap; the Range forms S3InputStream uses; and
// the DeleteObjects body bound by its Content-MD5.
func TestJavaRequestShapes(t *testing.T) {
	p := mustPlan(t, mixedWorkload())
	wantHeaders := map[Kind][]string{
		KindFooter:            {"amz-sdk-invocation-id", "amz-sdk-request", "Range", "User-Agent"},
		KindRead:              {"amz-sdk-invocation-id", "amz-sdk-request", "Range", "User-Agent"},
		KindHead:              {"amz-sdk-invocation-id", "amz-sdk-request", "User-Agent"},
		KindCreateMultipart:   {"amz-sdk-invocation-id", "amz-sdk-request", "Content-Length", "Content-Type", "User-Agent"},
		KindUploadPart:        {"amz-sdk-invocation-id", "amz-sdk-request", "Content-Length", "Content-Type", "Expect", "User-Agent"},
		KindCompleteMultipart: {"amz-sdk-invocation-id", "amz-sdk-request", "Content-Length", "Content-Type", "User-Agent"},
		KindDeleteObjects:     {"amz-sdk-invocation-id", "amz-sdk-request", "Content-Length", "Content-MD5", "Content-Type", "User-Agent"},
	}
	wantMethod := map[Kind]string{
		KindFooter: "GET", KindRead: "GET", KindHead: "HEAD", KindCreateMultipart: "POST",
		KindUploadPart: "PUT", KindCompleteMultipart: "POST", KindDeleteObjects: "POST",
	}
	seen := map[Kind]bool{}
	for i := 0; i < p.Len(); i++ {
		r := p.Request(i, testInvocationID)
		seen[r.Kind] = true
		var names []string
		hdr := map[string]string{}
		for _, h := range r.Headers {
			names = append(names, h.Name)
			hdr[h.Name] = h.Value
		}
		if got, want := strings.Join(names, ","), strings.Join(wantHeaders[r.Kind], ","); got != want {
			t.Fatalf("%v: headers %s, want %s", r.Kind, got, want)
		}
		if r.Method != wantMethod[r.Kind] || r.Region != "us-east-1" || r.Path != "/v1/aws/s3/sign" {
			t.Fatalf("%v: %s %s to %s", r.Kind, r.Method, r.Region, r.Path)
		}
		if hdr["amz-sdk-invocation-id"] != testInvocationID || hdr["amz-sdk-request"] != "attempt=1; max=4" || !strings.HasPrefix(hdr["User-Agent"], "aws-sdk-java/2.") {
			t.Fatalf("%v: SDK headers %v", r.Kind, hdr)
		}
		if !strings.HasPrefix(r.URI, "http://127.0.0.1:7070/lake/") && r.Kind != KindDeleteObjects {
			t.Fatalf("%v: uri %s", r.Kind, r.URI)
		}
		switch r.Kind {
		case KindFooter:
			m := footerRE.FindStringSubmatch(hdr["Range"])
			if m == nil {
				t.Fatalf("footer Range %q is not a suffix range", hdr["Range"])
			}
			if n, _ := strconv.Atoi(m[1]); n < 8 {
				t.Fatalf("footer Range %q shorter than Parquet's 8-byte tail", hdr["Range"])
			}
		case KindRead:
			m := rangeRE.FindStringSubmatch(hdr["Range"])
			if m == nil {
				t.Fatalf("column read Range %q is not bytes=a-b", hdr["Range"])
			}
			a, _ := strconv.ParseInt(m[1], 10, 64)
			b, _ := strconv.ParseInt(m[2], 10, 64)
			if a < 4 || b < a {
				t.Fatalf("column read Range %q", hdr["Range"])
			}
		case KindCreateMultipart:
			if !strings.HasSuffix(r.URI, ".parquet?uploads") {
				t.Fatalf("CreateMultipartUpload uri %s", r.URI)
			}
		case KindUploadPart:
			if !regexp.MustCompile(`\.parquet\?partNumber=[0-9]+&uploadId=[0-9a-f.]+$`).MatchString(r.URI) || hdr["Expect"] != "100-continue" {
				t.Fatalf("UploadPart %s %v", r.URI, hdr)
			}
		case KindCompleteMultipart:
			if !regexp.MustCompile(`\.parquet\?uploadId=[0-9a-f.]+$`).MatchString(r.URI) || hdr["Content-Type"] != "application/xml" {
				t.Fatalf("CompleteMultipartUpload %s %v", r.URI, hdr)
			}
		case KindDeleteObjects:
			if r.URI != "http://127.0.0.1:7070/lake?delete" {
				t.Fatalf("DeleteObjects uri %s", r.URI)
			}
			sum := md5.Sum([]byte(r.Body))
			if hdr["Content-MD5"] != base64.StdEncoding.EncodeToString(sum[:]) {
				t.Fatalf("Content-MD5 %s does not bind the body", hdr["Content-MD5"])
			}
			if hdr["Content-Length"] != strconv.Itoa(len(r.Body)) || hdr["Content-Type"] != "application/xml" {
				t.Fatalf("DeleteObjects headers %v", hdr)
			}
			if !strings.HasPrefix(r.Body, `<?xml version="1.0" encoding="UTF-8"?><Delete xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Object><Key>wh/db/t`) {
				t.Fatalf("DeleteObjects body %.120s", r.Body)
			}
			keys, err := s3req.ParseDeleteBody([]byte(r.Body), 1000)
			if err != nil {
				t.Fatal(err)
			}
			if len(keys) != 25 || r.Objects != 25 {
				t.Fatalf("DeleteObjects of %d keys (Objects %d), want 25", len(keys), r.Objects)
			}
			distinct := map[string]bool{}
			for _, k := range keys {
				if !dataKeyRE.MatchString(k.Key) {
					t.Fatalf("delete key %q", k.Key)
				}
				distinct[k.Key] = true
			}
			if len(distinct) != len(keys) {
				t.Fatalf("DeleteObjects names a key twice")
			}
		}
		if r.Kind != KindDeleteObjects && r.Body != "" {
			t.Fatalf("%v has a body: the Java client sends one only for DeleteObjects", r.Kind)
		}
		if r.Principal < 0 || r.Principal >= 4 {
			t.Fatalf("principal %d of 4", r.Principal)
		}
	}
	if len(seen) != len(wantHeaders) {
		t.Errorf("plan covers %d kinds, want %d", len(seen), len(wantHeaders))
	}
}

// TestJSONIsIcebergsRemoteSignRequest checks the body's field order and
// encoding against Iceberg's RemoteSignRequestParser: region, method, uri,
// headers (name -> [values]), body only when there is one, provider.
func TestJSONIsIcebergsRemoteSignRequest(t *testing.T) {
	p := mustPlan(t, mixedWorkload())
	for i := 0; i < p.Len(); i++ {
		r := p.Request(i, testInvocationID)
		b := AppendJSON(nil, &r)
		d := json.NewDecoder(bytes.NewReader(b))
		var keys []string
		tok, _ := d.Token() // {
		if tok != json.Delim('{') {
			t.Fatalf("not an object: %s", b)
		}
		for d.More() {
			k, _ := d.Token()
			keys = append(keys, k.(string))
			var v json.RawMessage
			if err := d.Decode(&v); err != nil {
				t.Fatal(err)
			}
		}
		want := "region,method,uri,headers,provider"
		if r.Kind == KindDeleteObjects {
			want = "region,method,uri,headers,body,provider"
		}
		if got := strings.Join(keys, ","); got != want {
			t.Fatalf("%v: members %s, want %s", r.Kind, got, want)
		}
		var m struct {
			Region, Method, URI, Body, Provider string
			Headers                             map[string][]string
		}
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		if m.URI != r.URI || m.Body != r.Body || m.Provider != "s3" || len(m.Headers) != len(r.Headers) {
			t.Fatalf("%v: round trip %+v", r.Kind, m)
		}
	}

	// Jackson escapes only quotes, backslashes and control characters.
	r := SignRequest{Region: "r", Method: "GET", URI: "http://h/b/k\"\\\x01\t/é", Headers: []Header{{"X-A", "a\nb"}}}
	b := AppendJSON(nil, &r)
	if want := `"uri":"http://h/b/k\"\\\u0001\t/é"`; !bytes.Contains(b, []byte(want)) {
		t.Errorf("%s does not contain %s", b, want)
	}
	var m struct {
		URI     string
		Headers map[string][]string
	}
	if err := json.Unmarshal(b, &m); err != nil || m.URI != r.URI || m.Headers["X-A"][0] != "a\nb" {
		t.Errorf("round trip: %+v %v", m, err)
	}
}

// TestPlanIsAcceptedByCountersign runs every request of several workload
// variants through countersign's own decoder and classifier, configured
// with serve -dev's endpoints, and checks the operation and objects.
func TestPlanIsAcceptedByCountersign(t *testing.T) {
	c, err := s3req.New(s3req.Options{Endpoints: []s3req.Endpoint{
		{Name: "dev", Scheme: "http", Host: "localhost", Port: 7070, VirtualHostDomain: "localhost", Regions: []string{"us-east-1"}},
		{Name: "dev-ip", Scheme: "http", Host: "127.0.0.1", Port: 7070, Addressing: s3req.AddressingPath, Regions: []string{"us-east-1"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	wantOp := map[Kind]string{
		KindFooter: "GetObject", KindRead: "GetObject", KindHead: "HeadObject",
		KindCreateMultipart: "CreateMultipartUpload", KindUploadPart: "UploadPart",
		KindCompleteMultipart: "CompleteMultipartUpload", KindDeleteObjects: "DeleteObjects",
	}
	variants := map[string]func(*Workload){
		"path-style":      func(*Workload) {},
		"virtual-hosted":  func(w *Workload) { w.Endpoint, w.PathStyle = "http://localhost:7070", false },
		"partitions":      func(w *Workload) { w.Partitions = 30 },
		"content-sha256":  func(w *Workload) { w.ContentSHA256 = true },
		"per-table route": func(w *Workload) { w.Route = "table" },
	}
	for name, change := range variants {
		t.Run(name, func(t *testing.T) {
			w := mixedWorkload()
			change(&w)
			p := mustPlan(t, w)
			var dec remotesign.Decoder
			for i := 0; i < p.Len(); i++ {
				r := p.Request(i, testInvocationID)
				in, err := dec.Decode(AppendJSON(nil, &r), remotesign.DefaultLimits())
				if err != nil {
					t.Fatalf("%v: decode: %v", r.Kind, err)
				}
				req, err := c.Classify(in)
				if err != nil {
					t.Fatalf("%v %s: classify: %v", r.Kind, r.URI, err)
				}
				if req.Operation != wantOp[r.Kind] || req.Bucket != "lake" || len(req.Targets) != r.Objects {
					t.Fatalf("%v: classified as %s on %s with %d targets", r.Kind, req.Operation, req.Bucket, len(req.Targets))
				}
				for _, tg := range req.Targets {
					if !dataKeyRE.MatchString(tg.Key) {
						t.Fatalf("%v: key %q is not an Iceberg data file", r.Kind, tg.Key)
					}
				}
				if w.Route == "table" {
					if !regexp.MustCompile(`^/v1/prod/namespaces/db/tables/t[0-9]+/sign$`).MatchString(r.Path) {
						t.Fatalf("per-table route %s", r.Path)
					}
					if tbl := strings.Split(req.Targets[0].Key, "/")[2]; r.Path != fmt.Sprintf("/v1/prod/namespaces/db/tables/%s/sign", tbl) {
						t.Fatalf("key %s sent to the route of another table %s", req.Targets[0].Key, r.Path)
					}
				}
				if w.Partitions > 0 && r.Kind == KindFooter && !strings.Contains(r.URI, "/day%3D2026-") {
					t.Fatalf("partition directory not encoded as the SDK does: %s", r.URI)
				}
			}
		})
	}
}

func TestWorkloadValidation(t *testing.T) {
	bad := map[string]func(*Workload){
		"no endpoint":     func(w *Workload) { w.Endpoint = "" },
		"endpoint path":   func(w *Workload) { w.Endpoint = "http://h:1/x" },
		"endpoint scheme": func(w *Workload) { w.Endpoint = "ftp://h" },
		"no files":        func(w *Workload) { w.Files = 0 },
		"no tables":       func(w *Workload) { w.Tables = 0 },
		"route":           func(w *Workload) { w.Route = "v2" },
		"delete keys":     func(w *Workload) { w.Deletes, w.KeysPerDelete = 1, 1001 },
		"parts":           func(w *Workload) { w.Writes, w.PartsPerWrite = 1, 0 },
		"negative":        func(w *Workload) { w.ReadsPerFile = -1 },
	}
	for name, change := range bad {
		w := DefaultWorkload()
		change(&w)
		if _, err := NewPlan(w); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	// Fewer files than tables, and deletes of more keys than a table has.
	w := DefaultWorkload()
	w.Files, w.Tables, w.Deletes, w.KeysPerDelete = 3, 10, 5, 100
	p := mustPlan(t, w)
	for i := 0; i < p.Len(); i++ {
		if r := p.Request(i, "x"); r.Kind == KindDeleteObjects && r.Objects != 1 {
			t.Errorf("delete of %d keys from a one-file table", r.Objects)
		}
	}
}

func TestUUID(t *testing.T) {
	var b [36]byte
	for _, v := range [][2]uint64{{0, 0}, {^uint64(0), ^uint64(0)}, {0x0123456789abcdef, 0xfedcba9876543210}} {
		s := string(appendUUID(b[:0], v[0], v[1]))
		if !uuidRE.MatchString(s) {
			t.Errorf("%s is not a version 4 UUID", s)
		}
	}
}
