package catalog

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/valyala/fasthttp"

	"github.com/countersign/countersign/auth"
	"github.com/countersign/countersign/internal/policyinput"
)

// Locations only narrow. A table's location decides what its sign route
// and its vended credentials reach, and any principal that may commit to
// a table can change it at the catalog: Iceberg's set-location update
// (updateTable, commitTransaction), or createTable and registerTable with
// a location of the caller's choosing. So the front:
//
//   - refuses, before forwarding, every commit that carries a
//     set-location update (403): a table's location changes only when the
//     operator changes it, in the policy's data;
//   - refuses, before forwarding, a createTable whose location (and a
//     registerTable whose metadata-location) the operator's data does not
//     allow for the new table (403);
//   - checks every location it learns, from table answers and from its
//     own loadTable on the sign and credentials routes, the same way: a
//     location outside the operator's is never learned, vended or signed
//     for (403).
//
// "Allowed" is LocationPolicy's answer, the rule of
// deploy/policies/lib/table_scope.rego: within the table's location in
// data.countersign.tables, or strictly under its warehouse's or
// namespace's root in data.countersign.table_roots and clear of every
// other table's location.

// LocationPolicy is the operator's word on where a table may be
// (implemented by *policy.Manager).
type LocationPolicy interface {
	// CheckTableLocation is nil when loc may be t's location, otherwise
	// an error that says why.
	CheckTableLocation(ctx context.Context, t *policyinput.Table, loc string) error
}

// LocationRefusedError is a table location the operator's data does not
// allow: nothing is signed or vended for the table while the catalog
// gives it.
type LocationRefusedError struct {
	Table string // raw path
	Err   error
}

func (e *LocationRefusedError) Error() string {
	return "table " + e.Table + ": " + e.Err.Error()
}

func (e *LocationRefusedError) Unwrap() error { return e.Err }

// Retryable is false: the catalog gives the same location until the
// table or the policy's data changes.
func (e *LocationRefusedError) Retryable() bool { return false }

// changeKind is a request that may set a table's location.
type changeKind uint8

const (
	changeNone        changeKind = iota
	changeCommit                 // updateTable: POST .../tables/{table}
	changeTransaction            // commitTransaction: POST /v1/[{prefix}/]transactions/commit
	changeCreate                 // createTable: POST .../namespaces/{namespace}/tables
	changeRegister               // registerTable: POST .../namespaces/{namespace}/register
)

// tableChange is what the front knows of such a request from its route.
type tableChange struct {
	kind changeKind
	// table is the table of a commit; of createTable and registerTable
	// its prefix and namespace (the name is in the body); of a
	// transaction its prefix.
	table policyinput.Table
	// what names the table in messages: the route's path.
	what string
	rt   *Route
}

// changeOf is the location change the route may carry.
func changeOf(rt *Route, path string) tableChange {
	t := policyinput.Table{Prefix: rt.Prefix, Namespace: rt.Namespace}
	switch rt.Op() {
	case OpUpdateTable:
		t.Name = rt.Name
		return tableChange{kind: changeCommit, table: t, what: path, rt: rt}
	case OpCommitTransaction:
		return tableChange{kind: changeTransaction, table: t, what: path, rt: rt}
	case OpCreateTable:
		return tableChange{kind: changeCreate, table: t, what: path, rt: rt}
	case OpRegisterTable:
		return tableChange{kind: changeRegister, table: t, what: path, rt: rt}
	}
	return tableChange{}
}

// checkTableChange answers, and returns false, a request that would set
// a table's location the operator has not given it; true lets it go on.
func (f *Front) checkTableChange(ctx *fasthttp.RequestCtx, rec Refusals, method, path string, rt *Route, body []byte) bool {
	c := changeOf(rt, path)
	if c.kind == changeNone {
		return true
	}
	status, msg := f.decideTableChange(ctx, c, ctx.Request.Header.Peek("Authorization"), body)
	if status == 0 {
		return true
	}
	f.log.Warn("catalog request refused: table location change", "method", method, "path", truncate(path), "status", status, "reason", msg)
	typ := "ForbiddenException"
	if status == http.StatusBadRequest {
		typ = "BadRequestException"
	}
	r := refusalOf(rt, status, msg, 0)
	if c.kind == changeCreate || c.kind == changeRegister {
		// The new table's name is in the body, which the refusal names.
		if doc, err := decodeMembers(body); err == nil {
			if name := stringMember(doc, "name"); name != "" && r.Table != nil {
				r.Table.Name = name
			}
		}
	}
	f.refuse(ctx, rec, r, typ)
	return false
}

