package conformance

// Audit completeness against the storage's own log (issue 6, item 4).
//
// versitygw runs with --access-log FILE (s3log.FileLogger): one line per
// request it answered, written after the handler ran and before the
// response left, in an S3-server-access-log-like format (s3log/file.go):
//
//	OWNER BUCKET [02/January/2006:15:04:05 -0700] REMOTE_IP REQUESTER
//	REQUEST_ID ACTION KEY REQUEST_URI STATUS ERROR_CODE BYTES_SENT
//	OBJECT_SIZE TOTAL_MS TURNAROUND_MS REFERER USER_AGENT ...
//
// TIME is time.Now() when the line was written, in the process's local
// zone, to the second (truncated); REQUESTER is the access key versitygw
// authenticated ("-" when it authenticated none); ACTION is versitygw's
// metrics action name, "s3_" + the S3 operation ("s3_GetObject",
// "s3_ListObjectsV2", "ActionUnDetected" for a request refused before
// routing); BUCKET and KEY come from the URL-decoded, path-style path
// (virtual-hosted requests are rewritten to it first), "-" when empty, so a
// KEY may contain spaces; REQUEST_URI is the raw request target as sent
// (percent-encoded, never with a space), which is what the parser splits
// on and checks the key against; TOTAL_MS is the time since the request
// began.
//
// The matching rules (checkCompleteness):
//
//   - A signed request is what one sign request produced: the allowed
//     records carrying signing details. Each record with role "object" or
//     "bucket" is one signed request; a DeleteObjects request's
//     "delete-key" records (one per key, same request_id and signature) are
//     one signed request for the bucket, because versitygw logs
//     DeleteObjects once, for the bucket, without its keys; "copy-source"
//     records belong to their request's "object" record. Records without
//     signing (deny, error, ..., or allow on a request refused for another
//     key) are not signed requests: nothing usable left countersign.
//   - A served request is every access-log line, except those of the
//     storage administrator's own key (the tests' setup and checks, made
//     directly with versitygw's root key, which countersign never holds).
//     Lines of any other requester, "-" included, must be matched.
//   - A served request matches a signed request with the same access key
//     (REQUESTER = signing.access_key_id), operation (ACTION without
//     "s3_", ListAllMyBuckets as ListBuckets), bucket and key (empty for
//     bucket-level operations and DeleteObjects), signed in the SigV4
//     validity window before it was served. amz_date (UTC, "20060102T150405Z")
//     and TIME (local zone with its offset) are compared as instants, both
//     whole seconds: amz_date <= TIME, since countersign signs before the
//     client sends, on the same machine's clock (versitygw would also take
//     a date up to 15 min ahead, which only a skew between two clocks could
//     produce), and TIME - amz_date <= 15 min + TOTAL_MS + 1 s: versitygw
//     refuses a date more than 900 s from its clock when it checks the
//     signature (s3api/utils.ValidateDate, Unix seconds), which is after
//     the request began, at most TOTAL_MS before the line was written; 1 s
//     covers the truncations.
//   - Matching is a multiset matching per (access key, operation, bucket,
//     key), not an identity: versitygw's log has no signature or canonical
//     request to join on, and several identical requests (ranged GETs of one
//     file) are often signed within one second. It is a maximum matching
//     (served requests by time, each taking the earliest-signed record still
//     valid for it), so it fails only when no assignment exists.
//   - By default a signature accounts for one served request: a signature
//     sent twice (a replay, an HTTP-level resend of a request that versitygw
//     did serve, or the Java client's 30 s cache of "Cache-Control: private"
//     answers, off unless cacheable_reads is set) leaves a served request
//     unmatched. MaxServedPerSignature raises that for such deployments:
//     every signature first gets one served request (the maximum matching
//     above), then the requests left over are taken as further uses of a
//     signature valid for them, and those signatures are listed as
//     replayed. The SDK retries of these clients are not replays: each
//     attempt is signed again (aws-sdk-go-v2's signing step runs inside its
//     retry loop; botocore signs every attempt).
//   - Failures: a served request with no matching signed request
//     (unrecorded), a signed request matched by no served request
//     (unserved: signed and not sent, or sent and never served), and a
//     signed request made with an excluded key (the check would be vacuous).
//
// What it cannot see: which keys a DeleteObjects request deleted (so a
// missing delete-key record among several of one request goes unnoticed;
// a missing DeleteObjects request does not), and which of several requests
// alike in everything it compares a record belongs to (the counts are
// checked, not the pairing).
//
// The runs are dedicated (TestAccessLogCompleteness): tests that obtain a
// signature on purpose without sending it, or that sign with a wrong
// secret, run elsewhere; here the only unsent signatures and extra requests
// are the ones the negative subtests add on purpose.

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/countersign/countersign/conformance/remotesigning"
)

// The storage credentials countersign signs with in the access-log runs: a
// versitygw internal-IAM account with the admin role, distinct from the
// root key (testAccessKey) the tests use for setup and checks, so that
// versitygw's log says which requests came through countersign's keys.
const (
	signerAccessKey = "CSCONFSIGNERKEY"
	signerSecretKey = "csconf-signer-secret-key-only-countersign-holds"
)

// sigV4Validity is how far versitygw lets a request's date be from its
// clock (s3api/utils.ValidateDate: 15 * 60 s, whole seconds).
const sigV4Validity = 15 * time.Minute

// accessLoggedS3 is a versitygw with --access-log and the signer account.
type accessLoggedS3 struct {
	*s3Server
	logPath string
}

