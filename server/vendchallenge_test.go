package server

import (
	"context"
	"testing"
	"time"

	"github.com/countersign/countersign/audit"
	"github.com/countersign/countersign/internal/policyinput"
	"github.com/countersign/countersign/session"
	"github.com/countersign/countersign/vend"
)

// unreachedStages are the vend stages after the token's lifetime check:
// a request refused for its token must reach none of them.
type unreachedStages struct{ t *testing.T }

func (u unreachedStages) TableLocation(context.Context, *policyinput.Table) (string, bool, error) {
	return "s3://lake/wh/db/t/", true, nil // the catalog's location, looked up before the lifetime check
}

func (u unreachedStages) Scope(context.Context, vend.ScopeQuery) (vend.Scope, error) {
	u.t.Error("a refused token's mint reached the scope compiler")
	return vend.Scope{}, nil
}

func (u unreachedStages) SessionPolicy(vend.Scope) (string, error) {
	u.t.Error("a refused token's mint reached the session-policy compiler")
	return "", nil
}

func (u unreachedStages) Mint(context.Context, session.Request) (session.Credentials, error) {
	u.t.Error("a refused token's mint reached the STS")
	return session.Credentials{}, nil
}

// TestVendUnauthorizedCarriesChallenge: every 401 the credential routes
// answer carries WWW-Authenticate, as the sign routes' do: the one
// authentication refuses (no token) and the one the mint refuses (a token
// that expires sooner than the shortest credentials). Each refusal is
// recorded.
func TestVendUnauthorizedCarriesChallenge(t *testing.T) {
	dir := t.TempDir()
	s := newTestServer(t, testPolicy, nil, Options{})
	log := openTestAuditIn(t, dir)
	stub := unreachedStages{t}
	svc, err := vend.New(vend.Stages{Tables: stub, Authorizer: testEngine(t, testPolicy), Scoper: stub, SessionPolicies: stub, Minter: stub, Audit: log}, vend.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s.handler.stages.Audit = log
	s.handler.stages.Vendor = svc

	soon := "Bearer " + mintToken("ann", time.Now().Add(5*time.Minute), "analysts")
	const unity = `{"url":"s3://lake/wh/db/t/","operation":"PATH_READ"}`
	for _, c := range []struct {
		name, authz, method, path, body, challenge string
	}{
		{"unity, token expires too soon", soon, "POST", "/api/2.1/unity-catalog/temporary-path-credentials", unity, `Bearer realm="countersign", error="invalid_token"`},
		{"iceberg, token expires too soon", soon, "GET", "/v1/namespaces/db/tables/t/credentials", "", `Bearer realm="countersign", error="invalid_token"`},
		{"unity, no token", "", "POST", "/api/2.1/unity-catalog/temporary-path-credentials", unity, `Bearer realm="countersign"`},
		{"iceberg, no token", "", "GET", "/v1/namespaces/db/tables/t/credentials", "", `Bearer realm="countersign"`},
	} {
		r := doAs(t, s, c.authz, c.method, c.path, c.body)
		if r.status != 401 || r.header["WWW-Authenticate"] != c.challenge {
			t.Errorf("%s: %d WWW-Authenticate %q, want 401 with %q (%s)", c.name, r.status, r.header["WWW-Authenticate"], c.challenge, r.raw)
		}
	}
	// A 403 is not a challenge.
	if r := do(t, s, "POST", "/api/2.1/unity-catalog/temporary-path-credentials", `{"url":"s3://other/wh/","operation":"PATH_READ"}`); r.header["WWW-Authenticate"] != "" {
		t.Errorf("non-401 answer %d carries WWW-Authenticate %q", r.status, r.header["WWW-Authenticate"])
	}
	if err := log.Close(); err != nil {
		t.Fatal(err)
	}
	fsys, err := audit.DirFS(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	err = audit.Query(context.Background(), fsys, audit.Filter{Kind: audit.KindAccess}, func(rec *audit.Record, _ []byte) error {
		if rec.Status == 401 {
			who := "-"
			if rec.Principal != nil {
				who = rec.Principal.ID
			}
			got = append(got, who+" "+string(rec.Decision))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"ann deny", "ann deny", "- unauthenticated", "- unauthenticated"}
	if len(got) != len(want) {
		t.Fatalf("401 records %q, want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("401 records %q, want %q", got, want)
		}
	}
}
