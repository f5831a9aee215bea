package policy_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/countersign/countersign/policy"
)

// TestTableLocation: the table-scope data gives a table's location, by the
// same id the library computes; unknown tables have none.
func TestTableLocation(t *testing.T) {
	eng, err := policy.Load(context.Background(), policy.Options{Paths: []string{libDir, filepath.Join(examplesDir, "table-scope")}})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		table *policy.Table
		want  string
	}{
		{&policy.Table{Prefix: "prod", Namespace: []string{"db"}, Name: "t"}, "s3://lake/wh/db/t/"},
		{&policy.Table{Prefix: "prod", Namespace: []string{"db", "sub"}, Name: "events"}, "s3a://lake/wh/db/sub/events/"},
		{&policy.Table{Prefix: "prod", Namespace: []string{"db"}, Name: "nope"}, ""},
		{&policy.Table{Prefix: "", Namespace: []string{"db"}, Name: "t"}, ""},
		{nil, ""},
	} {
		got, ok := eng.TableLocation(c.table)
		if got != c.want || ok != (c.want != "") {
			t.Errorf("TableLocation(%+v) = %q, %v; want %q", c.table, got, ok, c.want)
		}
	}
	var m policy.Manager // no policy loaded: an error, not "unknown"
	if _, _, err := m.TableLocation(context.Background(), &policy.Table{Name: "t"}); err == nil {
		t.Error("TableLocation without a policy: no error")
	}
}