func startS3WithAccessLog(t testing.TB) *accessLoggedS3 {
	t.Helper()
	iamDir := t.TempDir()
	// auth.IAMServiceInternal's users.json (iAMConfig), written before the
	// gateway starts.
	users, err := json.Marshal(map[string]any{"accessAccounts": map[string]any{
		signerAccessKey: map[string]any{"access": signerAccessKey, "secret": signerSecretKey, "role": "admin",
			"userID": 0, "groupID": 0, "projectID": 0},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(iamDir, "users.json"), users, 0o600); err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(t.TempDir(), "access.log")
	srv := startS3(t, "--iam-dir", iamDir, "--access-log", logPath)
	return &accessLoggedS3{s3Server: srv, logPath: logPath}
}

// signerEnv gives countersign the signer account's keys.
func signerEnv() []string {
	return []string{"COUNTERSIGN_ACCESS_KEY_ID=" + signerAccessKey, "COUNTERSIGN_SECRET_ACCESS_KEY=" + signerSecretKey}
}

// directClient talks to versitygw with the given keys, not through
// countersign.
func (s *s3Server) directClient(accessKey, secretKey string) *s3.Client {
	return s3.New(s3.Options{
		Region:       testRegion,
		BaseEndpoint: aws.String(fmt.Sprintf("http://127.0.0.1:%d", s.Port)),
		UsePathStyle: true,
		Credentials:  credentials.NewStaticCredentialsProvider(accessKey, secretKey, ""),
	})
}

// ---- versitygw's access log ----

// servedEntry is one request versitygw answered, as its access log says.
type servedEntry struct {
	Line       int       // 1-based line number in the log
	Time       time.Time // when the line was written, whole seconds
	RemoteIP   string
	Requester  string // access key, "" when none was authenticated
	RequestID  string // versitygw's x-amz-request-id
	Action     string // versitygw's action, e.g. "s3_GetObject"
	Bucket     string // "" when none
	Key        string // "" when none
	RequestURI string
	Status     int
	ErrorCode  string // "" when none
	TotalMS    int64
}

// Operation is the entry's S3 operation in countersign's naming, "" when
// versitygw did not classify the request.
func (e servedEntry) Operation() string {
	op, ok := strings.CutPrefix(e.Action, "s3_")
	if !ok {
		return ""
	}
	if op == "ListAllMyBuckets" {
		return "ListBuckets"
	}
	return op
}

func (e servedEntry) String() string {
	return fmt.Sprintf("line %d [%s] %s %s %s/%s %d %s (requester %s, request id %s)", e.Line, e.Time.Format(time.RFC3339),
		e.Action, e.RequestURI, e.Bucket, e.Key, e.Status, dash(e.ErrorCode), dash(e.Requester), e.RequestID)
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func undash(s string) string {
	if s == "-" {
		return ""
	}
	return s
}

// vgwTimeLayout is s3log's timeFormat.
const vgwTimeLayout = "02/January/2006:15:04:05 -0700"

var (
	// OWNER BUCKET [TIME] IP REQUESTER REQUEST_ID ACTION, then the rest.
	accessLogHead = regexp.MustCompile(`^(\S+) (\S+) \[([^\]]+)\] (\S+) (\S+) (\S+) (\S+) (.+)$`)
	// What follows KEY: REQUEST_URI STATUS ERROR_CODE BYTES_SENT
	// OBJECT_SIZE TOTAL_MS TURNAROUND_MS, then REFERER USER_AGENT ...
	accessLogTail = regexp.MustCompile(`^(\S+) (\d{3}) (\S+) (-?\d+) (-?\d+) (-?\d+) (-?\d+) `)
)

// parseAccessLog reads versitygw's access log. Every line but the "log
// starts" banners must parse: a line the parser does not understand is an
// error, not a line skipped.
func parseAccessLog(data []byte) ([]servedEntry, error) {
	var out []servedEntry
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	n := 0
	for sc.Scan() {
		n++
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "log starts ") {
			continue
		}
		e, err := parseAccessLogLine(line)
		if err != nil {
			return nil, fmt.Errorf("access log line %d: %w: %q", n, err, line)
		}
		e.Line = n
		out = append(out, e)
	}
	return out, sc.Err()
}

func parseAccessLogLine(line string) (servedEntry, error) {
	m := accessLogHead.FindStringSubmatch(line)
	if m == nil {
		return servedEntry{}, errors.New("not an access log line")
	}
	ts, err := time.Parse(vgwTimeLayout, m[3])
	if err != nil {
		return servedEntry{}, fmt.Errorf("time: %w", err)
	}
	e := servedEntry{
		Time: ts, RemoteIP: m[4], Requester: undash(m[5]), RequestID: m[6], Action: m[7], Bucket: undash(m[2]),
	}
	// KEY may contain spaces; REQUEST_URI cannot. Take the first split
	// whose remainder has the fixed fields and whose request URI decodes to
	// this bucket and key (path-style or virtual-hosted).
	rest := m[8]
	for i := 0; i < len(rest); i++ {
		if rest[i] != ' ' {
			continue
		}
		tm := accessLogTail.FindStringSubmatch(rest[i+1:])
		if tm == nil {
			continue
		}
		key := undash(rest[:i])
		if !uriNames(tm[1], e.Bucket, key) {
			continue
		}
		e.Key, e.RequestURI = key, tm[1]
		e.Status, _ = strconv.Atoi(tm[2])
		e.ErrorCode = undash(tm[3])
		e.TotalMS, _ = strconv.ParseInt(tm[6], 10, 64)
		return e, nil
	}
	return servedEntry{}, errors.New("no key and request URI that agree")
}

// uriNames reports whether the request target's path, decoded as versitygw
// decodes it (url.PathUnescape), is bucket/key path-style or key
// virtual-hosted.
func uriNames(target, bucket, key string) bool {
	raw, _, _ := strings.Cut(target, "?")
	p, err := url.PathUnescape(raw)
	if err != nil {
		return false
	}
	if key == "" {
		return p == "/" || bucket != "" && (p == "/"+bucket || p == "/"+bucket+"/")
	}
	return p == "/"+key || bucket != "" && p == "/"+bucket+"/"+key
}

// ---- countersign's audit log ----

// auditRecord is the part of an audit record (schema v1, audit/record.go)
// this check reads.
type auditRecord struct {
	Seq       uint64    `json:"seq"`
	ID        string    `json:"id"`
	Time      time.Time `json:"time"`
	Kind      string    `json:"kind"`
	RequestID string    `json:"request_id"`
	Principal *struct {
		ID string `json:"id"`
	} `json:"principal"`
	Operation string `json:"operation"`
	Bucket    string `json:"bucket"`
	Key       string `json:"key"`
	Role      string `json:"role"`
	Decision  string `json:"decision"`
	Status    int    `json:"status"`
	Signing   *struct {
		AccessKeyID            string `json:"access_key_id"`
		AmzDate                string `json:"amz_date"`
		CanonicalRequestSHA256 string `json:"canonical_request_sha256"`
		SignatureSHA256        string `json:"signature_sha256"`
	} `json:"signing"`
}

// runCountersignCLI runs the countersign binary and returns its stdout,
// stderr and exit code.
func runCountersignCLI(t testing.TB, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(servers.CountersignBin, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return stdout.String(), stderr.String(), 0
	case errors.As(err, &ee):
		return stdout.String(), stderr.String(), ee.ExitCode()
	}
	t.Fatalf("countersign %v: %v", args, err)
	return "", "", -1
}

// queryAudit reads every access record of the log in dir with `countersign
// audit query -format jsonl`.
func queryAudit(t testing.TB, dir string) []auditRecord {
	t.Helper()
	out, stderr, code := runCountersignCLI(t, "audit", "query", "-dir", dir, "-kind", "access", "-format", "jsonl")
	if code != 0 {
		t.Fatalf("countersign audit query -dir %s: exit %d\n%s", dir, code, stderr)
	}
	var recs []auditRecord
	for i, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if line == "" {
			continue
		}
		var r auditRecord
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("audit query line %d: %v: %q", i+1, err, line)
		}
		recs = append(recs, r)
	}
	return recs
}

