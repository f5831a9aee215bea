package sessionpolicy_test

import (
	"encoding/json"
	"strings"
	"testing"
)

// iamDoc is a session policy as the tests read it back from its JSON.
type iamDoc struct {
	Version   string
	Statement []struct {
		Effect    string
		Action    []string
		Resource  []string
		Condition map[string]map[string][]string
	}
}

func parseDoc(t testing.TB, js string) iamDoc {
	t.Helper()
	var d iamDoc
	dec := json.NewDecoder(strings.NewReader(js))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&d); err != nil {
		t.Fatalf("session policy is not the JSON Compile writes: %v\n%s", err, js)
	}
	if d.Version != "2012-10-17" {
		t.Fatalf("Version %q", d.Version)
	}
	return d
}

// iamRequest is one S3 request as IAM authorizes it: an action, a resource
// ARN and, for s3:ListBucket, the s3:prefix condition key (nil: absent).
type iamRequest struct {
	action, resource string
	prefix           *string
}

// allows is a small, exact evaluator of the documents Compile writes:
// Allow statements with exact action names, resources and s3:prefix
// StringLike conditions whose patterns use IAM's wildcards (* any run of
// characters, ? one character), nothing else. It is not a real IAM
// evaluator: it knows no Deny, NotAction, NotResource, policy variables,
// other condition operators or keys, case-insensitive action names, or the
// intersection with the role's own policy; it fails the test on any of
// them rather than guess (parseDoc refuses any other field, allows any
// other effect, operator or key), so every test that reads a document
// back also holds Compile to writing only this subset.
func (d iamDoc) allows(t testing.TB, r iamRequest) bool {
	t.Helper()
	for _, s := range d.Statement {
		if s.Effect != "Allow" {
			t.Fatalf("statement effect %q", s.Effect)
		}
		if !contains(s.Action, r.action) || !anyGlob(s.Resource, r.resource) {
			continue
		}
		ok := true
		for op, keys := range s.Condition {
			if op != "StringLike" {
				t.Fatalf("condition operator %q", op)
			}
			for k, pats := range keys {
				if k != "s3:prefix" {
					t.Fatalf("condition key %q", k)
				}
				if r.prefix == nil || !anyGlob(pats, *r.prefix) {
					ok = false
				}
			}
		}
		if ok {
			return true
		}
	}
	return false
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func anyGlob(pats []string, s string) bool {
	for _, p := range pats {
		if glob([]rune(p), []rune(s)) {
			return true
		}
	}
	return false
}

// glob matches IAM's wildcards, by character.
func glob(p, s []rune) bool {
	for len(p) > 0 {
		switch p[0] {
		case '*':
			for i := 0; i <= len(s); i++ {
				if glob(p[1:], s[i:]) {
					return true
				}
			}
			return false
		case '?':
			if len(s) == 0 {
				return false
			}
		default:
			if len(s) == 0 || s[0] != p[0] {
				return false
			}
		}
		p, s = p[1:], s[1:]
	}
	return len(s) == 0
}

func TestGlob(t *testing.T) {
	for _, c := range []struct {
		p, s string
		want bool
	}{
		{"arn:aws:s3:::lake/wh/*", "arn:aws:s3:::lake/wh/a", true},
		{"arn:aws:s3:::lake/wh/*", "arn:aws:s3:::lake/wh/", true},
		{"arn:aws:s3:::lake/wh/*", "arn:aws:s3:::lake/wh", false},
		{"arn:aws:s3:::lake/wh/*", "arn:aws:s3:::lake2/wh/a", false},
		{"a?c", "abc", true},
		{"a?c", "ac", false},
		{"é*", "éa", true},
		{"", "", true},
		{"", "a", false},
	} {
		if got := glob([]rune(c.p), []rune(c.s)); got != c.want {
			t.Errorf("glob(%q, %q) = %v", c.p, c.s, got)
		}
	}
}
