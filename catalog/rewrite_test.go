package catalog

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"
)

const upstreamTable = `{
  "metadata-location": "s3://lake/wh/db/t/metadata/00001.metadata.json",
  "metadata": {"format-version": 2, "table-uuid": "9c12d441-03fe-4693-9a96-a0705ddf69c1", "location": "s3://lake/wh/db/t",
               "last-updated-ms": 1602638573590, "properties": {"owner": "ann <ann@example.com>"}, "schemas": [], "current-schema-id": 0},
  "config": {"s3.access-key-id": "AKIA", "s3.secret-access-key": "SECRET", "s3.session-token": "TOKEN",
             "client.region": "us-east-1", "s3.endpoint": "http://s3.internal",
             "s3.signer.uri": "http://catalog-signer", "adls.sas-token.acct": "sas"},
  "storage-credentials": [{"prefix": "s3://lake/wh/db/t", "config": {"s3.access-key-id": "AKIA2", "s3.secret-access-key": "S2"}}],
  "remote-signing-config": {"headers": {"X-Upstream": ["1"]}}
}`

func decode(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	return m
}

func TestRewriteTableTurnsSigningOnAndRemovesCredentials(t *testing.T) {
	out, loc, err := rewriteTable([]byte(upstreamTable), signing{signerURI: "https://cs.example/catalog", endpoint: "v1/namespaces/db/tables/t/sign"})
	if err != nil {
		t.Fatal(err)
	}
	if loc != "s3://lake/wh/db/t" {
		t.Fatalf("location %q", loc)
	}
	got, want := decode(t, out), decode(t, []byte(upstreamTable))
	wantCfg := map[string]any{
		"client.region": "us-east-1", "s3.endpoint": "http://s3.internal",
		"s3.remote-signing-enabled": "true", "s3.signer.uri": "https://cs.example/catalog",
		"s3.signer.endpoint": "v1/namespaces/db/tables/t/sign",
	}
	if !reflect.DeepEqual(got["config"], wantCfg) {
		t.Fatalf("config %v", got["config"])
	}
	if _, ok := got["storage-credentials"]; ok {
		t.Fatal("storage-credentials kept")
	}
	if !reflect.DeepEqual(got["remote-signing-config"], map[string]any{}) {
		t.Fatalf("remote-signing-config %v", got["remote-signing-config"])
	}
	// Everything else is the catalog's, unchanged.
	for _, k := range []string{"config", "storage-credentials", "remote-signing-config"} {
		delete(got, k)
		delete(want, k)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("other members changed:\n%v\n%v", got, want)
	}
	if strings.Contains(string(out), `\u003c`) {
		t.Fatal("strings re-escaped")
	}
}

func TestRewriteTableVends(t *testing.T) {
	creds := []StorageCredential{{Prefix: "s3://lake/wh/db/t", Config: map[string]string{"s3.access-key-id": "ASIA", "s3.secret-access-key": "x", "s3.session-token": "y"}}}
	out, _, err := rewriteTable([]byte(upstreamTable), signing{signerURI: "u", endpoint: "e", credentials: creds})
	if err != nil {
		t.Fatal(err)
	}
	got := decode(t, out)
	sc := got["storage-credentials"].([]any)
	if len(sc) != 1 || sc[0].(map[string]any)["config"].(map[string]any)["s3.access-key-id"] != "ASIA" {
		t.Fatalf("storage-credentials %v", got["storage-credentials"])
	}
	cfg := got["config"].(map[string]any)
	if _, ok := cfg["s3.remote-signing-enabled"]; ok || cfg["s3.access-key-id"] != nil {
		t.Fatalf("config %v", cfg)
	}
}

func TestRewriteRefusesWhatItCannotRead(t *testing.T) {
	for _, body := range []string{`[]`, `null`, `{"config":{}}`, `{"metadata":{},"config":"x"}`, `not json`} {
		if _, _, err := rewriteTable([]byte(body), signing{}); err == nil {
			t.Errorf("%s: rewritten", body)
		}
	}
}