// verifyAudit runs `countersign audit verify` on dir.
func verifyAudit(t testing.TB, dir, pubkey string) (string, int) {
	t.Helper()
	out, stderr, code := runCountersignCLI(t, "audit", "verify", "-dir", dir, "-pubkey", pubkey, "-origin", "countersign/conformance")
	return out + stderr, code
}

// signedRequest is one signature countersign handed out.
type signedRequest struct {
	Seqs        []uint64 // its records
	RequestID   string   // the sign request's id
	Principal   string
	AccessKeyID string
	Operation   string
	Bucket      string
	Key         string   // "" for bucket-level operations and DeleteObjects
	Keys        []string // DeleteObjects: the keys
	AmzDate     time.Time
	RecordTime  time.Time
	Signature   string // signing.signature_sha256
}

func (s *signedRequest) String() string {
	k := s.Key
	if s.Operation == "DeleteObjects" {
		k = "{" + strings.Join(s.Keys, ",") + "}"
	}
	return fmt.Sprintf("seq %v %s %s/%s amz_date %s (request %s, principal %s, key id %s)", s.Seqs, s.Operation, s.Bucket, k,
		s.AmzDate.Format("20060102T150405Z"), s.RequestID, s.Principal, s.AccessKeyID)
}

// signedRequests groups the allowed, signed records into the signatures
// countersign handed out (see the matching rules at the top).
func signedRequests(recs []auditRecord) ([]*signedRequest, error) {
	var out []*signedRequest
	type groupKey struct{ requestID, signature string }
	deletes := map[groupKey]*signedRequest{}
	for _, r := range recs {
		if r.Kind != "access" || r.Decision != "allow" || r.Signing == nil {
			continue
		}
		amz, err := time.Parse("20060102T150405Z", r.Signing.AmzDate)
		if err != nil {
			return nil, fmt.Errorf("record seq %d: amz_date %q: %v", r.Seq, r.Signing.AmzDate, err)
		}
		if r.Signing.SignatureSHA256 == "" || r.Signing.AccessKeyID == "" {
			return nil, fmt.Errorf("record seq %d: allowed and signed without a signature digest or access key", r.Seq)
		}
		sr := &signedRequest{
			Seqs: []uint64{r.Seq}, RequestID: r.RequestID, AccessKeyID: r.Signing.AccessKeyID,
			Operation: r.Operation, Bucket: r.Bucket, Key: r.Key, AmzDate: amz, RecordTime: r.Time, Signature: r.Signing.SignatureSHA256,
		}
		if r.Principal != nil {
			sr.Principal = r.Principal.ID
		}
		switch r.Role {
		case "object", "bucket":
			out = append(out, sr)
		case "delete-key":
			k := groupKey{r.RequestID, r.Signing.SignatureSHA256}
			if g := deletes[k]; g != nil {
				g.Seqs = append(g.Seqs, r.Seq)
				g.Keys = append(g.Keys, r.Key)
				continue
			}
			sr.Key, sr.Keys = "", []string{r.Key}
			deletes[k] = sr
			out = append(out, sr)
		case "copy-source":
			// Part of its request's "object" record.
		default:
			return nil, fmt.Errorf("record seq %d: allowed and signed with role %q", r.Seq, r.Role)
		}
	}
	return out, nil
}

// ---- the check ----

type completenessOptions struct {
	// Excluded are requesters whose requests are not expected to have gone
	// through countersign: the storage administrator's own key.
	Excluded []string
	// MaxServedPerSignature is how many served requests one signature may
	// account for (0: 1).
	MaxServedPerSignature int
}

type unrecordedEntry struct {
	Entry  servedEntry
	Reason string
}

// completeness is the result of checkCompleteness.
type completeness struct {
	Served, Excluded, Signed, Matched int
	ByOperation                       map[string]int // matched served requests
	Replayed                          []*signedRequest
	Unrecorded                        []unrecordedEntry // served, no signed request
	Unserved                          []*signedRequest  // signed, not served
	Invalid                           []string
}

func (c *completeness) OK() bool {
	return len(c.Unrecorded) == 0 && len(c.Unserved) == 0 && len(c.Invalid) == 0
}

func (c *completeness) Summary() string {
	return fmt.Sprintf("%d served requests (%d more by excluded requesters), %d signed requests, %d matched; by operation: %s",
		c.Served, c.Excluded, c.Signed, c.Matched, opSummary(c.ByOperation))
}

func (c *completeness) String() string {
	var b strings.Builder
	b.WriteString(c.Summary())
	for _, u := range c.Unrecorded {
		fmt.Fprintf(&b, "\n  served without an audit record: %s: %s", u.Entry, u.Reason)
	}
	for _, s := range c.Unserved {
		fmt.Fprintf(&b, "\n  signed but never served: %s", s)
	}
	for _, s := range c.Invalid {
		fmt.Fprintf(&b, "\n  invalid: %s", s)
	}
	for _, s := range c.Replayed {
		fmt.Fprintf(&b, "\n  one signature served more than once: %s", s)
	}
	return b.String()
}

type matchKey struct{ requester, operation, bucket, key string }

