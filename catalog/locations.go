package catalog

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"golang.org/x/sync/singleflight"
)

// Locations remembers each table's location as the catalog gave it to one
// caller: the key is the caller's token (its SHA-256, as the sign handler
// knows it) and the table's raw path, so that a location one caller
// learned never lets another caller's request through. An entry is used
// for TTL; after that it is fetched again with the caller's token, and
// while the catalog cannot be reached (not when it refuses) the old entry
// serves for StaleGrace more.
type Locations struct {
	cache      *lru.Cache[locationKey, locationEntry]
	ttl, grace time.Duration
	fetch      func(ctx context.Context, authorization []byte, table string) (string, error)
	// check refuses a fetched location the operator's data does not
	// allow (a *LocationRefusedError); nil checks none.
	check func(ctx context.Context, authorization []byte, table, location string) error
	now   func() time.Time
	group singleflight.Group
}

type locationKey struct {
	token [32]byte
	table string // raw path: /v1/{prefix}/namespaces/{namespace}/tables/{table}
}

type locationEntry struct {
	location string
	at       time.Time
}

// RefusedError is the catalog's refusal of the caller's request for the
// table (401, 403, 404, 419, or another 4xx): nothing is signed for it.
type RefusedError struct {
	Table   string // raw path
	Status  int
	Message string // the catalog's error message, if it gave one
}

func (e *RefusedError) Error() string {
	msg := fmt.Sprintf("the catalog refused this caller table %s (HTTP %d)", e.Table, e.Status)
	if e.Message != "" {
		msg += ": " + e.Message
	}
	return msg
}

// Retryable is false: asking again gets the same answer.
func (e *RefusedError) Retryable() bool { return false }

// UnavailableError is a table location that could not be fetched: the
// catalog is down, slow, or answered something unreadable.
type UnavailableError struct {
	Table string
	Err   error
}

func (e *UnavailableError) Error() string {
	return "the catalog could not be asked for table " + e.Table + ": " + e.Err.Error()
}

func (e *UnavailableError) Unwrap() error { return e.Err }

// Retryable is true: the catalog may answer later.
func (e *UnavailableError) Retryable() bool { return true }

func newLocations(size int, ttl, grace time.Duration, now func() time.Time,
	fetch func(ctx context.Context, authorization []byte, table string) (string, error)) *Locations {
	c, _ := lru.New[locationKey, locationEntry](size) // size > 0 after setDefaults
	return &Locations{cache: c, ttl: ttl, grace: grace, fetch: fetch, now: now}
}

// learn records the location the catalog just gave the caller.
func (l *Locations) learn(token [32]byte, table, location string) {
	if location == "" || table == "" {
		return
	}
	l.cache.Add(locationKey{token, table}, locationEntry{location, l.now()})
}

// Locate returns the table's location for the caller with this token: the
// remembered one while fresh (no allocation, no network), else the
// catalog's answer to a loadTable with the caller's Authorization.
func (l *Locations) Locate(ctx context.Context, token [32]byte, authorization []byte, table string) (string, error) {
	key := locationKey{token, table}
	// Peek takes the read lock only: the sign route's lookups do not
	// contend. Recency is kept by the refresh instead: an entry in use is
	// added again every TTL, which moves it to the front.
	e, ok := l.cache.Peek(key)
	now := l.now()
	if ok && now.Sub(e.at) < l.ttl {
		return e.location, nil
	}
	// One fetch per (caller, table) at a time: a scan's first requests
	// arrive together.
	sf := string(token[:]) + table
	v, err, _ := l.group.Do(sf, func() (any, error) {
		loc, err := l.fetch(ctx, authorization, table)
		if err != nil {
			return "", err
		}
		if l.check != nil {
			// A location the catalog now gives (any committer can change
			// it there) is never one the operator has not allowed.
			if err := l.check(ctx, authorization, table, loc); err != nil {
				return "", err
			}
		}
		l.cache.Add(key, locationEntry{loc, l.now()})
		return loc, nil
	})
	if err != nil {
		var ue *UnavailableError
		if ok && errors.As(err, &ue) && now.Sub(e.at) < l.ttl+l.grace {
			return e.location, nil // the catalog is unreachable: the known location serves on
		}
		var re *RefusedError
		var lr *LocationRefusedError
		if errors.As(err, &re) || errors.As(err, &lr) {
			l.cache.Remove(key)
		}
		return "", err
	}
	return v.(string), nil
}

// tableEndpoint is the table's sign route relative to countersign's base
// URI: "v1/.../tables/{table}/sign".
func tableEndpoint(table string) string {
	return strings.TrimPrefix(table, "/") + "/sign"
}