func TestInspectRemovesCredentialsElsewhere(t *testing.T) {
	cfg := `{"defaults":{"s3.secret-access-key":"x","warehouse":"w"},"overrides":{"prefix":"p","namespace-separator":"%2E"}}`
	out, _, changed, err := inspect([]byte(cfg))
	if err != nil || !changed {
		t.Fatal(err, changed)
	}
	got := decode(t, out)
	if !reflect.DeepEqual(got["defaults"], map[string]any{"warehouse": "w"}) || got["overrides"].(map[string]any)["prefix"] != "p" {
		t.Fatalf("%s", out)
	}
	plain := `{"identifiers":[{"namespace":["db"],"name":"t"}]}`
	out, _, changed, err = inspect([]byte(plain))
	if err != nil || changed || string(out) != plain {
		t.Fatalf("an answer without credentials changed: %s", out)
	}
}

// TestConfigKeysByAllowList: credential keys under any name are dropped
// (the four named are ones a deny-list let through), documented client
// properties pass.
func TestConfigKeysByAllowList(t *testing.T) {
	for _, k := range []string{"s3.access-key-id", "s3.secret-access-key", "s3.session-token", "gcs.oauth2.token",
		"adls.sas-token.account", "adls.auth.shared-key.account.key", "client.assume-role.arn", "s3.signer.uri",
		"signer.endpoint", "s3.remote-signing-enabled", "custom.db-password", "x.private-key",
		"adls.account-key", "adls.connection-string", "fs.s3a.access.key", "fs.s3a.secret.key",
		"adls.connection-string.acct", "token", "uri", "io-impl", "header.Authorization", "s3.sse.key",
		"client.factory", "S3.Endpoint", "s3.endpoint ", "s3.write.tags.", "client.refresh-credentials-endpoint"} {
		if allowedConfigKey(k) {
			t.Errorf("%s kept", k)
		}
	}
	for _, k := range []string{"client.region", "s3.endpoint", "s3.path-style-access", "warehouse", "prefix", "namespace-separator", "s3.write.tags.team"} {
		if !allowedConfigKey(k) {
			t.Errorf("%s removed", k)
		}
	}
	doc := `{"config":{"adls.account-key":"k","adls.connection-string":"c","fs.s3a.access.key":"a","fs.s3a.secret.key":"s","s3.endpoint":"http://s3"}}`
	out, _, changed, err := inspect([]byte(doc))
	if err != nil || !changed || string(out) != `{"config":{"s3.endpoint":"http://s3"}}` {
		t.Fatalf("inspect: %s %v %v", out, changed, err)
	}
}

// stubVendor stands in for package vend's minting (a test double of the
// Vendor interface this package declares): it vends for one location.
type stubVendor struct {
	allow string
	got   []VendRequest
}

func (v *stubVendor) VendTable(_ context.Context, r VendRequest) ([]StorageCredential, error) {
	v.got = append(v.got, r)
	if r.Location != v.allow {
		return nil, ErrNotVendable
	}
	return []StorageCredential{{Prefix: r.Location, Config: map[string]string{"s3.access-key-id": "ASIAVENDED"}}}, nil
}

