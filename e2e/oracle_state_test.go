package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// objectState is what the oracle observes of one object.
type objectState struct {
	etag    string
	size    int64
	tags    string // "k=v" pairs, sorted, comma-joined
	content []byte // nil unless fetched
}

// snapshot is the observable state of the buckets: every object and
// every multipart upload with its parts.
type snapshot struct {
	objects map[string]objectState // "bucket/key"
	uploads map[string]string      // "bucket/key?uploadId=ID" -> "1:etag,2:etag"
}

// take observes buckets with the root keys, independently of countersign.
// A full snapshot reads every object's tags, and the content of every
// object that is new or whose ETag or size differs from prev's (it reuses
// prev's content otherwise). A quick one lists objects and uploads only,
// and takes tags and content from prev where ETag and size are unchanged:
// it is for requests the server refused, which must change nothing, and it
// misses a change of tags alone.
func take(ctx context.Context, c *s3.Client, buckets []string, prev *snapshot, full bool) (*snapshot, error) {
	s := &snapshot{objects: map[string]objectState{}, uploads: map[string]string{}}
	var mu sync.Mutex
	var g group
	for _, b := range buckets {
		g.Go(func() error {
			out, err := c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(b)})
			if err != nil {
				return fmt.Errorf("list %s: %w", b, err)
			}
			for _, o := range out.Contents {
				g.Go(func() error {
					name := b + "/" + aws.ToString(o.Key)
					st := objectState{etag: aws.ToString(o.ETag), size: aws.ToInt64(o.Size)}
					p, same := prev.object(name)
					same = same && p.etag == st.etag && p.size == st.size && p.content != nil
					if same {
						st.content, st.tags = p.content, p.tags
					}
					if full {
						tags, err := c.GetObjectTagging(ctx, &s3.GetObjectTaggingInput{Bucket: aws.String(b), Key: o.Key})
						if err != nil {
							return fmt.Errorf("tags of %s: %w", name, err)
						}
						var kv []string
						for _, t := range tags.TagSet {
							kv = append(kv, aws.ToString(t.Key)+"="+aws.ToString(t.Value))
						}
						sort.Strings(kv)
						st.tags = strings.Join(kv, ",")
					}
					if full && !same || st.content == nil {
						got, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(b), Key: o.Key})
						if err != nil {
							return fmt.Errorf("get %s: %w", name, err)
						}
						defer got.Body.Close()
						if st.content, err = io.ReadAll(got.Body); err != nil {
							return err
						}
						if st.content == nil {
							st.content = []byte{}
						}
					}
					mu.Lock()
					s.objects[name] = st
					mu.Unlock()
					return nil
				})
			}
			return nil
		})
		g.Go(func() error {
			ups, err := c.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: aws.String(b)})
			if err != nil {
				return fmt.Errorf("list uploads of %s: %w", b, err)
			}
			for _, u := range ups.Uploads {
				parts, err := c.ListParts(ctx, &s3.ListPartsInput{Bucket: aws.String(b), Key: u.Key, UploadId: u.UploadId})
				if err != nil {
					return fmt.Errorf("parts of %s: %w", aws.ToString(u.Key), err)
				}
				var ps []string
				for _, p := range parts.Parts {
					ps = append(ps, fmt.Sprintf("%d:%s", aws.ToInt32(p.PartNumber), aws.ToString(p.ETag)))
				}
				mu.Lock()
				s.uploads[b+"/"+aws.ToString(u.Key)+"?uploadId="+aws.ToString(u.UploadId)] = strings.Join(ps, ",")
				mu.Unlock()
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *snapshot) object(name string) (objectState, bool) {
	if s == nil {
		return objectState{}, false
	}
	o, ok := s.objects[name]
	return o, ok
}

