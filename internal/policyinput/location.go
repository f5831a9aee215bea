package policyinput

import "strings"

// Location is an S3 location as deploy/policies/lib/location.rego reads
// it: a bucket and a key prefix that is "" (the whole bucket) or ends in
// "/".
type Location struct {
	Bucket, Prefix string
}

// ParseLocation reads "s3://bucket/path" (or s3a://, s3n://) the way
// location.parse does: ok is false for any other scheme or no bucket.
func ParseLocation(s string) (Location, bool) {
	rest, ok := CutLocationScheme(s)
	if !ok {
		return Location{}, false
	}
	bucket, prefix, _ := strings.Cut(rest, "/")
	if bucket == "" {
		return Location{}, false
	}
	if prefix != "" && !strings.HasSuffix(prefix, "/") {
		prefix += "/"
	}
	return Location{Bucket: bucket, Prefix: prefix}, true
}

// CutLocationScheme is s without its scheme, s3://, s3a:// or s3n://; ok
// is false for any other.
func CutLocationScheme(s string) (rest string, ok bool) {
	for _, scheme := range []string{"s3://", "s3a://", "s3n://"} {
		if rest, ok = strings.CutPrefix(s, scheme); ok {
			return rest, true
		}
	}
	return "", false
}

// Within reports whether l is o or lies under it.
func (l Location) Within(o Location) bool {
	return l.Bucket == o.Bucket && strings.HasPrefix(l.Prefix, o.Prefix)
}

// StrictlyWithin reports whether l lies under o and is not o.
func (l Location) StrictlyWithin(o Location) bool {
	return l.Within(o) && l.Prefix != o.Prefix
}

// String is the location as s3://bucket/prefix.
func (l Location) String() string { return "s3://" + l.Bucket + "/" + l.Prefix }
