package catalog

import "testing"

func TestClassify(t *testing.T) {
	cases := []struct {
		method, path string
		kind         kind
		table, ns    string
	}{
		{"GET", "/v1/config", kindConfig, "", ""},
		{"POST", "/v1/oauth/tokens", kindStream, "", ""},
		{"GET", "/v1/namespaces", kindStream, "", ""},
		{"GET", "/v1/prod/namespaces", kindStream, "", ""},
		{"POST", "/v1/namespaces/db", kindStream, "", "/v1/namespaces/db"},
		{"POST", "/v1/p/namespaces/db/properties", kindStream, "", "/v1/p/namespaces/db"},
		{"GET", "/v1/p/namespaces/db/tables", kindInspect, "", "/v1/p/namespaces/db"},
		{"POST", "/v1/p/namespaces/db/tables", kindTable, "", "/v1/p/namespaces/db"},
		{"POST", "/v1/namespaces/a%1Fb/register", kindTable, "", "/v1/namespaces/a%1Fb"},
		{"GET", "/v1/p/namespaces/db/tables/t", kindTable, "/v1/p/namespaces/db/tables/t", "/v1/p/namespaces/db"},
		{"GET", "/v1/namespaces/db/tables/t", kindTable, "/v1/namespaces/db/tables/t", "/v1/namespaces/db"},
		{"POST", "/v1/namespaces/db/tables/t", kindInspect, "/v1/namespaces/db/tables/t", "/v1/namespaces/db"},
		{"HEAD", "/v1/namespaces/db/tables/t", kindInspect, "/v1/namespaces/db/tables/t", "/v1/namespaces/db"},
		{"GET", "/v1/p/namespaces/db/tables/t/credentials", kindCredentials, "/v1/p/namespaces/db/tables/t", "/v1/p/namespaces/db"},
		{"POST", "/v1/p/namespaces/db/tables/t/plan", kindInspect, "/v1/p/namespaces/db/tables/t", "/v1/p/namespaces/db"},
		{"GET", "/v1/p/namespaces/db/views/v", kindInspect, "", "/v1/p/namespaces/db"},
		{"POST", "/v1/p/tables/rename", kindStream, "", ""},
		{"POST", "/v1/transactions/commit", kindInspect, "", ""},
		{"GET", "/v2/whatever", kindInspect, "", ""},
		// Empty segments, which a catalog may clean into a table route:
		// read and stripped, never streamed.
		{"GET", "/v1/namespaces//db/tables/t", kindInspect, "", ""},
		{"GET", "/v1//namespaces/db/tables/t/credentials", kindInspect, "", ""},
		{"GET", "/v1/namespaces/db//tables/t", kindInspect, "", ""},
		{"GET", "/v1/namespaces/", kindStream, "", ""},
	}
	for _, c := range cases {
		r := classify(c.method, c.path)
		if r.kind != c.kind || r.table != c.table || r.namespace != c.ns {
			t.Errorf("%s %s: %+v, want kind %d table %q namespace %q", c.method, c.path, r, c.kind, c.table, c.ns)
		}
	}
}