// checkCompleteness matches versitygw's served requests against
// countersign's signed requests (rules at the top of this file).
func checkCompleteness(served []servedEntry, signed []*signedRequest, opts completenessOptions) *completeness {
	maxUses := opts.MaxServedPerSignature
	if maxUses <= 0 {
		maxUses = 1
	}
	res := &completeness{ByOperation: map[string]int{}, Signed: len(signed)}
	type slot struct {
		req  *signedRequest
		uses int
	}
	cands := map[matchKey][]*slot{}
	for _, s := range signed {
		if slices.Contains(opts.Excluded, s.AccessKeyID) {
			res.Invalid = append(res.Invalid, fmt.Sprintf("signed with the excluded key %s: %s", s.AccessKeyID, s))
			continue
		}
		k := matchKey{s.AccessKeyID, s.Operation, s.Bucket, s.Key}
		cands[k] = append(cands[k], &slot{req: s})
	}
	for _, list := range cands {
		sort.SliceStable(list, func(i, j int) bool { return list[i].req.AmzDate.Before(list[j].req.AmzDate) })
	}
	byKey := map[matchKey][]servedEntry{}
	var keys []matchKey
	for _, e := range served {
		if slices.Contains(opts.Excluded, e.Requester) {
			res.Excluded++
			continue
		}
		res.Served++
		k := matchKey{e.Requester, e.Operation(), e.Bucket, e.Key}
		if _, ok := byKey[k]; !ok {
			keys = append(keys, k)
		}
		byKey[k] = append(byKey[k], e)
	}
	for _, k := range keys {
		entries := byKey[k]
		sort.SliceStable(entries, func(i, j int) bool { return entries[i].Time.Before(entries[j].Time) })
		list := cands[k]
		window := func(e servedEntry) time.Time {
			return e.Time.Add(-(sigV4Validity + time.Second + time.Duration(e.TotalMS)*time.Millisecond))
		}
		// Each served request accepts signatures dated in [lo, T]. Taking
		// the requests by T and giving each the earliest acceptable
		// signature left is a maximum matching of points to intervals:
		// first with one served request per signature, then, if allowed,
		// the requests left over as further uses of a signature.
		got := make([]*slot, len(entries))
		for limit := 1; limit <= maxUses; limit++ {
			for i, e := range entries {
				if got[i] != nil {
					continue
				}
				lo := window(e)
				for _, s := range list {
					if s.uses < limit && !s.req.AmzDate.Before(lo) && !s.req.AmzDate.After(e.Time) {
						got[i] = s
						s.uses++
						break
					}
				}
			}
		}
		for i, e := range entries {
			if got[i] != nil {
				res.Matched++
				res.ByOperation[k.operation]++
				continue
			}
			reason := "no allowed, signed record for this access key, operation, bucket and key"
			if k.operation == "" {
				reason = "versitygw did not classify the request, so no record can match it"
			} else if len(list) > 0 {
				reason = fmt.Sprintf("%d records for this access key, operation, bucket and key, none left that was signed in [%s, %s]",
					len(list), window(e).UTC().Format("20060102T150405Z"), e.Time.UTC().Format("20060102T150405Z"))
			}
			res.Unrecorded = append(res.Unrecorded, unrecordedEntry{Entry: e, Reason: reason})
		}
	}
	for _, s := range signed {
		k := matchKey{s.AccessKeyID, s.Operation, s.Bucket, s.Key}
		for _, sl := range cands[k] {
			if sl.req != s {
				continue
			}
			switch {
			case sl.uses == 0:
				res.Unserved = append(res.Unserved, s)
			case sl.uses > 1:
				res.Replayed = append(res.Replayed, s)
			}
		}
	}
	return res
}

// readServed parses versitygw's access log at path.
func readServed(t testing.TB, path string) []servedEntry {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	served, err := parseAccessLog(data)
	if err != nil {
		t.Fatal(err)
	}
	return served
}

func readSigned(t testing.TB, auditDir string) []*signedRequest {
	t.Helper()
	signed, err := signedRequests(queryAudit(t, auditDir))
	if err != nil {
		t.Fatal(err)
	}
	return signed
}