// decideTableChange is 0 for a request that sets no location or one the
// operator's data allows, else the status and message to refuse it with.
func (f *Front) decideTableChange(ctx context.Context, c tableChange, authorization, body []byte) (int, string) {
	if len(bytes.TrimSpace(body)) == 0 {
		return 0, "" // nothing to set; the catalog answers for the missing body
	}
	if err := checkStrict(body); err != nil {
		return http.StatusBadRequest, "the request's body " + err.Error()
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(body, &doc); err != nil || doc == nil {
		return http.StatusBadRequest, "the request's body is not a JSON object"
	}
	switch c.kind {
	case changeCommit:
		if setsLocation(doc) {
			return http.StatusForbidden, setLocationRefused(c.what)
		}
		// CommitTableRequest's optional identifier (PyIceberg sends it): a
		// catalog that commits to the table the body names would have the
		// front learn another table's commit answer, and its location,
		// under the path's table. Only the path's own table is forwarded.
		for _, raw := range membersFold(doc, "identifier") {
			if msg := sameIdentifier(raw, c.table); msg != "" {
				return http.StatusBadRequest, "the commit to " + truncate(c.what) + " has an identifier that " + msg + "; send the path's table or no identifier"
			}
		}
	case changeTransaction:
		for _, raw := range membersFold(doc, "table-changes") {
			var changes []map[string]json.RawMessage
			if json.Unmarshal(raw, &changes) != nil {
				return http.StatusBadRequest, "the transaction's table-changes is not an array of objects"
			}
			for _, ch := range changes {
				if setsLocation(ch) {
					return http.StatusForbidden, setLocationRefused(c.what + " (" + identifierOf(ch) + ")")
				}
			}
		}
	case changeCreate, changeRegister:
		member := "location"
		if c.kind == changeRegister {
			member = "metadata-location"
		}
		t := c.table
		t.Name = stringMember(doc, "name")
		for _, name := range []string{"location", member} {
			for _, raw := range membersFold(doc, name) {
				var loc string
				if json.Unmarshal(raw, &loc) != nil {
					return http.StatusBadRequest, fmt.Sprintf("the table request's %q is not a string", name)
				}
				if loc == "" {
					continue
				}
				err := error(nil)
				if f.locationPolicy != nil {
					err = f.locationPolicy.CheckTableLocation(ctx, &t, loc)
				}
				if err == nil {
					tr := c.rt.tableRoute(t.Name)
					table := tr.escapedPath(f.NamespaceSeparator())
					if err = f.known.admit(ctx, tableKey(t), table, loc, false, tokenOf(authorization), f.recheckWith(authorization)); err != nil {
						f.logOverlap(table, err)
					}
				}
				if err != nil {
					return http.StatusForbidden, fmt.Sprintf("countersign refuses to create or register table %q in %s at %s: %v; a table's location is the operator's to give (data.countersign.tables, data.countersign.table_roots)",
						t.Name, c.what, truncate(loc), err)
				}
			}
		}
	}
	return 0, ""
}

func setLocationRefused(what string) string {
	return "countersign refuses the set-location update on " + truncate(what) +
		": a table's location is the operator's (data.countersign.tables, data.countersign.table_roots) and changes only when the operator changes it; commit without set-location"
}

// setsLocation reports whether a commit's updates carry a set-location.
// Names and actions are matched without regard to case: catalogs written
// with encoding/json match member names that way, and Iceberg's parser
// lower-cases the action.
func setsLocation(commit map[string]json.RawMessage) bool {
	for _, raw := range membersFold(commit, "updates") {
		var updates []map[string]json.RawMessage
		if json.Unmarshal(raw, &updates) != nil {
			return true // not an update list: refused rather than guessed
		}
		for _, u := range updates {
			for _, a := range membersFold(u, "action") {
				var action string
				if json.Unmarshal(a, &action) != nil || strings.EqualFold(action, "set-location") {
					return true
				}
			}
		}
	}
	return false
}

// sameIdentifier is "" when raw is a TableIdentifier naming exactly t
// (every member spelled exactly, namespace levels and name equal).
func sameIdentifier(raw json.RawMessage, t policyinput.Table) string {
	if bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return ""
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil || m == nil {
		return "is not an object"
	}
	if err := spelledExactly(m, "namespace", "name"); err != nil {
		return err.Error()
	}
	var ns []string
	var name string
	if json.Unmarshal(m["namespace"], &ns) != nil || json.Unmarshal(m["name"], &name) != nil {
		return "has no namespace array and name string"
	}
	if name != t.Name || !slices.Equal(ns, t.Namespace) {
		return "names " + quoteShort(strings.Join(append(ns, name), ".")) + ", not the table of the path"
	}
	return ""
}

// identifierOf names a transaction's table change for messages.
func identifierOf(ch map[string]json.RawMessage) string {
	var id struct {
		Namespace []string `json:"namespace"`
		Name      string   `json:"name"`
	}
	for _, raw := range membersFold(ch, "identifier") {
		_ = json.Unmarshal(raw, &id)
	}
	return truncate(strings.Join(append(id.Namespace, id.Name), "."))
}

// membersFold are the values of m's members named name in any letter case.
func membersFold(m map[string]json.RawMessage, name string) []json.RawMessage {
	var out []json.RawMessage
	for k, v := range m {
		if strings.EqualFold(k, name) {
			out = append(out, v)
		}
	}
	return out
}

// checkLocation admits loc as the location of the table at a canonical
// path, or refuses it (a *LocationRefusedError): when the operator's data
// does not allow it (LocationPolicy), or when it contains or lies inside
// another table's the front knows (knownTables; authorization asks the
// catalog again about that table).
func (f *Front) checkLocation(ctx context.Context, authorization []byte, table, loc string) error {
	t, ok := f.parseTable(table)
	if !ok {
		return &LocationRefusedError{Table: truncate(table), Err: errors.New("the table's path does not name a table")}
	}
	if f.locationPolicy != nil {
		if err := f.locationPolicy.CheckTableLocation(ctx, &t, loc); err != nil {
			return &LocationRefusedError{Table: truncate(table), Err: err}
		}
	}
	if err := f.known.admit(ctx, tableKey(t), table, loc, true, tokenOf(authorization), f.recheckWith(authorization)); err != nil {
		f.logOverlap(table, err)
		return &LocationRefusedError{Table: truncate(table), Err: err}
	}
	return nil
}

// logOverlap names, in the log only, the other table of an overlap.
func (f *Front) logOverlap(table string, err error) {
	var oe *overlapError
	if errors.As(err, &oe) {
		f.log.Warn("table location overlaps another table's", "table", truncate(table), "location", truncate(oe.loc), "other", truncate(oe.other), "other_location", oe.otherLoc)
	}
}

// refusedAnswer records and answers a table answer whose location is
// refused: true when err was one.
func (f *Front) refusedAnswer(ctx *fasthttp.RequestCtx, rec Refusals, rt *Route, err error) bool {
	var lr *LocationRefusedError
	if !errors.As(err, &lr) {
		return false
	}
	r := refusalOf(rt, http.StatusForbidden,
		"countersign does not serve this table: "+lr.Error()+"; nothing is signed or vended for it until the operator's data gives it this location or the catalog gives it one the data allows", 0)
	if t, ok := f.parseTable(lr.Table); ok && r.Table != nil {
		r.Table.Name = t.Name // createTable, registerTable: the name is in the body
	}
	f.refuse(ctx, rec, r, "ForbiddenException")
	return true
}

// tokenOf is the hash of a caller's Authorization (zero without one).
func tokenOf(authorization []byte) [32]byte {
	h, _ := auth.TokenHash(authorization)
	return h
}
