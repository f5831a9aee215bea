package catalog

import (
	"strings"
	"testing"
)

// routeCases: every operation of the spec, with and without {prefix},
// and the spellings the front refuses (status 400, 404, 405). They seed
// FuzzRoute too.
var routeCases = []struct {
	method, target string
	status         int       // 0: parses
	op             Operation // when it parses
}{
	{"GET", "/v1/config", 0, OpGetConfig},
	{"GET", "/v1/config?warehouse=s3%3A%2F%2Flake", 0, OpGetConfig},
	{"POST", "/v1/oauth/tokens", 0, OpGetToken},
	{"GET", "/v1/namespaces", 0, OpListNamespaces},
	{"GET", "/v1/p/namespaces?pageToken=a%20b&pageSize=10&parent=a%1Fb", 0, OpListNamespaces},
	{"POST", "/v1/p/namespaces", 0, OpCreateNamespace},
	{"GET", "/v1/p/namespaces/a%1Fb", 0, OpLoadNamespace},
	{"HEAD", "/v1/namespaces/db", 0, OpNamespaceExists},
	{"DELETE", "/v1/p/namespaces/db", 0, OpDropNamespace},
	{"POST", "/v1/p/namespaces/db/properties", 0, OpUpdateProperties},
	{"GET", "/v1/p/namespaces/db/tables?pageSize=1", 0, OpListTables},
	{"POST", "/v1/p/namespaces/db/tables", 0, OpCreateTable},
	{"POST", "/v1/p/namespaces/db/register", 0, OpRegisterTable},
	{"GET", "/v1/p/namespaces/db/tables/t?snapshots=refs", 0, OpLoadTable},
	{"GET", "/v1/namespaces/db/tables/t", 0, OpLoadTable},
	{"POST", "/v1/p/namespaces/db/tables/t", 0, OpUpdateTable},
	{"DELETE", "/v1/p/namespaces/db/tables/t?purgeRequested=true", 0, OpDropTable},
	{"HEAD", "/v1/p/namespaces/db/tables/t", 0, OpTableExists},
	{"POST", "/v1/p/namespaces/db/tables/t/unregister", 0, OpUnregisterTable},
	{"GET", "/v1/p/namespaces/db/tables/t/credentials", 0, OpLoadCredentials},
	{"POST", "/v1/p/namespaces/db/tables/t/sign", 0, OpSignRequest},
	{"POST", "/v1/aws/s3/sign", 0, OpLegacySign},
	{"POST", "/v1/p/tables/rename", 0, OpRenameTable},
	{"POST", "/v1/tables/rename", 0, OpRenameTable},
	{"POST", "/v1/p/namespaces/db/tables/t/metrics", 0, OpReportMetrics},
	{"POST", "/v1/p/namespaces/db/tables/t/plan", 0, OpPlanTableScan},
	{"GET", "/v1/p/namespaces/db/tables/t/plan/plan-1", 0, OpFetchPlanningResult},
	{"DELETE", "/v1/p/namespaces/db/tables/t/plan/plan-1", 0, OpCancelPlanning},
	{"POST", "/v1/p/namespaces/db/tables/t/tasks", 0, OpFetchScanTasks},
	{"POST", "/v1/p/transactions/commit", 0, OpCommitTransaction},
	{"GET", "/v1/p/namespaces/db/views", 0, OpListViews},
	{"POST", "/v1/p/namespaces/db/views", 0, OpCreateView},
	{"GET", "/v1/p/namespaces/db/views/v?referenced-by=a%1Fv", 0, OpLoadView},
	{"POST", "/v1/p/namespaces/db/views/v", 0, OpReplaceView},
	{"DELETE", "/v1/p/namespaces/db/views/v", 0, OpDropView},
	{"HEAD", "/v1/p/namespaces/db/views/v", 0, OpViewExists},
	{"POST", "/v1/p/views/rename", 0, OpRenameView},
	{"POST", "/v1/p/namespaces/db/register-view", 0, OpRegisterView},
	{"GET", "/v1/p/namespaces/db/functions", 0, OpListFunctions},
	{"GET", "/v1/p/namespaces/db/functions/f", 0, OpLoadFunction},
	{"GET", "/v1/p/namespaces/db/tables/sign", 0, OpLoadTable}, // a table named "sign"
	{"GET", "/v1/p/namespaces/d%C3%A9j%C3%A0%20vu/tables/t~1", 0, OpLoadTable},

	// Route confusion: encoded separators and dots, dot and empty
	// segments, path parameters, backslashes.
	{"GET", "/v1/p/namespaces/db%2Ftables%2Fsecret", 400, 0},
	{"GET", "/v1/p/namespaces/db%2ftables%2fsecret", 400, 0},
	{"GET", "/v1/p/namespaces/db%5Ctables", 400, 0},
	{"GET", "/v1/p/namespaces/db/tables/%2E%2E", 400, 0},
	{"GET", "/v1/p/namespaces/db/tables/t/../secret", 400, 0},
	{"GET", "/v1/p/namespaces/db/tables/./t", 400, 0},
	{"GET", "/v1/p/namespaces//db/tables/t", 400, 0},
	{"GET", "/v1//namespaces/db/tables/t", 400, 0},
	{"GET", "/v1/p/namespaces/db/tables/t/", 400, 0},
	{"GET", "/v1/p/namespaces/db/tables/t;x=1", 400, 0},
	{"GET", "/v1/p/namespaces/db\\tables\\t", 400, 0},
	{"GET", "/v1/p/namespaces/db/tables/t%3F", 400, 0},
	{"GET", "/v1/p/namespaces/db/tables/t%25", 400, 0},
	{"GET", "/v1/p/namespaces/db/tables/%74", 400, 0},      // an escape of an unreserved character
	{"GET", "/v1/p/namespaces/a%1fb", 400, 0},              // lowercase hex
	{"GET", "/v1/p/namespaces/a%1F%1Fb", 400, 0},           // an empty namespace level
	{"GET", "/v1/p/namespaces/a%1F..", 400, 0},             // a dot level
	{"GET", "/v1/p/namespaces/db/tables/a+b", 400, 0},      // '+' is a space to some routers
	{"GET", "/v1/p/namespaces/db/tables/a%00b", 400, 0},    // control character
	{"GET", "/v1/p/namespaces/db/tables/a%C2%85b", 400, 0}, // C1 control (NEL)
	{"GET", "/v1/p/namespaces/db/tables/%FF", 400, 0},      // invalid UTF-8
	{"GET", "/v1/p/namespaces/db/tables/t#x", 400, 0},
	{"GET", "/v1/p/namespaces/db/tables/t\x00", 400, 0},
	{"GET", "/v1/p/namespaces/db/tables/t%2", 400, 0},
	// Not origin-form.
	{"CONNECT", "@127.0.0.1:1/v1/config", 400, 0},
	{"CONNECT", "/v1/config", 400, 0},
	{"GET", "http://127.0.0.1:1/v1/config", 400, 0},
	{"OPTIONS", "*", 400, 0},
	// Repeated /v1, prefixes read two ways.
	{"POST", "/v1/v1/v1/p/namespaces/db/tables/rename", 404, 0},
	{"GET", "/v1/v1/namespaces/db/tables/t", 400, 0},
	{"GET", "/v1/V1/namespaces/db/tables/t", 400, 0},
	{"GET", "/v1/namespaces/namespaces", 400, 0},
	{"GET", "/v1/NAMESPACES/namespaces", 400, 0},
	// Near misses of countersign's own routes.
	{"POST", "/v1/aws/s3/sign/", 400, 0},
	{"POST", "/v1/aws/s3/Sign", 404, 0},
	{"POST", "/v1/aws/s3/sig%6E", 400, 0},
	{"POST", "/v1/p/v1/aws/s3/sign", 404, 0},
	{"POST", "/v1/p/namespaces/db/tables/t/sign/", 400, 0},
	{"POST", "/v1/p/namespaces/db/tables/t/sign%2F", 400, 0},
	{"POST", "/v1/p/namespaces/db/tables/t/sign;x=1", 400, 0},
	{"POST", "/v1/p/namespaces/db/tables/t/SIGN", 404, 0},
	{"GET", "/v1/p/namespaces/db/tables/t/Credentials", 404, 0},
	{"GET", "/v1/p/namespaces/db/tables/t/credentials/", 400, 0},
	// Other paths, methods.
	{"GET", "/v2/config", 404, 0},
	{"GET", "/v1", 404, 0},
	{"GET", "/", 400, 0},
	{"GET", "/v1/p/namespaces/db/tables/t/x", 404, 0},
	{"PUT", "/v1/p/namespaces/db/tables/t", 405, 0},
	{"GET", "/v1/oauth/tokens", 405, 0},
	{"PATCH", "/v1/config", 405, 0},
	// The query: only the route's parameters, once, valid.
	{"GET", "/v1/p/namespaces/db/tables/t?x=1", 400, 0},
	{"GET", "/v1/p/namespaces/db/tables/t?snapshots=refs&snapshots=all", 400, 0},
	{"GET", "/v1/p/namespaces/db/tables/t?snapshots=none", 400, 0},
	{"GET", "/v1/p/namespaces/db/tables?pageSize=-1", 400, 0},
	{"GET", "/v1/p/namespaces/db/tables?pageToken=%0A", 400, 0},
	{"GET", "/v1/p/namespaces?parent=a%1F%1Fb", 400, 0},
	{"GET", "/v1/p/namespaces/db/tables/t?snapshots=refs&&", 400, 0},
}