// copyAuditDir copies a (stopped) countersign's audit directory, leaving
// out the records whose seq is in drop.
func copyAuditDir(t testing.TB, src string, drop []uint64) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "audit")
	if err := os.Mkdir(dst, 0o700); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	dropped := 0
	for _, ent := range ents {
		if !ent.Type().IsRegular() {
			continue
		}
		data, err := os.ReadFile(filepath.Join(src, ent.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(ent.Name(), ".jsonl") && len(drop) > 0 {
			var kept []byte
			for _, line := range bytes.SplitAfter(data, []byte("\n")) {
				var head struct {
					Seq *uint64 `json:"seq"`
				}
				if json.Unmarshal(line, &head) == nil && head.Seq != nil && slices.Contains(drop, *head.Seq) {
					dropped++
					continue
				}
				kept = append(kept, line...)
			}
			data = kept
		}
		if err := os.WriteFile(filepath.Join(dst, ent.Name()), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if dropped != len(drop) {
		t.Fatalf("dropped %d records of %v", dropped, drop)
	}
	return dst
}

// ---- the dedicated runs ----

// TestAccessLogCompleteness runs iceberg-go's table code, the Java client's
// Parquet workload (both addressings, and with the Java SDK's headers) and
// PyIceberg's botocore hook through one countersign into one versitygw
// with its access log on, then checks that every request versitygw served
// with countersign's keys has its allowed, signed audit record and that
// every signature countersign handed out was served, and that the audit log
// verifies. The subtests prove that the check fails on a missing record, an
// extra request made with the storage keys and a missing served request.
func TestAccessLogCompleteness(t *testing.T) {
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	// versitygw writes its log times in its local zone; run it in one with
	// a negative, half-hour offset (amz_date is UTC).
	const zone = "America/St_Johns"
	t.Setenv("TZ", zone)
	gw := startS3WithAccessLog(t)
	gw.CreateBucket(t, "lake")
	config, audit := baseConfigWithAudit(t, gw.Port, "")
	cs := startCountersign(t, config, signerEnv()...)

	t.Run("iceberg-go", func(t *testing.T) { icebergAccessLogWorkload(t, ctx, gw.s3Server, cs) })
	t.Run("java", func(t *testing.T) { javaAccessLogWorkload(t, ctx, gw.s3Server, cs) })
	t.Run("pyiceberg", func(t *testing.T) { pyAccessLogWorkload(t, gw.s3Server, cs) })
	if t.Failed() {
		t.FailNow()
	}
	workloads := time.Since(start)

	// Stop countersign (seal, final checkpoint) and verify the audit log.
	cs.stop()
	out, code := verifyAudit(t, audit.Dir, audit.VerifierKeyFile)
	if code != 0 || !strings.HasPrefix(out, "ok: countersign/conformance: records 0..") {
		t.Fatalf("countersign audit verify: exit %d\n%s", code, out)
	}
	t.Logf("countersign audit verify: %s", strings.SplitN(out, "\n", 2)[0])

	served := readServed(t, gw.logPath)
	if _, err := os.Stat(filepath.Join("/usr/share/zoneinfo", zone)); err == nil && len(served) > 0 {
		if _, off := served[0].Time.Zone(); off != -(3*3600 + 30*60) {
			t.Fatalf("versitygw logged %v, not in %s", served[0].Time, zone)
		}
	}
	signed := readSigned(t, audit.Dir)
	opts := completenessOptions{Excluded: []string{testAccessKey}}
	rep := checkCompleteness(served, signed, opts)
	if !rep.OK() {
		t.Fatalf("audit completeness against versitygw's access log:\n%s", rep)
	}
	if len(rep.Replayed) > 0 || rep.Matched != rep.Signed || rep.Served != rep.Matched {
		t.Fatalf("every signature should be served exactly once here:\n%s", rep)
	}
	t.Logf("complete: %s", rep.Summary())
	for _, op := range []string{"PutObject", "CreateMultipartUpload", "UploadPart", "CompleteMultipartUpload", "AbortMultipartUpload",
		"HeadObject", "GetObject", "ListObjectsV2", "DeleteObject", "DeleteObjects"} {
		if rep.ByOperation[op] == 0 {
			t.Fatalf("the runs served no %s through countersign: %s", op, rep.Summary())
		}
	}
	if rep.Excluded == 0 {
		t.Fatal("no request by the storage administrator in the log: the exclusion is untested")
	}

	// (a) One record removed from a copy of the audit log, for each
	// operation: the check names exactly one served request of that
	// operation without a record, and the copy no longer verifies.
	t.Run("record removed", func(t *testing.T) {
		seen := map[string]bool{}
		for _, s := range signed {
			if seen[s.Operation] {
				continue
			}
			seen[s.Operation] = true
			tampered := copyAuditDir(t, audit.Dir, s.Seqs)
			rep := checkCompleteness(served, readSigned(t, tampered), opts)
			if rep.OK() || len(rep.Unrecorded) != 1 || len(rep.Unserved) != 0 || len(rep.Invalid) != 0 {
				t.Fatalf("without the record(s) of %s the check reported:\n%s", s, rep)
			}
			if e := rep.Unrecorded[0].Entry; e.Operation() != s.Operation || e.Bucket != s.Bucket || e.Key != s.Key {
				t.Fatalf("without the record(s) of %s the check named %s", s, e)
			}
			if out, code := verifyAudit(t, tampered, audit.VerifierKeyFile); code != 1 || !strings.Contains(out, "FAIL") {
				t.Fatalf("countersign audit verify accepted a log without seq %v: exit %d\n%s", s.Seqs, code, out)
			}
			t.Logf("record(s) %v of %s removed: %s", s.Seqs, s.Operation, rep.Unrecorded[0].Entry)
		}
	})

	// (c) One served request removed from a copy of versitygw's log: the
	// signature it used is reported as never served.
	t.Run("served request removed", func(t *testing.T) {
		for i, e := range served {
			if e.Requester != signerAccessKey || e.Operation() != "UploadPart" {
				continue
			}
			rest := slices.Delete(slices.Clone(served), i, i+1)
			rep := checkCompleteness(rest, signed, opts)
			if rep.OK() || len(rep.Unserved) != 1 || len(rep.Unrecorded) != 0 {
				t.Fatalf("without %s the check reported:\n%s", e, rep)
			}
			if s := rep.Unserved[0]; s.Operation != e.Operation() || s.Key != e.Key {
				t.Fatalf("without %s the check named %s", e, s)
			}
			t.Logf("%s removed: %s reported as never served", e, rep.Unserved[0])
			return
		}
		t.Fatal("no UploadPart served")
	})

	// (b) One request sent to versitygw with countersign's storage keys,
	// around countersign: a ListObjectsV2 of the bucket, which countersign
	// also signed during the runs, within the same window.
	t.Run("request around countersign", func(t *testing.T) {
		list, err := gw.directClient(signerAccessKey, signerSecretKey).ListObjectsV2(ctx, &s3.ListObjectsV2Input{
			Bucket: aws.String("lake"), Prefix: aws.String("wh/accesslog/java/")})
		if err != nil {
			t.Fatal(err)
		}
		id, _ := awsmiddleware.GetRequestIDMetadata(list.ResultMetadata)
		rep := checkCompleteness(readServed(t, gw.logPath), signed, opts)
		if rep.OK() || len(rep.Unrecorded) != 1 || len(rep.Unserved) != 0 {
			t.Fatalf("after a request around countersign the check reported:\n%s", rep)
		}
		if e := rep.Unrecorded[0].Entry; id == "" || e.RequestID != id || e.Operation() != "ListObjectsV2" || e.Requester != signerAccessKey {
			t.Fatalf("the check named %s, not the request around countersign (request id %q)", e, id)
		}
		t.Logf("request around countersign reported: %s: %s", rep.Unrecorded[0].Entry, rep.Unrecorded[0].Reason)
	})
	t.Logf("runtime: workloads %v, total %v", workloads.Round(time.Second), time.Since(start).Round(time.Second))
}

// icebergAccessLogWorkload is TestIcebergGoEndToEnd's workload in a table
// of its own: create, three appends (one multipart), load, full and
// filtered scans, the read-only principal's scan and refused append, two
// deletes and snapshot expiry.
func icebergAccessLogWorkload(t *testing.T, ctx context.Context, srv *s3Server, cs *signerProc) {
	rec := registerSignedS3(srv)
	defer icebergRecorder.Store(nil)
	dbPath := filepath.Join(t.TempDir(), "catalog.db")
	writer := icebergCatalog(t, dbPath, srv, cs, defaultToken())
	if err := writer.CreateNamespace(ctx, table.Identifier{"analytics"}, nil); err != nil {
		t.Fatal(err)
	}
	tbl, err := writer.CreateTable(ctx, eventsIdent, eventsSchema(),
		catalog.WithPartitionSpec(&eventsSpec),
		catalog.WithLocation("s3://lake/wh/accesslog/events"),
		catalog.WithProperties(iceberg.Properties{table.ParquetCompressionKey: "uncompressed"}))
	if err != nil {
		t.Fatalf("create table: %v", err)
	}
	regions := []string{"eu", "us", "ap"}
	for i, spec := range []struct {
		first   int64
		n       int
		regions []string
		payload int
	}{{0, 300, regions, 0}, {300, 300, regions, 0}, {600, 18000, []string{"bulk"}, 1024}} {
		batch := eventRows(t, spec.first, spec.n, spec.regions, spec.payload)
		tbl, err = tbl.AppendTable(ctx, batch, 4096, nil)
		batch.Release()
		if err != nil {
			t.Fatalf("append %d: %v", i, err)
		}
	}
	if ops := opCounts(rec.Exchanges()); ops["UploadPart"] == 0 {
		t.Fatalf("no multipart upload: %s", opSummary(ops))
	}
	if tbl, err = writer.LoadTable(ctx, eventsIdent); err != nil {
		t.Fatalf("load: %v", err)
	}
	if ids, _ := scanIDs(t, ctx, tbl, nil); !slices.Equal(ids, idRange(0, 18600)) {
		t.Fatalf("full scan: %d rows", len(ids))
	}
	if ids, _ := scanIDs(t, ctx, tbl, iceberg.EqualTo(iceberg.Reference("region"), "eu")); len(ids) != 200 {
		t.Fatalf("filtered scan: %d rows", len(ids))
	}

	reader := icebergCatalog(t, dbPath, srv, cs, testIdP.Mint("lake-reader", []string{"lakehouse-readers"}, nil))
	rtbl, err := reader.LoadTable(ctx, eventsIdent)
	if err != nil {
		t.Fatalf("load as reader: %v", err)
	}
	if ids, _ := scanIDs(t, ctx, rtbl, iceberg.GreaterThanEqual(iceberg.Reference("id"), int64(500))); len(ids) != 18100 {
		t.Fatalf("reader's scan: %d rows", len(ids))
	}
	batch := eventRows(t, 100000, 10, regions, 0)
	defer batch.Release()
	if _, err := rtbl.AppendTable(ctx, batch, 1024, nil); err == nil || !strings.Contains(err.Error(), "HTTP 403") {
		t.Fatalf("read-only append: %v, want countersign's 403", err)
	}

	if tbl, err = tbl.Delete(ctx, iceberg.LessThan(iceberg.Reference("id"), int64(60)), nil); err != nil {
		t.Fatalf("delete id < 60: %v", err)
	}
	if tbl, err = tbl.Delete(ctx, iceberg.EqualTo(iceberg.Reference("region"), "bulk"), nil); err != nil {
		t.Fatalf("delete region = bulk: %v", err)
	}
	txn := tbl.NewTransaction()
	if err := txn.ExpireSnapshots(table.WithOlderThan(0), table.WithRetainLast(1)); err != nil {
		t.Fatal(err)
	}
	if tbl, err = txn.Commit(ctx); err != nil {
		t.Fatalf("expire snapshots: %v", err)
	}
	if ids, _ := scanIDs(t, ctx, tbl, nil); !slices.Equal(ids, idRange(60, 600)) {
		t.Fatalf("after deletes and expiry: %d rows", len(ids))
	}
	exs := rec.Exchanges()
	requireCleanExchanges(t, exs)
	if ops := opCounts(exs); ops["DeleteObject"] == 0 {
		t.Fatalf("snapshot expiry deleted nothing: %s", opSummary(ops))
	}
	t.Logf("iceberg-go signed: %s", opSummary(opCounts(exs)))
}

// javaAccessLogWorkload is TestJavaClientWorkload's Parquet workload, in
// path-style and virtual-hosted addressing and with the Java SDK's
// headers; countersign's default Cache-Control: no-cache keeps the client
// from reusing a signature.
func javaAccessLogWorkload(t *testing.T, ctx context.Context, srv *s3Server, cs *signerProc) {
	for _, tc := range []struct {
		name          string
		pathStyle     bool
		noPayloadHash bool
	}{{"path-style", true, false}, {"virtual-hosted", false, false}, {"java-sdk-headers", true, true}} {
		rec := &remotesigning.Recorder{}
		var opts []func(*middleware.Stack) error
		if tc.noPayloadHash {
			opts = append(opts, withoutPayloadHash)
		}
		c := javaClient(srv, newJavaSigner(t, cs, defaultToken(), rec, nil, nil), tc.pathStyle, opts...)
		parquetWorkload(t, ctx, c, srv, "lake", "wh/accesslog/java/"+tc.name+"/")
		exs := rec.Exchanges()
		requireJavaShapedRequests(t, exs)
		requireCleanExchanges(t, exs)
		for _, ex := range exs {
			if ex.FromCache || ex.Attempts != 1 {
				t.Fatalf("%s %s: cached %v, %d sign attempts", ex.Request.Method, ex.Request.URI, ex.FromCache, ex.Attempts)
			}
		}
		t.Logf("java %s signed: %s", tc.name, opSummary(opCounts(exs)))
	}
}

// pyAccessLogWorkload is TestPyIcebergBotocore's workload. Its
// DeleteObjects carries no body, so countersign refuses to sign it (a
// record without signing, and nothing sent); the keys are then deleted one
// by one.
func pyAccessLogWorkload(t *testing.T, srv *s3Server, cs *signerProc) {
	res := runPyIceberg(t, srv, cs, defaultToken(), "wh/accesslog/py/", "workload")
	for _, r := range res.Results {
		if !r.OK && r.Step != "DeleteObjects" {
			t.Fatalf("step %s failed: %s %s", r.Step, r.ErrorType, r.Error)
		}
	}
	if last := res.Results[len(res.Results)-1]; last.Step != "ListObjectsV2 after delete" || string(last.Value) != "[]" {
		t.Fatalf("objects left: %+v", last)
	}
	ops := map[string]int{}
	for _, o := range res.Observations {
		if o.Response != nil {
			ops[o.Operation]++
		}
	}
	t.Logf("pyiceberg signed: %s (%d requests sent)", opSummary(ops), len(res.Sent))
}

// TestAccessLogUnsentAndReplayed: with real requests, a signature obtained
// and deliberately not sent is reported as never served, and a signed
// request sent twice is reported as a served request without its own
// record unless the check allows two served requests per signature.
func TestAccessLogUnsentAndReplayed(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	gw := startS3WithAccessLog(t)
	gw.CreateBucket(t, "lake")
	gw.adminPut(t, "lake", "wh/t/data/a.parquet", []byte("PAR1 a PAR1"))
	config, audit := baseConfigWithAudit(t, gw.Port, "")
	cs := startCountersign(t, config, signerEnv()...)

	// Served once each.
	c := javaClient(gw.s3Server, newJavaSigner(t, cs, defaultToken(), nil, nil, nil), true)
	if _, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("lake"), Key: aws.String("wh/t/data/a.parquet")}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("lake"), Key: aws.String("wh/t/data/b.parquet"), Body: strings.NewReader("PAR1")}); err != nil {
		t.Fatal(err)
	}

	// Signed, then dropped before it is sent.
	errNotSent := errors.New("deliberately not sent")
	unsentRec := &remotesigning.Recorder{}
	drop := func(stack *middleware.Stack) error {
		return stack.Finalize.Insert(middleware.FinalizeMiddlewareFunc("DropSigned",
			func(context.Context, middleware.FinalizeInput, middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
				return middleware.FinalizeOutput{}, middleware.Metadata{}, errNotSent
			}), "Signing", middleware.After)
	}
	unsent := javaClient(gw.s3Server, newJavaSigner(t, cs, defaultToken(), unsentRec, nil, nil), true, drop)
	if _, err := unsent.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("lake"), Key: aws.String("wh/t/data/a.parquet")}); !errors.Is(err, errNotSent) {
		t.Fatalf("GetObject: %v, want the request dropped after signing", err)
	}
	unsentSig := signatureDigest(t, unsentRec.Exchanges())

	// Signed once, sent twice: a copy of the signed request goes out first.
	replayRec := &remotesigning.Recorder{}
	twice := func(stack *middleware.Stack) error {
		return stack.Finalize.Insert(middleware.FinalizeMiddlewareFunc("SendTwice",
			func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
				req := in.Request.(*smithyhttp.Request).Build(ctx)
				resp, err := gw.httpClient().Do(req.Clone(ctx))
				if err != nil {
					return middleware.FinalizeOutput{}, middleware.Metadata{}, err
				}
				resp.Body.Close()
				if resp.StatusCode != 200 {
					return middleware.FinalizeOutput{}, middleware.Metadata{}, fmt.Errorf("first send: %s", resp.Status)
				}
				return next.HandleFinalize(ctx, in)
			}), "Signing", middleware.After)
	}
	replayer := javaClient(gw.s3Server, newJavaSigner(t, cs, defaultToken(), replayRec, nil, nil), true, twice)
	if _, err := replayer.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("lake"), Key: aws.String("wh/t/data/b.parquet")}); err != nil {
		t.Fatal(err)
	}
	replayedSig := signatureDigest(t, replayRec.Exchanges())

	cs.stop()
	if out, code := verifyAudit(t, audit.Dir, audit.VerifierKeyFile); code != 0 {
		t.Fatalf("countersign audit verify: exit %d\n%s", code, out)
	}
	served := readServed(t, gw.logPath)
	signed := readSigned(t, audit.Dir)
	rep := checkCompleteness(served, signed, completenessOptions{Excluded: []string{testAccessKey}})
	t.Logf("check:\n%s", rep)
	if len(rep.Unserved) != 1 || rep.Unserved[0].Signature != unsentSig || rep.Unserved[0].Operation != "GetObject" {
		t.Fatalf("the unsent signature (signature_sha256 %s) is not the one reported as never served:\n%s", unsentSig, rep)
	}
	if len(rep.Unrecorded) != 1 || rep.Unrecorded[0].Entry.Operation() != "HeadObject" || rep.Unrecorded[0].Entry.Key != "wh/t/data/b.parquet" {
		t.Fatalf("the second serving of one signature is not reported:\n%s", rep)
	}
	rep = checkCompleteness(served, signed, completenessOptions{Excluded: []string{testAccessKey}, MaxServedPerSignature: 2})
	if len(rep.Unrecorded) != 0 || len(rep.Replayed) != 1 || rep.Replayed[0].Signature != replayedSig {
		t.Fatalf("allowing two served requests per signature:\n%s", rep)
	}
}