func TestLoadTableThroughTheFront(t *testing.T) {
	up, got := recordingUpstream(t, http.StatusOK, upstreamTable, map[string]string{"Content-Type": "application/json", "ETag": `"v1"`})
	vendor := &stubVendor{allow: "s3://lake/wh/db/t"}
	front := serveFront(t, newFront(t, Config{Upstream: up.URL}, vendor))

	load := func(delegation string) map[string]any {
		req, _ := http.NewRequest("GET", front+"/v1/prod/namespaces/db/tables/t?snapshots=all", nil)
		req.Header.Set("Authorization", "Bearer tok")
		req.Header.Set("Accept-Encoding", "gzip")
		if delegation != "" {
			req.Header.Set("X-Iceberg-Access-Delegation", delegation)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 || resp.Header.Get("ETag") != `"v1"` {
			t.Fatalf("%d %v %s", resp.StatusCode, resp.Header, b)
		}
		s := <-got
		if s.uri != "/v1/prod/namespaces/db/tables/t?snapshots=all" || s.header.Get("X-Iceberg-Access-Delegation") != delegation {
			t.Fatalf("upstream saw %+v", s)
		}
		return decode(t, b)
	}
	m := load("")
	cfg := m["config"].(map[string]any)
	if cfg["s3.remote-signing-enabled"] != "true" || !strings.HasPrefix(cfg["s3.signer.uri"].(string), "http://127.0.0.1:") ||
		cfg["s3.signer.endpoint"] != "v1/prod/namespaces/db/tables/t/sign" || m["storage-credentials"] != nil || cfg["s3.secret-access-key"] != nil {
		t.Fatalf("no vending asked: %v", m)
	}
	if len(vendor.got) != 0 {
		t.Fatal("vendor asked without vended-credentials in X-Iceberg-Access-Delegation")
	}
	m = load("vended-credentials, remote-signing")
	if m["storage-credentials"] == nil || m["config"].(map[string]any)["s3.remote-signing-enabled"] != nil {
		t.Fatalf("vending allowed: %v", m)
	}
	if r := vendor.got[0]; r.Table.Prefix != "prod" || r.Table.Name != "t" || r.Table.Location != "s3://lake/wh/db/t" || string(r.Authorization) != "Bearer tok" {
		t.Fatalf("vend request %+v", r)
	}
	// Vending refused by the policy: signing, no credentials.
	vendor.allow = "elsewhere"
	m = load("vended-credentials")
	if m["storage-credentials"] != nil || m["config"].(map[string]any)["s3.remote-signing-enabled"] != "true" {
		t.Fatalf("vending refused: %v", m)
	}
}

// TestClientPropertiesRemovedFromMetadata: PyIceberg builds a table's
// FileIO from metadata.properties merged under config; a credential or
// an endpoint stored as a table property (by the catalog, or by any
// committer on a shared table) must not reach clients. Table properties
// outside the clients' configuration namespaces pass.
func TestClientPropertiesRemovedFromMetadata(t *testing.T) {
	body := `{"metadata-location":"s3://lake/wh/db/t/metadata/v1.metadata.json","metadata":{"location":"s3://lake/wh/db/t","properties":{` +
		`"s3.secret-access-key":"SECRET","client.secret-access-key":"SECRET","S3.Endpoint":"https://evil.example","py-io-impl":"evil.IO",` +
		`"token":"SECRET","adls.sas-token.acct":"SECRET","header.Authorization":"Bearer SECRET",` +
		`"s3.path-style-access":"true","write.format.default":"parquet","owner":"ann","commit.retry.num-retries":"4"}},"config":{}}`
	want := map[string]any{"s3.path-style-access": "true", "write.format.default": "parquet", "owner": "ann", "commit.retry.num-retries": "4"}
	check := func(what string, out []byte) {
		t.Helper()
		var m struct {
			Metadata struct {
				Location   string         `json:"location"`
				Properties map[string]any `json:"properties"`
			} `json:"metadata"`
		}
		if err := json.Unmarshal(out, &m); err != nil {
			t.Fatalf("%s: %v %s", what, err, out)
		}
		if !reflect.DeepEqual(m.Metadata.Properties, want) || m.Metadata.Location != "s3://lake/wh/db/t" {
			t.Errorf("%s: properties %v, location %q", what, m.Metadata.Properties, m.Metadata.Location)
		}
		if strings.Contains(string(out), "SECRET") || strings.Contains(string(out), "evil") {
			t.Errorf("%s: %s", what, out)
		}
	}
	out, _, err := rewriteTable([]byte(body), signing{signerURI: "u", endpoint: "e"})
	if err != nil {
		t.Fatal(err)
	}
	check("rewriteTable", out)
	out, _, changed, err := inspect([]byte(body))
	if err != nil || !changed {
		t.Fatalf("inspect: %v %v", changed, err)
	}
	check("inspect (a commit answer)", out)
	// Nothing to remove: the answer goes on as it came.
	clean := `{"metadata":{"location":"s3://lake/wh/db/t","properties":{"owner":"ann"}}}`
	if out, _, changed, err := inspect([]byte(clean)); err != nil || changed || string(out) != clean {
		t.Fatalf("clean answer changed: %s %v %v", out, changed, err)
	}
}
