package policy

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/countersign/countersign/internal/policyinput"
)

// TableLocation is the location ("s3://bucket/path/") that the policy's
// data gives table t in data.countersign.tables (the table-scope library's
// data, keyed "<prefix>/<namespace levels joined by .>/<name>"). ok is
// false when the data names no such table or gives it no string location.
// Credential vending uses it to know which prefix a table's credentials
// cover when no catalog says so.
func (m *Manager) TableLocation(_ context.Context, t *Table) (loc string, ok bool, err error) {
	e := m.engine.Load()
	if e == nil {
		return "", false, ErrNoPolicy
	}
	loc, ok = e.TableLocation(t)
	return loc, ok, nil
}

// TableLocation is Manager.TableLocation on this engine's data.
func (e *Engine) TableLocation(t *Table) (string, bool) {
	if t == nil {
		return "", false
	}
	cs, _ := e.docs["countersign"].(map[string]any)
	tables, _ := cs["tables"].(map[string]any)
	entry, _ := tables[t.Prefix+"/"+strings.Join(t.Namespace, ".")+"/"+t.Name].(map[string]any)
	loc, ok := entry["location"].(string)
	return loc, ok && loc != ""
}

// CheckTableLocation is nil when loc may be table t's location under the
// operator's data, and otherwise an error that says why and what to fix.
// It is the rule of deploy/policies/lib/table_scope.rego ("Locations only
// narrow"), for the catalog front to apply before it forwards a location
// change and to every location it learns:
//
//   - t has a location in data.countersign.tables: loc is that location or
//     lies under it;
//   - it has none: loc lies strictly under the most specific root of
//     data.countersign.table_roots (keyed "<prefix>/<namespace levels
//     joined by .>", each ancestor namespace, then "<prefix>"), neither
//     contains nor lies inside another table's location in the data,
//     contains no root, and lies inside no root more specific than its own;
//   - neither: refused.
//
// A loc with an empty, "." or ".." segment is refused in every case.
func (m *Manager) CheckTableLocation(_ context.Context, t *Table, loc string) error {
	e := m.engine.Load()
	if e == nil {
		return ErrNoPolicy
	}
	return e.CheckTableLocation(t, loc)
}

// CheckTableLocation is Manager.CheckTableLocation on this engine's data.
func (e *Engine) CheckTableLocation(t *Table, loc string) error {
	if t == nil {
		return errors.New("no table named")
	}
	cs, _ := e.docs["countersign"].(map[string]any)
	tables, _ := cs["tables"].(map[string]any)
	roots, _ := cs["table_roots"].(map[string]any)
	id := t.Prefix + "/" + strings.Join(t.Namespace, ".") + "/" + t.Name
	cat, ok := ParseLocation(loc)
	if !ok {
		return fmt.Errorf("the catalog's location %s for table %s is not an s3:// location", loc, id)
	}
	if cat.Prefix != "" {
		for seg := range strings.SplitSeq(strings.TrimSuffix(cat.Prefix, "/"), "/") {
			if seg == "" || seg == "." || seg == ".." {
				return fmt.Errorf("the catalog's location %s for table %s has an empty, \".\" or \"..\" path segment", loc, id)
			}
		}
	}
	entry, _ := tables[id].(map[string]any)
	if opLoc, _ := entry["location"].(string); opLoc != "" {
		op, ok := ParseLocation(opLoc)
		if !ok {
			return fmt.Errorf("table %s's location %s in data.countersign.tables is not an s3:// location", id, opLoc)
		}
		if !cat.Within(op) {
			return fmt.Errorf("the catalog's location %s for table %s is outside the operator's %s (data.countersign.tables): a catalog location may only narrow it", loc, id, opLoc)
		}
		return nil
	}
	keys := rootKeys(t)
	var rootVal any
	found := false
	for _, k := range keys {
		if rootVal, found = roots[k]; found {
			break
		}
	}
	if !found {
		quoted := make([]string, len(keys))
		for i, k := range keys {
			quoted[i] = strconv.Quote(k)
		}
		return fmt.Errorf("table %s has no location in data.countersign.tables and no root in data.countersign.table_roots (keys %s): a location from the catalog alone is never trusted", id, strings.Join(quoted, ", "))
	}
	rootStr, _ := rootVal.(string)
	root, ok := ParseLocation(rootStr)
	if !ok {
		return fmt.Errorf("the root %v that data.countersign.table_roots gives table %s is not an s3:// location", rootVal, id)
	}
	if !cat.StrictlyWithin(root) {
		return fmt.Errorf("the catalog's location %s for table %s is not strictly under the operator's root %s (data.countersign.table_roots)", loc, id, rootStr)
	}
	for other, v := range tables {
		ol, _ := v.(map[string]any)["location"].(string)
		o, ok := ParseLocation(ol)
		if other == id || !ok {
			continue
		}
		if cat.Within(o) || o.Within(cat) {
			return fmt.Errorf("the catalog's location %s for table %s overlaps table %s's location %s", loc, id, other, ol)
		}
	}
	for k, v := range roots {
		rs, _ := v.(string)
		o, ok := ParseLocation(rs)
		switch {
		case !ok:
		case o.Within(cat):
			return fmt.Errorf("the catalog's location %s for table %s contains the root %s of %q (data.countersign.table_roots)", loc, id, rs, k)
		case o.StrictlyWithin(root) && cat.Within(o):
			return fmt.Errorf("the catalog's location %s for table %s lies inside the root %s of %q, not the table's own (data.countersign.table_roots)", loc, id, rs, k)
		}
	}
	return nil
}

// rootKeys are the keys of data.countersign.table_roots that may apply to
// t, most specific first.
func rootKeys(t *Table) []string {
	keys := make([]string, 0, len(t.Namespace)+1)
	for i := len(t.Namespace); i > 0; i-- {
		keys = append(keys, t.Prefix+"/"+strings.Join(t.Namespace[:i], "."))
	}
	return append(keys, t.Prefix)
}

// Location is an S3 location as deploy/policies/lib/location.rego reads
// it (policyinput.Location: the catalog front uses it without linking
// OPA).
type Location = policyinput.Location

// ParseLocation reads "s3://bucket/path" (or s3a://, s3n://) the way
// location.parse does: ok is false for any other scheme or no bucket.
func ParseLocation(s string) (Location, bool) { return policyinput.ParseLocation(s) }