// signatureDigest is signing.signature_sha256 for the one signing in exs:
// the SHA-256 of the hex signature in the Authorization header returned.
func signatureDigest(t *testing.T, exs []remotesigning.Exchange) string {
	t.Helper()
	if len(exs) != 1 || exs[0].Result == nil {
		t.Fatalf("want one signing, got %+v", exs)
	}
	_, sig, ok := strings.Cut(headerValue(exs[0].Result.Headers, "Authorization"), "Signature=")
	if !ok {
		t.Fatalf("no signature in %v", exs[0].Result.Headers)
	}
	sum := sha256.Sum256([]byte(sig))
	return hex.EncodeToString(sum[:])
}

// ---- the checker on its own ----

// vgwLine formats a line as s3log.FileLogger.writeLog does.
func vgwLine(bucket string, at time.Time, requester, requestID, action, key, uri string, status int, totalMS int64) string {
	return fmt.Sprintf("%v %v %v %v %v %v %v %v %v %v %v %v %v %v %v %v %v %v %v %v %v %v %v %v %v %v",
		"-", dash(bucket), fmt.Sprintf("[%v]", at.Format(vgwTimeLayout)), "127.0.0.1", dash(requester), requestID, action, dash(key), uri,
		status, "-", 0, 0, totalMS, totalMS, "-", "aws-sdk-go-v2/1.41.0 ua/2.1 os/linux lang/go#1.26 md/GOOS#linux", "-", "host-id",
		"SigV4", "-", "AuthHeader", "s3.us-east-1.amazonaws.com", "-", "arn:aws:s3:::"+bucket+"/"+key, "Yes")
}