// TestMintDecisions: a mint is decided as its own operation by the
// example policy as written for signing: allowed when a grant covers the
// whole prefix, denied above it; sign-only data is never vended, and is
// still signed for.
func TestMintDecisions(t *testing.T) {
	ctx := context.Background()
	signOnly := filepath.Join(t.TempDir(), "sign_only.json")
	if err := os.WriteFile(signOnly, []byte(`{"countersign": {"sign_only": ["s3://lake/wh/sales/"]}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	eng, err := policy.Load(ctx, policy.Options{Paths: []string{libDir, filepath.Join(examplesDir, "grants"), signOnly}})
	if err != nil {
		t.Fatal(err)
	}
	mint := func(access, prefix string) *policy.Input {
		p := prefix
		return &policy.Input{
			Version: 1, Principal: &policy.Principal{ID: "ann", Groups: []string{"analysts"}},
			Operation: "MintCredentials", Action: "sts:AssumeRole", Access: access,
			Resource: policy.Resource{Bucket: "lake", Prefix: &p, ARN: "arn:aws:s3:::lake/" + p + "*"},
			Request:  policy.Request{Method: "GET", Headers: policy.HeadersOf(map[string]string{})},
			Mint:     &policy.Mint{Prefix: p, Access: "read", DurationSeconds: 900},
		}
	}
	decide := func(in *policy.Input) policy.Decision {
		t.Helper()
		d, err := eng.Authorize(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	if d := decide(mint("read", "wh/db/t/")); !d.Allow {
		t.Errorf("read mint of a granted prefix denied: %s", d.Reason)
	}
	if d := decide(mint("read", "wh/db/t/data/")); !d.Allow {
		t.Errorf("read mint under a granted prefix denied: %s", d.Reason)
	}
	if d := decide(mint("read", "wh/db/")); d.Allow {
		t.Error("read mint above the granted prefix allowed")
	}
	if d := decide(mint("write", "wh/db/t/")); d.Allow {
		t.Error("write mint without a write grant allowed")
	}
	d := decide(mint("read", "wh/sales/2026/"))
	if d.Allow || !strings.Contains(d.Reason, "s3://lake/wh/sales/ is sign-only") {
		t.Errorf("mint of sign-only data: allow %v, reason %q", d.Allow, d.Reason)
	}
	get := &policy.Input{
		Version: 1, Principal: &policy.Principal{ID: "ann", Groups: []string{"analysts"}},
		Operation: "GetObject", Action: "s3:GetObject", Access: "read",
		Resource: policy.Resource{Bucket: "lake", Key: "wh/sales/2026/f.parquet", ARN: "arn:aws:s3:::lake/wh/sales/2026/f.parquet"},
		Request:  policy.Request{Method: "GET", Headers: policy.HeadersOf(map[string]string{})},
	}
	for range 3 { // the fast path's residual, once built, decides alike
		if d := decide(get); !d.Allow {
			t.Fatalf("signing for sign-only data denied: %s", d.Reason)
		}
	}
}

// TestSignOnlyTableVendedByNoLocation: with a catalog front a sign-only
// table needs no location in the data; its mints are refused by the
// table's identity whatever location the catalog gives, on the policy
// that would grant them otherwise, and sign requests still go through.
func TestSignOnlyTableVendedByNoLocation(t *testing.T) {
	ctx := context.Background()
	data := filepath.Join(t.TempDir(), "tables.json")
	if err := os.WriteFile(data, []byte(`{"countersign": {"tables": {"lake/db/cards": {"sign_only": true}}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	eng, err := policy.Load(ctx, policy.Options{Paths: []string{libDir, filepath.Join(examplesDir, "grants"), data}})
	if err != nil {
		t.Fatal(err)
	}
	mint := func(table *policy.Table, prefix string) *policy.Input {
		p := prefix
		return &policy.Input{
			Version: 1, Principal: &policy.Principal{ID: "eve", Groups: []string{"etl"}},
			Operation: "MintCredentials", Action: "sts:AssumeRole", Access: "read",
			Resource: policy.Resource{Bucket: "lake", Prefix: &p, ARN: "arn:aws:s3:::lake/" + p + "*"},
			Table:    table,
			Request:  policy.Request{Method: "GET", Headers: policy.HeadersOf(map[string]string{})},
			Mint:     &policy.Mint{Prefix: p, Access: "read", DurationSeconds: 900},
		}
	}
	cards := &policy.Table{Prefix: "lake", Namespace: []string{"db"}, Name: "cards", Location: "s3://lake/wh/db/cards/"}
	for _, prefix := range []string{"wh/db/cards/", "wh/db/cards/data/", "wh/db/elsewhere/"} {
		d, err := eng.Authorize(ctx, mint(cards, prefix))
		if err != nil {
			t.Fatal(err)
		}
		if d.Allow || !strings.Contains(d.Reason, "table lake/db/cards is sign-only") {
			t.Errorf("mint of sign-only table cards at %s: allow %v, reason %q", prefix, d.Allow, d.Reason)
		}
	}
	// Another table located only by the catalog might sit at the
	// sign-only table's location, which the data does not hold: refused
	// until the sign-only table has a location in the data; a table with
	// its own location in the data is vended.
	other := &policy.Table{Prefix: "lake", Namespace: []string{"db"}, Name: "t", Location: "s3://lake/wh/db/t/"}
	if d, err := eng.Authorize(ctx, mint(other, "wh/db/t/")); err != nil || d.Allow || !strings.Contains(d.Reason, "located only by the catalog") {
		t.Errorf("mint of a catalog-located table beside a sign-only table without location: %v allow %v %q", err, d.Allow, d.Reason)
	}
	located := filepath.Join(t.TempDir(), "located.json")
	if err := os.WriteFile(located, []byte(`{"countersign": {"tables": {"lake/db/cards": {"sign_only": true}, "lake/db/t": {"location": "s3://lake/wh/db/t/", "grants": {"etl": ["read", "list"]}}}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	eng2, err := policy.Load(ctx, policy.Options{Paths: []string{libDir, filepath.Join(examplesDir, "grants"), located}})
	if err != nil {
		t.Fatal(err)
	}
	if d, err := eng2.Authorize(ctx, mint(other, "wh/db/t/")); err != nil || !d.Allow {
		t.Errorf("mint of a table with its own location in the data refused: %v %q", err, d.Reason)
	}
	get := &policy.Input{
		Version: 1, Principal: &policy.Principal{ID: "eve", Groups: []string{"etl"}},
		Operation: "GetObject", Action: "s3:GetObject", Access: "read",
		Resource: policy.Resource{Bucket: "lake", Key: "wh/db/cards/f.parquet", ARN: "arn:aws:s3:::lake/wh/db/cards/f.parquet"},
		Table:    cards,
		Request:  policy.Request{Method: "GET", Headers: policy.HeadersOf(map[string]string{})},
	}
	if d, err := eng.Authorize(ctx, get); err != nil || !d.Allow {
		t.Errorf("signing for the sign-only table refused: %v %q", err, d.Reason)
	}
}