// changedObjects lists the objects added, removed or changed (content,
// ETag or tags) between a and b, sorted.
func changedObjects(a, b *snapshot) []string {
	var out []string
	for n, x := range a.objects {
		y, ok := b.objects[n]
		if !ok || x.etag != y.etag || x.size != y.size || x.tags != y.tags || !bytes.Equal(x.content, y.content) {
			out = append(out, n)
		}
	}
	for n := range b.objects {
		if _, ok := a.objects[n]; !ok {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

func changedUploads(a, b *snapshot) []string {
	var out []string
	for n, x := range a.uploads {
		if y, ok := b.uploads[n]; !ok || x != y {
			out = append(out, n)
		}
	}
	for n := range b.uploads {
		if _, ok := a.uploads[n]; !ok {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

// decision is what countersign decided and audited for one sign request.
type decision struct {
	operation string
	target    string // "bucket/key", or "bucket" for bucket-level operations
	bucket    string
	version   string
	prefix    *string
	copyFrom  string // "bucket/key" of a copy source
	deletes   []string
}

// auditRecord is the part of an access record the oracle reads.
type auditRecord struct {
	Kind      string  `json:"kind"`
	RequestID string  `json:"request_id"`
	Operation string  `json:"operation"`
	Bucket    string  `json:"bucket"`
	Key       string  `json:"key"`
	VersionID string  `json:"version_id"`
	Prefix    *string `json:"prefix"`
	Role      string  `json:"role"`
	Decision  string  `json:"decision"`
	Status    int     `json:"status"`
}

// readAudit returns the access records of the request id in dir's
// segments. countersign answers only once its records are durable, so
// they are there when the answer is.
func readAudit(dir, requestID string) ([]auditRecord, error) {
	segs, err := filepath.Glob(filepath.Join(dir, "seg-*.jsonl"))
	if err != nil {
		return nil, err
	}
	var out []auditRecord
	for _, seg := range segs {
		data, err := os.ReadFile(seg)
		if err != nil {
			return nil, err
		}
		if i := bytes.IndexByte(data, 0); i >= 0 {
			data = data[:i]
		}
		for _, line := range bytes.Split(data, []byte("\n")) {
			if !bytes.Contains(line, []byte(`"request_id":"`+requestID+`"`)) {
				continue
			}
			var r auditRecord
			if err := json.Unmarshal(line, &r); err != nil {
				return nil, fmt.Errorf("%s: %v", seg, err)
			}
			if r.Kind == "access" && r.RequestID == requestID {
				out = append(out, r)
			}
		}
	}
	return out, nil
}

// decisionOf folds a signed request's records into one decision.
func decisionOf(recs []auditRecord) (decision, error) {
	var d decision
	if len(recs) == 0 {
		return d, fmt.Errorf("no audit record")
	}
	d.operation = recs[0].Operation
	for _, r := range recs {
		if r.Decision != "allow" || r.Status != 200 || r.Operation != d.operation {
			return d, fmt.Errorf("record %+v of a signed request is not an allowed %s", r, d.operation)
		}
		name := r.Bucket + "/" + r.Key
		switch r.Role {
		case "object":
			d.target, d.bucket, d.version = name, r.Bucket, r.VersionID
		case "bucket":
			d.target, d.bucket, d.prefix = r.Bucket, r.Bucket, r.Prefix
		case "copy-source":
			d.copyFrom = name
		case "delete-key":
			d.bucket = r.Bucket
			d.deletes = append(d.deletes, name)
		default:
			return d, fmt.Errorf("record with role %q", r.Role)
		}
	}
	return d, nil
}

// check says how what the server did (before -> after, and its answer to
// sent) departs from what was decided; nil when it did exactly that.
func check(d decision, before, after *snapshot, sent wireReq, resp wireResp) []string {
	var problems []string
	fail := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	objs, ups := changedObjects(before, after), changedUploads(before, after)
	only := func(allowed ...string) {
		for _, c := range objs {
			if !slices.Contains(allowed, c) {
				fail("changed object %s, not decided (%s on %s)", c, d.operation, d.target)
			}
		}
	}
	noUploads := func() {
		for _, u := range ups {
			fail("changed multipart upload %s, not decided (%s on %s)", u, d.operation, d.target)
		}
	}
	uploadsOf := func(target string, mayAdd, mayRemove bool) {
		for _, u := range ups {
			_, inBefore := before.uploads[u]
			_, inAfter := after.uploads[u]
			switch {
			case !strings.HasPrefix(u, target+"?uploadId="):
				fail("changed multipart upload %s, not decided (%s on %s)", u, d.operation, d.target)
			case !inBefore && !mayAdd:
				fail("created multipart upload %s (%s may not)", u, d.operation)
			case !inAfter && !mayRemove:
				fail("removed multipart upload %s (%s may not)", u, d.operation)
			}
		}
	}
	unchanged := func() { only(); noUploads() }
	was, had := before.objects[d.target]
	now, has := after.objects[d.target]

	switch d.operation {
	case "GetObject", "HeadObject":
		unchanged()
		if !had {
			fail("%s of %s succeeded, but the object does not exist", d.operation, d.target)
			break
		}
		if etag := resp.header.Get("ETag"); etag != was.etag {
			fail("%s answered with ETag %s, but %s has %s: another object was read", d.operation, etag, d.target, was.etag)
		}
		if d.operation == "GetObject" && !bytes.Contains(was.content, resp.body) {
			fail("GetObject returned %q, which is not %s's content", clip(resp.body), d.target)
		}
		if d.operation == "HeadObject" && len(resp.body) != 0 {
			fail("HeadObject returned a body")
		}
	case "GetObjectTagging":
		unchanged()
		var tagging struct {
			Tags []struct{ Key, Value string } `xml:"TagSet>Tag"`
		}
		if err := xml.Unmarshal(resp.body, &tagging); err != nil {
			fail("GetObjectTagging answer: %v", err)
		}
		var kv []string
		for _, t := range tagging.Tags {
			kv = append(kv, t.Key+"="+t.Value)
		}
		sort.Strings(kv)
		if got := strings.Join(kv, ","); !had || got != was.tags {
			fail("GetObjectTagging returned tags %q, but %s has %q", got, d.target, was.tags)
		}
	case "ListObjectsV2", "ListObjects":
		unchanged()
		var list struct {
			Name     string
			Prefix   string
			Contents []struct{ Key string }
		}
		if err := xml.Unmarshal(resp.body, &list); err != nil {
			fail("%s answer: %v", d.operation, err)
		}
		prefix := ""
		if d.prefix != nil {
			prefix = *d.prefix
		}
		if list.Name != d.bucket || list.Prefix != prefix {
			fail("%s listed bucket %q prefix %q, decided bucket %q prefix %q", d.operation, list.Name, list.Prefix, d.bucket, prefix)
		}
		for _, c := range list.Contents {
			if !strings.HasPrefix(c.Key, prefix) {
				fail("%s listed %q, outside the decided prefix %q", d.operation, c.Key, prefix)
			}
		}
	case "ListParts":
		unchanged()
		var lp struct{ Bucket, Key string }
		if err := xml.Unmarshal(resp.body, &lp); err != nil {
			fail("ListParts answer: %v", err)
		}
		if lp.Bucket+"/"+lp.Key != d.target {
			fail("ListParts listed %s/%s, decided %s", lp.Bucket, lp.Key, d.target)
		}
	case "HeadBucket", "ListMultipartUploads":
		unchanged()
	case "PutObject":
		only(d.target)
		noUploads()
		switch {
		case !has:
			fail("PutObject succeeded, but %s does not exist", d.target)
		case !bytes.Equal(now.content, sent.body):
			fail("PutObject stored %q in %s, not the body sent (%q)", clip(now.content), d.target, clip(sent.body))
		case now.tags != "":
			fail("PutObject left tags %q on %s that no one decided (s3:PutObjectTagging)", now.tags, d.target)
		}
		if len(resp.body) != 0 {
			fail("PutObject answered with a body: %q", clip(resp.body))
		}
	case "CopyObject":
		only(d.target)
		noUploads()
		src, ok := before.objects[d.copyFrom]
		switch {
		case !has:
			fail("CopyObject succeeded, but %s does not exist", d.target)
		case !ok:
			fail("CopyObject succeeded, but its decided source %s does not exist", d.copyFrom)
		case !bytes.Equal(now.content, src.content):
			fail("CopyObject wrote %q to %s, which is not the decided source %s (%q)", clip(now.content), d.target, d.copyFrom, clip(src.content))
		}
	case "DeleteObject":
		only(d.target)
		noUploads()
		if has {
			fail("DeleteObject succeeded, but %s is still there", d.target)
		}
	case "DeleteObjects":
		only(d.deletes...)
		noUploads()
		for _, c := range objs {
			if _, ok := after.objects[c]; ok {
				fail("DeleteObjects changed %s instead of deleting it", c)
			}
		}
	case "PutObjectTagging", "DeleteObjectTagging":
		only(d.target)
		noUploads()
		if had && (!has || !bytes.Equal(was.content, now.content)) {
			fail("%s changed %s's content", d.operation, d.target)
		}
		if d.operation == "DeleteObjectTagging" && has && now.tags != "" {
			fail("DeleteObjectTagging left tags %q", now.tags)
		}
	case "CreateMultipartUpload":
		only()
		uploadsOf(d.target, true, false)
	case "UploadPart":
		only()
		uploadsOf(d.target, false, false)
	case "AbortMultipartUpload":
		only()
		uploadsOf(d.target, false, true)
	case "CompleteMultipartUpload":
		only(d.target)
		uploadsOf(d.target, false, true)
	default:
		fail("the oracle does not know what %s may change", d.operation)
	}
	return problems
}

func clip(b []byte) string {
	if len(b) > 80 {
		return string(b[:80]) + "..."
	}
	return string(b)
}

// group runs functions concurrently and keeps the first error; a function
// may start more (before it returns).
type group struct {
	wg   sync.WaitGroup
	once sync.Once
	err  error
}

func (g *group) Go(f func() error) {
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		if err := f(); err != nil {
			g.once.Do(func() { g.err = err })
		}
	}()
}

func (g *group) Wait() error {
	g.wg.Wait()
	return g.err
}
