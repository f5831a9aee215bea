package server

import "testing"

// FuzzLegacyRoute: the copy-free match of the legacy route says what
// matchSignRoute says of the same path, and no vending route has its path.
func FuzzLegacyRoute(f *testing.F) {
	for _, p := range []string{
		"/v1/aws/s3/sign", "/catalog/v1/aws/s3/sign", "/v1/aws/s3/sign/", "/v1/aws/s3/signx", "//v1/aws/s3/sign",
		"/v1/namespaces/db/tables/t/sign", "/v1/aws/s3/Sign", "/catalogv1/aws/s3/sign", "",
	} {
		f.Add(p, "/catalog")
	}
	f.Fuzz(func(t *testing.T, path, base string) {
		for _, bases := range [][]string{{""}, {"", base}, {base}} {
			rt, fast := matchLegacyRoute([]byte(path), bases)
			want, ok := matchSignRoute(path, bases, "\x1f")
			if fast != (ok && want.name == "legacy") {
				t.Fatalf("path %q under %q: legacy %v, matchSignRoute %v %+v", path, bases, fast, ok, want)
			}
			if fast && rt.name != "legacy" {
				t.Fatalf("path %q: route %+v", path, rt)
			}
			if _, vend := matchVendRoute(path, bases, "\x1f"); fast && vend {
				t.Fatalf("path %q under %q is a sign route and a vending route", path, bases)
			}
		}
	})
}
