package catalog

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/countersign/countersign/internal/strictjson"
)

// FuzzAnswer holds the front's two readers of catalog answers to what the
// engine may see: whatever the catalog sends, an answer the front passes
// on is strict JSON and carries no credential key in the members the
// front cleans, a table answer turns signing on with countersign's values,
// and the location the front learns is the one in the answer it passes on.
func FuzzAnswer(f *testing.F) {
	f.Add([]byte(upstreamTable))
	for _, a := range ambiguousAnswers {
		f.Add([]byte(a.body))
	}
	f.Add([]byte(`{"defaults":{"s3.secret-access-key":"x","warehouse":"w"},"overrides":{"prefix":"p"}}`))
	f.Add([]byte(`{"metadata":{"location":"s3://lake/t"},"config":null,"storage-credentials":null}`))
	f.Add([]byte(`{"metadata":{"location":"s3://lake/t"},"config":{"S3.Secret-Access-Key":"x","client.region":"r"}}`))
	f.Add([]byte(`{"metadata":{"location":"s3://lake/t"},"Storage-Credentials":[],"CONFIG":{"s3.secret-access-key":"x"}}`))
	f.Add([]byte(`{"metadata":{"location":"s3://lake/t","properties":{"s3.endpoint":"e","client.secret-access-key":"x","owner":"o"}}}`))
	f.Add([]byte(`{"metadata":{"Location":"s3://lake/other","location":"s3://lake/t"}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		out, _, changed, err := inspect(body)
		if err == nil {
			doc := strictDoc(t, out)
			checkPassedOn(t, doc, out)
			if !changed && string(out) != string(body) {
				t.Fatalf("unchanged answer rewritten: %s", out)
			}
			if _, ok := doc[fieldStorageCredentials]; ok {
				t.Fatalf("storage-credentials passed on: %s", out)
			}
			for _, name := range []string{fieldConfig, "defaults", "overrides"} {
				for k := range configOf(t, doc, name) {
					if !allowedConfigKey(k) {
						t.Fatalf("%s.%s passed on: %s", name, k, out)
					}
				}
			}
		}
		const uri, endpoint = "https://cs.example", "v1/namespaces/db/tables/t/sign"
		out, loc, err := rewriteTable(body, signing{signerURI: uri, endpoint: endpoint})
		if err != nil {
			return
		}
		doc := strictDoc(t, out)
		checkPassedOn(t, doc, out)
		if _, ok := doc[fieldStorageCredentials]; ok {
			t.Fatalf("storage-credentials passed on: %s", out)
		}
		if string(doc[fieldRemoteSigningConfig]) != `{}` {
			t.Fatalf("remote-signing-config %s", doc[fieldRemoteSigningConfig])
		}
		ours := map[string]string{propRemoteSigningEnabled: "true", propS3SignerURI: uri, propS3SignerEndpoint: endpoint}
		cfg := configOf(t, doc, fieldConfig)
		for k, raw := range cfg {
			if allowedConfigKey(k) {
				continue
			}
			var v string
			if want, ok := ours[k]; !ok || json.Unmarshal(raw, &v) != nil || v != want {
				t.Fatalf("config %s = %s passed on: %s", k, raw, out)
			}
		}
		for k := range ours {
			if _, ok := cfg[k]; !ok {
				t.Fatalf("config lacks %s: %s", k, out)
			}
		}
		if got := tableLocation(doc); got != loc {
			t.Fatalf("learned %q, passed on %q", loc, got)
		}
	})
}

// checkPassedOn: an answer passed on has no other spelling of a member
// the front reads (a case-insensitive decoder would read it), and no
// client configuration key off the allow-list in metadata.properties.
func checkPassedOn(t *testing.T, doc map[string]json.RawMessage, out []byte) {
	t.Helper()
	if err := spelledExactly(doc, answerMembers...); err != nil {
		t.Fatalf("answer passed on %v: %s", err, out)
	}
	var md struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(doc[fieldMetadata], &m) == nil {
		if err := spelledExactly(m, "location", "properties"); err != nil {
			t.Fatalf("metadata passed on %v: %s", err, out)
		}
		if json.Unmarshal(m["properties"], &md.Properties) == nil {
			for k := range md.Properties {
				if clientProperty(k) && !allowedConfigKey(k) {
					t.Fatalf("metadata.properties %q passed on: %s", k, out)
				}
			}
		}
	}
}

// strictDoc decodes an answer the front passes on, which must be a strict
// JSON object.
func strictDoc(t *testing.T, b []byte) map[string]json.RawMessage {
	t.Helper()
	if err := checkStrict(b); err != nil {
		t.Fatalf("answer passed on %v: %s", err, b)
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(b, &doc); err != nil || doc == nil {
		t.Fatalf("answer passed on is not an object: %v %s", err, b)
	}
	return doc
}

// configOf is the string map member name of doc ("" members are empty).
func configOf(t *testing.T, doc map[string]json.RawMessage, name string) map[string]json.RawMessage {
	t.Helper()
	raw, ok := doc[name]
	if !ok || string(raw) == "null" {
		return nil
	}
	v, e := strictjson.Decode(raw, strictjson.Options{})
	if e != nil {
		t.Fatalf("%s: %v", name, e)
	}
	if _, ok := v.(map[string]any); !ok {
		t.Fatalf("%s passed on as %s", name, raw)
	}
	var m map[string]json.RawMessage
	json.Unmarshal(raw, &m)
	return m
}

// FuzzRoute: whatever parses has its path in the canonical spelling (the
// canonical path is the input's; the query is decoded and re-encoded, so
// its spelling may differ), parsing the canonical target gives the same
// route, and a route has the method it was asked for.
func FuzzRoute(f *testing.F) {
	for _, c := range routeCases {
		f.Add(c.method, c.target)
	}
	f.Fuzz(func(t *testing.T, method, target string) {
		r, err := parseRoute(method, target, "\x1f")
		if err != nil {
			if err.Status != 400 && err.Status != 404 && err.Status != 405 {
				t.Fatalf("%s %q: status %d", method, target, err.Status)
			}
			return
		}
		canon := r.target("\x1f")
		if p, _, _ := strings.Cut(target, "?"); p != r.escapedPath("\x1f") {
			t.Fatalf("%s %q parsed, but its canonical path is %q", method, target, r.escapedPath("\x1f"))
		}
		again, err := parseRoute(method, canon, "\x1f")
		if err != nil || !reflect.DeepEqual(again, r) {
			t.Fatalf("%q: %+v, then %+v %v", canon, r, again, err)
		}
		if r.Method() != method {
			t.Fatalf("%s %q parsed as %s", method, target, r.OperationID())
		}
	})
}
