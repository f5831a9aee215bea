package policy

import (
	"context"
	"strings"
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
