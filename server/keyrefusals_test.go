package server

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/countersign/countersign/audit"
)

// TestKeySyntaxRefusedAndRecorded: through the real handler, a copy
// source whose decoded key holds '?' (which versitygw cuts at after
// decoding), a key with a C1 control character and a DeleteObjects key
// with a character reference to a surrogate are each refused with 400,
// nothing is signed, and each refusal is one malformed record whose reason
// names what was wrong: the copy source as sent, the control character,
// the reference.
func TestKeySyntaxRefusedAndRecorded(t *testing.T) {
	dir := t.TempDir()
	s := newTestServer(t, testPolicy, nil, Options{})
	s.handler.stages.Audit = openTestAuditIn(t, dir)

	sign := func(method, uri string, headers map[string][]string, body *string) response {
		t.Helper()
		m := map[string]any{"region": "us-east-1", "uri": uri, "method": method, "headers": headers}
		if body != nil {
			m["body"] = *body
		}
		b, _ := json.Marshal(m)
		return do(t, s, "POST", "/v1/aws/s3/sign", string(b))
	}
	del := `<Delete><Object><Key>wh/a&#xD800;</Key></Object></Delete>`
	cases := []struct {
		name, method, uri string
		headers           map[string][]string
		body              *string
		reason            string
	}{
		{"copy source with an encoded '?'", "PUT", "http://localhost:7070/lake/wh/out",
			map[string][]string{"x-amz-copy-source": {"/lake/wh/copy/pii.parquet%3FversionId%3D"}}, nil,
			`x-amz-copy-source "/lake/wh/copy/pii.parquet%3FversionId%3D": the key "wh/copy/pii.parquet?versionId=" contains '?'`},
		{"copy source decoded twice", "PUT", "http://localhost:7070/lake/wh/out",
			map[string][]string{"x-amz-copy-source": {"lake/wh/copy/%252E%252E/x"}}, nil,
			`x-amz-copy-source "lake/wh/copy/%252E%252E/x": the key "wh/copy/%2E%2E/x" contains '%'`},
		{"NEL in a key", "GET", "http://localhost:7070/lake/wh/a%C2%85b", map[string][]string{}, nil,
			"object key contains a control character (U+0085)"},
		{"NEL in a copy source key", "PUT", "http://localhost:7070/lake/wh/out",
			map[string][]string{"x-amz-copy-source": {"lake/wh/a%C2%85b"}}, nil,
			"copy source key contains a control character (U+0085)"},
		{"surrogate reference in a DeleteObjects key", "POST", "http://localhost:7070/lake?delete", map[string][]string{}, &del,
			`character reference "&#xD800;" names U+D800`},
	}
	for _, c := range cases {
		r := sign(c.method, c.uri, c.headers, c.body)
		e, _ := r.body["error"].(map[string]any)
		if msg, _ := e["message"].(string); r.status != 400 || !strings.Contains(msg, c.reason) || strings.Contains(r.raw, "Authorization") {
			t.Errorf("%s: %d %s, want 400 saying %q and nothing signed", c.name, r.status, r.raw, c.reason)
		}
	}

	fsys, err := audit.DirFS(dir)
	if err != nil {
		t.Fatal(err)
	}
	var recs []*audit.Record
	err = audit.Query(context.Background(), fsys, audit.Filter{Kind: audit.KindAccess}, func(rec *audit.Record, _ []byte) error {
		recs = append(recs, rec)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != len(cases) {
		t.Fatalf("%d records for %d refusals", len(recs), len(cases))
	}
	for i, c := range cases {
		r := recs[i]
		if r.Decision != audit.DecisionMalformed || r.Status != 400 || r.Signing != nil || !strings.Contains(r.Reason, c.reason) {
			t.Errorf("%s: record %s %d %q, want malformed 400 with reason containing %q", c.name, r.Decision, r.Status, r.Reason, c.reason)
		}
	}
}

// TestRouteNamesWithoutC1: a table, namespace or prefix in a sign or
// credentials route holds no C1 control character (U+0080 to U+009F),
// as it holds no C0 one: no route matches, 404. U+00A0 is no control.
func TestRouteNamesWithoutC1(t *testing.T) {
	for _, p := range []string{
		"/v1/namespaces/db/tables/t%C2%85/sign", "/v1/namespaces/db%C2%80/tables/t/sign",
		"/v1/p%C2%9F/namespaces/db/tables/t/sign", "/v1/namespaces/db/tables/t%C2%85/credentials",
	} {
		if _, ok := matchSignRoute(p, []string{""}, "\x1f"); ok {
			t.Errorf("%s matched a sign route", p)
		}
		if _, ok := matchVendRoute(p, []string{""}, "\x1f"); ok {
			t.Errorf("%s matched a credentials route", p)
		}
	}
	if r, ok := matchSignRoute("/v1/namespaces/db/tables/t%C2%A0/sign", []string{""}, "\x1f"); !ok || r.table.Name != "t\u00a0" {
		t.Errorf("U+00A0 in a table name: %+v %v", r, ok)
	}
}
