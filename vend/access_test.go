package vend

import (
	"strings"
	"testing"
)

func TestSplitLocation(t *testing.T) {
	for loc, want := range map[string][2]string{
		"s3://lake/wh/db/t/": {"lake", "wh/db/t/"},
		"s3://lake/wh/db/t":  {"lake", "wh/db/t/"}, // wh/db/t covers wh/db/t/, not wh/db/t_old/
		"s3a://lake/wh/":     {"lake", "wh/"},
		"s3n://lake/x":       {"lake", "x/"},
		"s3://lake":          {"lake", ""},
		"s3://lake/":         {"lake", ""},
		"s3://lake/ü-é 数据/":  {"lake", "ü-é 数据/"},
	} {
		b, p, err := splitLocation(loc)
		if err != nil || b != want[0] || p != want[1] {
			t.Errorf("splitLocation(%q) = %q, %q, %v; want %q, %q", loc, b, p, err, want[0], want[1])
		}
	}
	for loc, want := range map[string]string{
		"gs://lake/wh/":        "not an s3:// URL",
		"lake/wh/":             "not an s3:// URL",
		"s3:///wh/":            "names no bucket",
		"s3://lake//wh/":       "empty path segment",
		"s3://lake/wh/*/":      "cannot name this prefix exactly",
		"s3://lake/wh/?/":      "cannot name this prefix exactly",
		"s3://lake/wh/db/$/":   `contains '$'`,
		"s3://lake/wh/*/x":     `contains '*'`,
		"s3://lake/a${x}/":     `contains '$'`,
		"s3://lake/wh/\x01/":   "control character (0x01)",
		"s3://lake/wh/\u0085/": "control character (U+0085)",
		"s3://lake/wh\\db/":    `contains '\'`,
		"s3://lake/wh//t/":     "empty path segment",
		"s3://lak*/wh/":        "invalid character",
		"s3://LAKE/wh/":        "invalid character",
		"s3://la/wh/":          "3 to 63 characters",
		"s3://-lake/wh/":       "not a valid S3 bucket name",
		"s3://10.0.0.1/wh/":    "IP address",
		"s3://lake/wh/../x/":   `".." path segment`,
		"s3://lake/./wh/":      `"." path segment`,
		"s3://lake/wh/..":      `".." path segment`,
		"s3://lake/wh/\xff/":   "not valid UTF-8",
	} {
		if _, _, err := splitLocation(loc); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("splitLocation(%q): %v, want an error with %q", loc, err, want)
		}
	}
}

func TestParseAccess(t *testing.T) {
	for _, s := range []string{"read", "read-write"} {
		if a, err := ParseAccess(s); err != nil || string(a) != s {
			t.Errorf("ParseAccess(%q) = %q, %v", s, a, err)
		}
	}
	if _, err := ParseAccess("write"); err == nil || !strings.Contains(err.Error(), "read or read-write") {
		t.Errorf("ParseAccess(write): %v", err)
	}
	req, opt := ReadWrite.classes()
	if strings.Join(req, ",") != "read,write" || strings.Join(opt, ",") != "list,delete" {
		t.Errorf("read-write classes %v %v", req, opt)
	}
	req, opt = Read.classes()
	if strings.Join(req, ",") != "read" || strings.Join(opt, ",") != "list" {
		t.Errorf("read classes %v %v", req, opt)
	}
}

// TestScopeCoversAndWithin: a scope covers a prefix for an action only
// when the action is exact and one grant of it is a prefix of it; within
// keeps what lies under the prefix, but not a prefix holding an IAM
// metacharacter.
func TestScopeCoversAndWithin(t *testing.T) {
	s := Scope{Exact: true, Grants: []Grant{
		{Bucket: "lake", Prefix: "wh/db/", Actions: []string{"s3:GetObject"}},
		{Bucket: "lake", Prefix: "wh/sales/2026/", Actions: []string{"s3:GetObject"}},
		{Bucket: "lake", Prefix: "wh/sales/$/", Actions: []string{"s3:GetObject"}},
		{Bucket: "other", Prefix: "", Actions: []string{"s3:GetObject"}},
	}}
	for _, c := range []struct {
		bucket, prefix string
		covers         bool
		within         []string
	}{
		{"lake", "wh/db/t/", true, []string{"wh/db/t/"}},
		{"lake", "wh/db/", true, []string{"wh/db/"}},
		{"lake", "wh/", false, []string{"wh/db/", "wh/sales/2026/"}},
		{"lake", "wh/sales/", false, []string{"wh/sales/2026/"}},
		{"lake", "wh/dbx/", false, nil},
		{"other", "any/", true, []string{"any/"}},
		{"third", "", false, nil},
	} {
		if got := s.covers(c.bucket, c.prefix, "s3:GetObject"); got != c.covers {
			t.Errorf("covers(%s, %q) = %v", c.bucket, c.prefix, got)
		}
		var got []string
		for _, g := range s.within(c.bucket, c.prefix) {
			if g.Bucket != c.bucket {
				t.Errorf("within(%s) gave bucket %s", c.bucket, g.Bucket)
			}
			got = append(got, g.Prefix)
		}
		if strings.Join(got, ",") != strings.Join(c.within, ",") {
			t.Errorf("within(%s, %q) = %v, want %v", c.bucket, c.prefix, got, c.within)
		}
	}
	if s.covers("lake", "wh/db/t/", "s3:PutObject") {
		t.Error("a scope covers a prefix for an action it does not grant")
	}
	s.Inexact = map[string]string{"s3:GetObject": "a header condition"}
	if s.covers("lake", "wh/db/t/", "s3:GetObject") {
		t.Error("a scope covers a prefix for an inexact action")
	}
}