func TestParseRoute(t *testing.T) {
	for _, c := range routeCases {
		r, err := parseRoute(c.method, c.target, "\x1f")
		switch {
		case c.status == 0 && err != nil:
			t.Errorf("%s %q: %d %s", c.method, c.target, err.Status, err.Msg)
		case c.status == 0 && r.Op() != c.op:
			t.Errorf("%s %q: %s", c.method, c.target, r.OperationID())
		case c.status == 0 && r.target("\x1f") != c.target:
			t.Errorf("%s %q: canonical %q", c.method, c.target, r.target("\x1f"))
		case c.status != 0 && err == nil:
			t.Errorf("%s %q parsed as %s, want %d", c.method, c.target, r.OperationID(), c.status)
		case c.status != 0 && err.Status != c.status:
			t.Errorf("%s %q: %d %s, want %d", c.method, c.target, err.Status, err.Msg, c.status)
		}
	}
}

func TestParseRouteParameters(t *testing.T) {
	r, err := parseRoute("GET", "/v1/wh%201/namespaces/a%1Fb%C3%A9/tables/t%3A1?snapshots=all", "\x1f")
	if err != nil {
		t.Fatal(err)
	}
	if !r.HasPrefix || r.Prefix != "wh 1" || strings.Join(r.Namespace, "|") != "a|bé" || r.Name != "t:1" {
		t.Fatalf("%+v", r)
	}
	if got := r.decodedPath("\x1f"); got != "/v1/wh 1/namespaces/a\x1fbé/tables/t:1" {
		t.Fatalf("decoded path %q", got)
	}
	// '+' in a query is a space, re-encoded as %20.
	r, err = parseRoute("GET", "/v1/config?warehouse=a+b%2Bc", "\x1f")
	if err != nil || r.rawQuery() != "warehouse=a%20b%2Bc" {
		t.Fatalf("%q %v", r.rawQuery(), err)
	}
	// The catalog's separator decides the levels.
	r, err = parseRoute("GET", "/v1/namespaces/a.b", ".")
	if err != nil || strings.Join(r.Namespace, "|") != "a|b" {
		t.Fatalf("%+v %v", r, err)
	}
	if _, err := parseRoute("GET", "/v1/namespaces/a..b", "."); err == nil {
		t.Fatal("empty level with separator '.' parsed")
	}
	// 405 names the route's methods.
	_, err = parseRoute("PUT", "/v1/namespaces/db/tables/t", "\x1f")
	if err == nil || strings.Join(err.Allow, ",") != "GET,POST,DELETE,HEAD" {
		t.Fatalf("%+v", err)
	}
}

// TestEveryAllowListRouteCovered: the cases above name every operation.
func TestEveryAllowListRouteCovered(t *testing.T) {
	seen := map[Operation]bool{}
	for _, c := range routeCases {
		seen[c.op] = true
	}
	for _, s := range routeSpecs {
		if !seen[s.op] {
			t.Errorf("%s has no case", s.name)
		}
	}
}