func TestAccessLogParse(t *testing.T) {
	zone := time.FixedZone("", -7*3600)
	at := time.Date(2026, 11, 30, 5, 4, 3, 0, zone)
	log := strings.Join([]string{
		"log starts 2026-11-30 05:04:00.1 -0700 -0700",
		vgwLine("lake", at, signerAccessKey, "R1", "s3_PutObject", "wh/d/00000-0-small file.parquet",
			"/lake/wh/d/00000-0-small%20file.parquet?x-id=PutObject", 200, 12),
		vgwLine("lake", at, signerAccessKey, "R2", "s3_GetObject", "wh/d/a b/c d.parquet", "/wh/d/a%20b/c%20d.parquet", 206, 0),
		vgwLine("lake", at, signerAccessKey, "R3", "s3_ListObjectsV2", "", "/lake?list-type=2&prefix=wh%2F", 200, 1),
		vgwLine("lake", at, signerAccessKey, "R4", "s3_DeleteObjects", "", "/?delete", 200, 1),
		vgwLine("lake", at, "", "R5", "s3_HeadObject", "k", "/lake/k", 403, 0),
		vgwLine("lake", at, signerAccessKey, "R6", "s3_GetObject", "wh/x 200 - 0 0 0 0 y", "/lake/wh/x%20200%20-%200%200%200%200%20y", 200, 0),
	}, "\n") + "\n"
	got, err := parseAccessLog([]byte(log))
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		op, bucket, key, requester string
		status                     int
	}{
		{"PutObject", "lake", "wh/d/00000-0-small file.parquet", signerAccessKey, 200},
		{"GetObject", "lake", "wh/d/a b/c d.parquet", signerAccessKey, 206},
		{"ListObjectsV2", "lake", "", signerAccessKey, 200},
		{"DeleteObjects", "lake", "", signerAccessKey, 200},
		{"HeadObject", "lake", "k", "", 403},
		{"GetObject", "lake", "wh/x 200 - 0 0 0 0 y", signerAccessKey, 200},
	}
	if len(got) != len(want) {
		t.Fatalf("parsed %d entries: %+v", len(got), got)
	}
	for i, w := range want {
		g := got[i]
		if g.Operation() != w.op || g.Bucket != w.bucket || g.Key != w.key || g.Requester != w.requester || g.Status != w.status ||
			!g.Time.Equal(at) || g.Line != i+2 || g.RequestID != fmt.Sprintf("R%d", i+1) {
			t.Errorf("entry %d: %+v, want %+v at %v", i, g, w, at)
		}
	}
	if got[0].TotalMS != 12 {
		t.Errorf("total time %d", got[0].TotalMS)
	}
	for _, bad := range []string{
		"garbage",
		vgwLine("lake", at, signerAccessKey, "R", "s3_GetObject", "other-key", "/lake/wh/k", 200, 0),
		strings.Replace(vgwLine("lake", at, signerAccessKey, "R", "s3_GetObject", "k", "/lake/k", 200, 0), "November", "Nov", 1),
	} {
		if _, err := parseAccessLog([]byte(bad + "\n")); err == nil {
			t.Errorf("parsed %q", bad)
		}
	}
	if (servedEntry{Action: "ActionUnDetected"}).Operation() != "" || (servedEntry{Action: "s3_ListAllMyBuckets"}).Operation() != "ListBuckets" {
		t.Error("action mapping")
	}
}

