package catalog

import "strings"

// kind is what the front does with a route's answer.
type kind int

const (
	// kindStream: forwarded and streamed back unchanged (namespaces,
	// renames, the OAuth2 token route).
	kindStream kind = iota
	// kindConfig: GET /v1/config. Read for the namespace separator and
	// inspected: credentials in defaults or overrides are removed.
	kindConfig
	// kindTable: loadTable, createTable (and its staged form),
	// registerTable: a LoadTableResult, rewritten for remote signing.
	kindTable
	// kindInspect: every other table and view route, the multi-table
	// commit, and routes the front does not know: their answers are read
	// and lose any credentials (a newer catalog may vend in places this
	// version does not know; failing closed means looking).
	kindInspect
	// kindCredentials: GET .../tables/{table}/credentials. countersign
	// serves this route itself when vending is configured; the upstream's
	// credentials are never forwarded.
	kindCredentials
)

// route is an Iceberg REST path as the front understands it.
type route struct {
	kind kind
	// table is the raw path of the table the route names
	// ("/v1/{prefix}/namespaces/{namespace}/tables/{table}", still
	// percent-encoded), "" when it names none or (createTable,
	// registerTable) the name is in the body.
	table string
	// namespace is the raw path of the namespace,
	// "/v1/{prefix}/namespaces/{namespace}", when the route has one.
	namespace string
}

// classify maps a method and a raw path (after countersign's base path,
// "/v1/..." for Iceberg routes) to its route.
func classify(method, p string) route {
	rest, ok := strings.CutPrefix(p, "/v1/")
	if !ok {
		return route{kind: kindInspect}
	}
	switch rest {
	case "config":
		return route{kind: kindConfig}
	case "oauth/tokens":
		return route{kind: kindStream}
	}
	segs := strings.Split(rest, "/")
	for i, seg := range segs {
		if seg == "" && i != len(segs)-1 {
			// An empty segment: a catalog that cleans paths would read
			// "/v1/namespaces//db/tables/t" as loadTable, which must not
			// stream past the credential strip. Read, like unknown routes.
			return route{kind: kindInspect}
		}
	}
	i := -1
	switch {
	case len(segs) > 0 && segs[0] == "namespaces":
		i = 0
	case len(segs) > 1 && segs[1] == "namespaces":
		i = 1
	}
	if i < 0 {
		// /v1/[{prefix}/]tables/rename, views/rename, transactions/commit
		// and routes of newer specs.
		if n := len(segs); n >= 2 && segs[n-1] == "rename" && (segs[n-2] == "tables" || segs[n-2] == "views") {
			return route{kind: kindStream}
		}
		return route{kind: kindInspect}
	}
	ns := segs[i+1:]
	if len(ns) == 0 || ns[0] == "" {
		return route{kind: kindStream} // list or create namespaces
	}
	nsPath := "/v1/" + strings.Join(segs[:i+2], "/")
	r := route{namespace: nsPath}
	switch {
	case len(ns) == 1, len(ns) == 2 && ns[1] == "properties":
		r.kind = kindStream
	case len(ns) == 2 && ns[1] == "tables":
		r.kind = kindInspect // listTables
		if method == "POST" {
			r.kind = kindTable // createTable
		}
	case len(ns) == 2 && ns[1] == "register":
		r.kind = kindTable
		if method != "POST" {
			r.kind = kindInspect
		}
	case len(ns) >= 3 && ns[1] == "tables":
		r.table = nsPath + "/tables/" + ns[2]
		switch {
		case len(ns) == 3 && method == "GET":
			r.kind = kindTable // loadTable
		case len(ns) == 4 && ns[3] == "credentials":
			r.kind = kindCredentials
		default:
			r.kind = kindInspect
		}
	default:
		r.kind = kindInspect
	}
	return r
}
