package session

import (
	"context"
	"encoding/json"
	"sort"

	"github.com/countersign/countersign/internal/policyinput"
)

// BucketWide is the session policy that allows each need's action on its
// whole bucket (the bucket and every key in it): the fallback scope when the
// OPA policy's scope cannot be expressed as key prefixes. It is still
// narrower than the role: only the actions the request needs, only its
// buckets. Deterministic: needs are sorted.
func BucketWide(needs []Need) string {
	type statement struct {
		Effect   string   `json:"Effect"`
		Action   []string `json:"Action"`
		Resource []string `json:"Resource"`
	}
	byBucket := map[string][]string{}
	for _, n := range needs {
		byBucket[n.Bucket] = append(byBucket[n.Bucket], n.Action)
	}
	buckets := make([]string, 0, len(byBucket))
	for b := range byBucket {
		buckets = append(buckets, b)
	}
	sort.Strings(buckets)
	doc := struct {
		Version   string      `json:"Version"`
		Statement []statement `json:"Statement"`
	}{Version: "2012-10-17"}
	for _, b := range buckets {
		actions := byBucket[b]
		sort.Strings(actions)
		doc.Statement = append(doc.Statement, statement{
			Effect: "Allow", Action: dedup(actions),
			Resource: []string{"arn:aws:s3:::" + b, "arn:aws:s3:::" + b + "/*"},
		})
	}
	out, _ := json.Marshal(doc) // cannot fail: strings only
	return string(out)
}

func dedup(ss []string) []string {
	out := ss[:0]
	for i, s := range ss {
		if i == 0 || s != ss[i-1] {
			out = append(out, s)
		}
	}
	return out
}

// BucketWidePolicies is a Policies that always answers BucketWide.
type BucketWidePolicies struct{}

// SessionPolicy implements Policies.
func (BucketWidePolicies) SessionPolicy(_ context.Context, _ *policyinput.Principal, _ *policyinput.Table, needs []Need) (string, error) {
	return BucketWide(needs), nil
}
