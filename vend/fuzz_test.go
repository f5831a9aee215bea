package vend

import (
	"strings"
	"testing"
	"unicode"

	"github.com/countersign/countersign/s3req"
)

// FuzzSplitLocation: a location that is accepted names a valid bucket and
// a prefix a session policy can name exactly, and the location vended
// ("s3://bucket/prefix") reads back as the same bucket and prefix.
func FuzzSplitLocation(f *testing.F) {
	for _, s := range []string{"s3://lake/wh/db/t", "s3a://lake/", "s3://lake", "s3://lake/wh/../x/", "s3://LAKE/x", "s3://lake/a$b/", "s3://lake/ü/"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, loc string) {
		b, p, err := splitLocation(loc)
		if err != nil {
			return
		}
		if s3req.CheckBucket(b) != nil {
			t.Fatalf("%q: bucket %q", loc, b)
		}
		if p != "" && (!strings.HasSuffix(p, "/") || strings.HasPrefix(p, "/") || strings.Contains(p, "//") || strings.ContainsAny(p, "*?$\\") ||
			strings.IndexFunc(p, unicode.IsControl) >= 0) {
			t.Fatalf("%q: prefix %q", loc, p)
		}
		for _, seg := range strings.Split(p, "/") {
			if seg == "." || seg == ".." {
				t.Fatalf("%q: prefix %q", loc, p)
			}
		}
		b2, p2, err := splitLocation("s3://" + b + "/" + p)
		if err != nil || b2 != b || p2 != p {
			t.Fatalf("%q: vended s3://%s/%s reads as %q %q %v", loc, b, p, b2, p2, err)
		}
	})
}
