package catalog

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"

	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/countersign/countersign/internal/policyinput"
)

// knownTables is the location of every table the front has seen, by the
// table's identity (decoded prefix, namespace levels and name: every
// spelling of its path is one table), whoever asked: a location that contains or lies
// inside another known table's is refused (tablechange.go), so that no
// table's route or credentials reach another table's objects, also where
// the operator's data gives only a root. Bounded like Locations (the
// least recently seen table is forgotten first).
//
// A known table may since have been dropped, renamed or moved at the
// catalog: before a conflict refuses anything, the other table's location
// is asked again with the caller's token; a table the catalog no longer
// has (404) is forgotten, a new location replaces the old.
type knownTables struct {
	mu     sync.Mutex
	tables *lru.Cache[string, knownTable]
}

// knownTable is a table's location, and a path to ask the catalog about
// it again.
type knownTable struct {
	loc  policyinput.Location
	path string
	// by is the token hash of the caller whose answer admitted the
	// table: only that caller's "no such table" forgets it (another
	// caller's may mean only that the catalog hides the table from it).
	by [32]byte
}

func newKnownTables(size int) *knownTables {
	c, _ := lru.New[string, knownTable](size) // size > 0 after setDefaults
	return &knownTables{tables: c}
}

// tableKey is a table's identity as a map key.
func tableKey(t policyinput.Table) string {
	return t.Prefix + "\x00" + strings.Join(t.Namespace, "\x1f") + "\x00" + t.Name
}

// overlapError is a location that contains or lies inside another known
// table's. The caller's message does not name the other table (the
// caller may not see it); the log does.
type overlapError struct {
	loc, other, otherLoc string
}

func (e *overlapError) Error() string {
	return fmt.Sprintf("the location %s contains or lies inside the location of another table countersign knows", e.loc)
}

// admit records table at loc (add) or only checks it, unless loc
// overlaps another known table's location; recheck asks the catalog again
// for another table's location ("" and nil: the catalog no longer has it).
// table is the table's identity (tableKey), path a path of it.
func (k *knownTables) admit(ctx context.Context, table, path, loc string, add bool, by [32]byte, recheck func(ctx context.Context, path string) (string, error)) error {
	l, ok := policyinput.ParseLocation(loc)
	if !ok {
		return fmt.Errorf("the location %s is not an s3:// location", loc)
	}
	if cur, ok := k.tables.Get(table); ok && cur.loc == l {
		return nil // known, unchanged: checked when it was admitted
	}
	for range 4 { // a few rechecks; a catalog that keeps moving tables is refused
		k.mu.Lock()
		other, known, clash := k.conflict(table, l)
		if !clash {
			if add {
				k.tables.Add(table, knownTable{l, path, by})
			}
			k.mu.Unlock()
			return nil
		}
		k.mu.Unlock()
		now, err := recheck(ctx, known.path)
		nl, moved := policyinput.ParseLocation(now)
		gone := err == nil && now == ""
		if err != nil || moved && nl == known.loc || gone && known.by != by {
			// The other table is still there (or cannot be asked about),
			// or a caller other than the one it was learned from cannot
			// see it: catalogs that hide tables from a caller answer 404.
			// The other table is still there (or cannot be asked about).
			return &overlapError{loc: loc, other: known.path, otherLoc: known.loc.String()}
		}
		k.mu.Lock()
		if cur, ok := k.tables.Peek(other); ok && cur == known {
			if moved {
				k.tables.Add(other, knownTable{nl, known.path, known.by})
			} else {
				k.tables.Remove(other) // the catalog no longer has it
			}
		}
		k.mu.Unlock()
	}
	return errors.New("the catalog keeps moving the tables around " + loc + "; try again")
}

// conflict is a known table other than table whose location overlaps l.
func (k *knownTables) conflict(table string, l policyinput.Location) (string, knownTable, bool) {
	for _, other := range k.tables.Keys() {
		o, ok := k.tables.Peek(other)
		if !ok || other == table {
			continue
		}
		if l.Within(o.loc) || o.loc.Within(l) {
			return other, o, true
		}
	}
	return "", knownTable{}, false
}

// recheckWith asks the catalog for a table's location with the caller's
// Authorization: "" when it no longer has the table (404).
func (f *Front) recheckWith(authorization []byte) func(ctx context.Context, table string) (string, error) {
	return func(ctx context.Context, table string) (string, error) {
		loc, err := f.fetchLocation(ctx, authorization, table)
		var re *RefusedError
		if errors.As(err, &re) && re.Status == http.StatusNotFound {
			return "", nil
		}
		return loc, err
	}
}

// forget removes a table the catalog dropped or unregistered through the
// front.
func (k *knownTables) forget(table string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.tables.Remove(table)
}

// move gives a renamed table's known location to its new name (path a
// path of it).
func (k *knownTables) move(from, to, path string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if t, ok := k.tables.Peek(from); ok {
		k.tables.Remove(from)
		t.path = path
		k.tables.Add(to, t)
	}
}
