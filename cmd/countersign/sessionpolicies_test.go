package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/countersign/countersign/internal/policyinput"
	"github.com/countersign/countersign/policy"
	"github.com/countersign/countersign/session"
)

// TestScopedPolicies: session policies come from the real policy's scope,
// narrowed to each need's action; a need the scope does not grant gets a
// session that can do nothing.
func TestScopedPolicies(t *testing.T) {
	dir := t.TempDir()
	rego := `package countersign.authz

default allow := false

allow if {
	input.principal.id == "alice"
	input.access in {"read", "write"}
	input.resource.bucket == "lake"
	startswith(input.resource.key, "wh/db/t/")
}
`
	if err := os.WriteFile(filepath.Join(dir, "authz.rego"), []byte(rego), 0o600); err != nil {
		t.Fatal(err)
	}
	engine, err := policy.Load(context.Background(), policy.Options{Paths: []string{dir}})
	if err != nil {
		t.Fatal(err)
	}
	sp := scopedPolicies{engine}
	alice := &policyinput.Principal{ID: "alice", Groups: []string{}}
	ctx := context.Background()
	for name, tc := range map[string]struct {
		p     *policyinput.Principal
		needs []session.Need
		want  string
	}{
		"read": {alice, []session.Need{{Action: "s3:GetObject", Access: "read", Bucket: "lake"}},
			`{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":["s3:GetObject"],"Resource":["arn:aws:s3:::lake/wh/db/t/*"]}]}`},
		"copy": {alice, []session.Need{{Action: "s3:GetObject", Access: "read", Bucket: "lake"}, {Action: "s3:PutObject", Access: "write", Bucket: "lake"}},
			`{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":["s3:GetObject"],"Resource":["arn:aws:s3:::lake/wh/db/t/*"]},{"Effect":"Allow","Action":["s3:PutObject"],"Resource":["arn:aws:s3:::lake/wh/db/t/*"]}]}`},
		"never granted":     {alice, []session.Need{{Action: "s3:DeleteObject", Access: "delete", Bucket: "lake"}}, denyAll},
		"another bucket":    {alice, []session.Need{{Action: "s3:GetObject", Access: "read", Bucket: "other"}}, denyAll},
		"another principal": {&policyinput.Principal{ID: "bob", Groups: []string{}}, []session.Need{{Action: "s3:GetObject", Access: "read", Bucket: "lake"}}, denyAll},
	} {
		got, err := sp.SessionPolicy(ctx, tc.p, nil, tc.needs)
		if err != nil || got != tc.want {
			t.Errorf("%s: %s %v\nwant %s", name, got, err, tc.want)
		}
	}
}