func TestAccessLogMatching(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	local := time.FixedZone("", 2*3600)
	seq := uint64(0)
	rec := func(op, role, key, requestID string, amz time.Time, decision string, signed bool) auditRecord {
		r := auditRecord{Seq: seq, Kind: "access", RequestID: requestID, Operation: op, Bucket: "lake", Key: key, Role: role, Decision: decision, Time: amz}
		seq++
		if signed {
			r.Signing = &struct {
				AccessKeyID            string `json:"access_key_id"`
				AmzDate                string `json:"amz_date"`
				CanonicalRequestSHA256 string `json:"canonical_request_sha256"`
				SignatureSHA256        string `json:"signature_sha256"`
			}{signerAccessKey, amz.UTC().Format("20060102T150405Z"), "c", "sig-" + requestID}
		}
		return r
	}
	entry := func(op, key string, at time.Time, totalMS int64) servedEntry {
		return servedEntry{Time: at.In(local), Requester: signerAccessKey, Action: "s3_" + op, Bucket: "lake", Key: key, TotalMS: totalMS, Status: 200}
	}
	recs := []auditRecord{
		rec("GetObject", "object", "k", "a", t0, "allow", true),
		rec("GetObject", "object", "k", "b", t0, "allow", true), // same second, same object
		rec("DeleteObjects", "delete-key", "x", "d", t0, "allow", true),
		rec("DeleteObjects", "delete-key", "y", "d", t0, "allow", true),
		rec("PutObject", "object", "denied", "e", t0, "deny", false),
		rec("PutObject", "object", "big", "f", t0, "allow", true),
		rec("CopyObject", "object", "dst", "g", t0, "allow", true),
		rec("CopyObject", "copy-source", "src", "g", t0, "allow", true),
		rec("ListObjectsV2", "bucket", "", "h", t0, "allow", true),
	}
	signed, err := signedRequests(recs)
	if err != nil {
		t.Fatal(err)
	}
	if len(signed) != 6 || signed[2].Operation != "DeleteObjects" || !slices.Equal(signed[2].Keys, []string{"x", "y"}) || signed[2].Key != "" {
		t.Fatalf("signed requests: %v", signed)
	}
	served := []servedEntry{
		entry("GetObject", "k", t0, 3),
		entry("GetObject", "k", t0.Add(time.Second), 3),
		entry("DeleteObjects", "", t0.Add(2*time.Second), 1),
		// A 20 minute upload: checked when it began.
		entry("PutObject", "big", t0.Add(sigV4Validity+20*time.Minute), (20*time.Minute + 30*time.Second).Milliseconds()),
		entry("CopyObject", "dst", t0, 0),
		entry("ListObjectsV2", "", t0.Add(sigV4Validity), 0),
		{Time: t0, Requester: testAccessKey, Action: "s3_CreateBucket", Bucket: "lake"}, // the administrator
	}
	opts := completenessOptions{Excluded: []string{testAccessKey}}
	if rep := checkCompleteness(served, signed, opts); !rep.OK() || rep.Matched != 6 || rep.Excluded != 1 {
		t.Fatalf("complete run:\n%s", rep)
	}

	check := func(name string, served []servedEntry, signed []*signedRequest, opts completenessOptions, unrecorded, unserved, invalid int) {
		t.Helper()
		rep := checkCompleteness(served, signed, opts)
		if len(rep.Unrecorded) != unrecorded || len(rep.Unserved) != unserved || len(rep.Invalid) != invalid || rep.OK() {
			t.Errorf("%s: want %d unrecorded, %d unserved, %d invalid:\n%s", name, unrecorded, unserved, invalid, rep)
		}
	}
	without := func(s []*signedRequest, i int) []*signedRequest { return slices.Delete(slices.Clone(s), i, i+1) }
	check("a GetObject record missing", served, without(signed, 1), opts, 1, 0, 0)
	check("the DeleteObjects request missing", served, without(signed, 2), opts, 1, 0, 0)
	check("a served GetObject missing", slices.Delete(slices.Clone(served), 0, 1), signed, opts, 0, 1, 0)
	extra := entry("GetObject", "k", t0.Add(2*time.Second), 0)
	check("a third GetObject of k", append(slices.Clone(served), extra), signed, opts, 1, 0, 0)
	late := slices.Clone(served)
	late[5] = entry("ListObjectsV2", "", t0.Add(sigV4Validity+2*time.Second), 0)
	check("served after the validity window", late, signed, opts, 1, 1, 0)
	early := slices.Clone(served)
	early[5] = entry("ListObjectsV2", "", t0.Add(-time.Second), 0)
	check("served before it was signed", early, signed, opts, 1, 1, 0)
	other := slices.Clone(served)
	other[4].Requester = "SOMEONEELSE"
	check("served under another key", other, signed, opts, 1, 1, 0)
	unknown := slices.Clone(served)
	unknown[4].Action = "ActionUnDetected"
	check("not classified by versitygw", unknown, signed, opts, 1, 1, 0)
	check("countersign signing with the administrator's key", served, signed, completenessOptions{Excluded: []string{testAccessKey, signerAccessKey}}, 0, 0, 6)

	// One signature, two served requests: refused by default, allowed
	// (and listed) with MaxServedPerSignature.
	twice := append(slices.Clone(served), entry("ListObjectsV2", "", t0.Add(time.Minute), 0))
	check("a signature served twice", twice, signed, opts, 1, 0, 0)
	if rep := checkCompleteness(twice, signed, completenessOptions{Excluded: opts.Excluded, MaxServedPerSignature: 2}); !rep.OK() || len(rep.Replayed) != 1 {
		t.Errorf("a signature served twice, allowed:\n%s", rep)
	}
}

// The matching is maximum: a greedy choice of the wrong record would leave
// a served request unmatched that an assignment exists for.
func TestAccessLogMatchingIsMaximum(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	sig := func(at time.Time) *signedRequest {
		return &signedRequest{AccessKeyID: signerAccessKey, Operation: "GetObject", Bucket: "lake", Key: "k", AmzDate: at}
	}
	at := func(d time.Duration) servedEntry {
		return servedEntry{Time: t0.Add(d), Requester: signerAccessKey, Action: "s3_GetObject", Bucket: "lake", Key: "k"}
	}
	// The signature at t0 is only valid for the first request; the one at
	// t0+10m for both. Served in time order, the first must take t0.
	signed := []*signedRequest{sig(t0.Add(10 * time.Minute)), sig(t0)}
	served := []servedEntry{at(10 * time.Minute), at(20 * time.Minute)}
	if rep := checkCompleteness(served, signed, completenessOptions{}); !rep.OK() {
		t.Fatalf("%s", rep)
	}
}
