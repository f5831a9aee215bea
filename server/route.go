package server

import (
	"strings"
	"unicode/utf8"

	"github.com/countersign/countersign/internal/policyinput"
)

// route is what the URL path of a sign request says: which protocol
// variant, and for the per-table route, which table.
type route struct {
	name  string             // metric/log label: "legacy" or "table"
	table *policyinput.Table // nil on the legacy route
	// tablePath is the table's raw path after the base path,
	// "/v1/{prefix}/namespaces/{namespace}/tables/{table}" (no
	// allocation: a slice of the request path), "" on the legacy route.
	tablePath string
}

// defaultNamespaceSeparator joins the levels of a multi-level namespace
// in Iceberg's paths (%1F) unless the catalog front learned another from
// the catalog's /v1/config (Options.NamespaceSeparator).
const defaultNamespaceSeparator = "\x1f"

// matchSignRoute recognizes, under any of the configured base paths:
//
//	/v1/aws/s3/sign                                      (legacy, Iceberg <= 1.10, PyIceberg)
//	/v1/namespaces/{namespace}/tables/{table}/sign       (Iceberg 1.11)
//	/v1/{prefix}/namespaces/{namespace}/tables/{table}/sign
//
// rawPath is the path as received, still percent-encoded, so that an
// encoded '/' inside a segment cannot shift the segments.
//
// sep is the decoded namespace separator.
func matchSignRoute(rawPath string, basePaths []string, sep string) (route, bool) {
	for _, base := range basePaths {
		rest, ok := strings.CutPrefix(rawPath, base)
		if !ok {
			continue
		}
		if r, ok := matchV1(rest, sep); ok {
			return r, true
		}
	}
	return route{}, false
}

// matchLegacyRoute reports whether rawPath is the legacy sign route under
// one of basePaths, as matchSignRoute would, without copying rawPath.
func matchLegacyRoute(rawPath []byte, basePaths []string) (route, bool) {
	const legacy = "/v1/aws/s3/sign"
	for _, base := range basePaths {
		if len(rawPath) == len(base)+len(legacy) && string(rawPath[:len(base)]) == base && string(rawPath[len(base):]) == legacy {
			return route{name: "legacy"}, true
		}
	}
	return route{}, false
}

func matchV1(p, sep string) (route, bool) {
	if p == "/v1/aws/s3/sign" {
		return route{name: "legacy"}, true
	}
	return matchTablePath(p, "sign", "table", sep)
}

// matchTablePath recognizes /v1/[{prefix}/]namespaces/{namespace}/tables/{table}/{verb};
// sep is the decoded namespace separator.
func matchTablePath(p, verb, name, sep string) (route, bool) {
	rest, ok := strings.CutPrefix(p, "/v1/")
	if !ok {
		return route{}, false
	}
	segs := strings.Split(rest, "/")
	var prefix string
	switch {
	case len(segs) == 5:
	case len(segs) == 6:
		prefix, segs = segs[0], segs[1:]
	default:
		return route{}, false
	}
	if segs[0] != "namespaces" || segs[2] != "tables" || segs[4] != verb {
		return route{}, false
	}
	t := &policyinput.Table{}
	var ok1, ok2, ok3 bool
	if prefix != "" {
		t.Prefix, ok1 = unescapeSegment(prefix, false)
	} else {
		ok1 = true
	}
	ns, ok2 := unescapeSegment(segs[1], true)
	t.Name, ok3 = unescapeSegment(segs[3], false)
	if !ok1 || !ok2 || !ok3 || ns == "" || t.Name == "" {
		return route{}, false
	}
	t.Namespace = strings.Split(ns, sep)
	for _, level := range t.Namespace {
		if level == "" {
			return route{}, false
		}
	}
	return route{name: name, table: t, tablePath: p[:len(p)-len(verb)-1]}, true
}

// unescapeSegment percent-decodes one path segment. Invalid escapes, invalid
// UTF-8 and control characters (C0, DEL, C1) are refused, except the namespace
// separator (U+001F) where levels are joined (namespace is true): a
// table's name or a prefix holds none. An encoded '/' is kept: segments
// were split before decoding.
func unescapeSegment(s string, namespace bool) (string, bool) {
	if s == "" {
		return "", false
	}
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '%' {
			if i+2 >= len(s) {
				return "", false
			}
			hi, lo := fromHex(s[i+1]), fromHex(s[i+2])
			if hi < 0 || lo < 0 {
				return "", false
			}
			c = byte(hi<<4 | lo)
			i += 2
		}
		if (c < 0x20 && !(namespace && c == 0x1f)) || c == 0x7f {
			return "", false
		}
		b = append(b, c)
	}
	if !utf8.Valid(b) {
		return "", false
	}
	for i := 0; i+1 < len(b); i++ {
		if b[i] == 0xc2 && b[i+1] < 0xa0 { // C1 controls, U+0080 to U+009F
			return "", false
		}
	}
	return string(b), true
}

func fromHex(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'a' && c <= 'f':
		return int(c-'a') + 10
	case c >= 'A' && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}
