package generate

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/countersign/countersign/audit"
)

// requester builds a job's records the way the server does for one sign
// request: one record per object, a principal with issuer, groups, jti
// and token, the policy's decision and the signing digests.
type requester struct {
	node       string
	principals []*audit.Principal
	n          uint64 // requests so far, for request ids and digests
}

func newRequester(node string, names []string) *requester {
	r := &requester{node: node}
	for i, name := range names {
		groups := []string{"analytics"}
		if i < len(servicePrincipals) {
			groups = []string{"etl-writers", "service"}
		}
		tok := sha256.Sum256([]byte("token-" + name))
		r.principals = append(r.principals, &audit.Principal{
			Issuer:      "https://idp.example.com/realms/lakehouse",
			ID:          name,
			Groups:      groups,
			JTI:         fmt.Sprintf("%08x-9a4d-4c1e-8f61-%012x", i, i*7919),
			TokenSHA256: tok,
		})
	}
	return r
}

// hex64 is a deterministic stand-in for a SHA-256 digest.
func (r *requester) hex64(salt byte) string {
	var b [32]byte
	binary.BigEndian.PutUint64(b[:], r.n)
	b[8] = salt
	sum := sha256.Sum256(b[:])
	return hex.EncodeToString(sum[:])
}

// records appends the records of the job's next request to out.
func (r *requester) records(out []*audit.Record, s *sim, j *job, at time.Time) []*audit.Record {
	r.n++
	t := s.tables[j.table]
	base := audit.Record{
		Kind:           audit.KindAccess,
		SourceIP:       fmt.Sprintf("10.12.%d.%d", j.principal%16, 10+j.table%200),
		RequestID:      fmt.Sprintf("%s-%016x", r.node, r.n),
		Principal:      r.principals[j.principal],
		Region:         "us-east-1",
		Table:          &audit.Table{Prefix: "prod", Namespace: []string{t.namespace}, Name: t.name},
		Bucket:         t.bucket,
		Role:           audit.RoleObject,
		Decision:       audit.DecisionAllow,
		Status:         200,
		PolicyRevision: "sha256:9f2c4e1a7b3d",
		EvalMicros:     int64(8 + r.n%40),
	}
	signing := func(headers ...string) *audit.Signing {
		return &audit.Signing{
			AccessKeyID:            "AKIAIOSFODNN7EXAMPLE",
			Scope:                  at.Format("20060102") + "/us-east-1/s3/aws4_request",
			AmzDate:                at.Format("20060102T150405Z"),
			SignedHeaders:          headers,
			Payload:                "UNSIGNED-PAYLOAD",
			CanonicalRequestSHA256: r.hex64(1),
			SignatureSHA256:        r.hex64(2),
		}
	}
	add := func(rec audit.Record) {
		out = append(out, &rec)
	}
	switch j.kind {
	case jobScan:
		rec := base
		rec.Operation, rec.Action, rec.Access = "GetObject", "s3:GetObject", "read"
		n := t.first + (j.cursor-t.first)%max(1, t.files-t.first)
		j.cursor++
		rec.Key = t.dataKey(n)
		rec.Signing = signing("host", "range", "x-amz-content-sha256", "x-amz-date")
		add(rec)
	case jobWrite:
		rec := base
		rec.Operation, rec.Action, rec.Access = "PutObject", "s3:PutObject", "write"
		rec.Signing = signing("content-length", "host", "x-amz-content-sha256", "x-amz-date")
		rec.Signing.Payload = r.hex64(3)
		if j.left == 0 {
			rec.Key = fmt.Sprintf("%s/metadata/%05d-%s.metadata.json", t.location(), t.files, r.hex64(4)[:12])
		} else {
			rec.Key = t.dataKey(t.files)
			t.files++
		}
		add(rec)
	case jobDelete:
		rec := base
		rec.Operation, rec.Action, rec.Access, rec.Role = "DeleteObjects", "s3:DeleteObject", "delete", audit.RoleDeleteKey
		rec.Signing = signing("content-md5", "content-type", "host", "x-amz-content-sha256", "x-amz-date")
		rec.Signing.Payload = r.hex64(5)
		for k := 0; k < j.batch && t.first < t.files-1; k++ {
			one := rec
			one.Key = t.dataKey(t.first)
			t.first++
			add(one)
		}
		if t.first >= t.files-1 { // nothing left to expire: a listing
			rec.Operation, rec.Action, rec.Access, rec.Role = "ListObjectsV2", "s3:ListBucket", "list", audit.RoleBucket
			rec.Key = ""
			p := t.location() + "/"
			rec.Prefix = &p
			add(rec)
		}
	case jobList:
		rec := base
		rec.Operation, rec.Action, rec.Access, rec.Role = "ListObjectsV2", "s3:ListBucket", "list", audit.RoleBucket
		p := t.location() + "/metadata/"
		rec.Prefix = &p
		rec.Signing = signing("host", "x-amz-content-sha256", "x-amz-date")
		add(rec)
	case jobDenied:
		rec := base
		rec.Operation, rec.Action, rec.Access = "GetObject", "s3:GetObject", "read"
		rec.Key = t.dataKey(t.first + int(r.n)%max(1, t.files-t.first))
		rec.Decision, rec.Status, rec.Reason = audit.DecisionDeny, 403, "table "+t.namespace+"."+t.name+" is not granted to "+base.Principal.ID
		add(rec)
	}
	return out
}
