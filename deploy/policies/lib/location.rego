# S3 locations ("s3://bucket/path/") and whether an object or a list prefix
# lies under one. A library shared by table_scope and catalog_token.
package countersign.lib.location

# parse("s3://lake/wh/db/t") is {"bucket": "lake", "prefix": "wh/db/t/"}.
# The prefix always ends in "/" (or is "" for a whole bucket), so that the
# location wh/db/t does not cover wh/db/t_old/. Hadoop's s3a:// and s3n://
# are accepted too; anything else is undefined (covers nothing).
parse(loc) := {"bucket": parts[0], "prefix": dir_prefix(array.slice(parts, 1, count(parts)))} if {
	some scheme in {"s3://", "s3a://", "s3n://"}
	startswith(loc, scheme)
	parts := split(substring(loc, count(scheme), -1), "/")
	parts[0] != ""
}

dir_prefix(segs) := "" if concat("/", segs) == ""

dir_prefix(segs) := p if {
	p := concat("/", segs)
	endswith(p, "/")
}

dir_prefix(segs) := concat("", [p, "/"]) if {
	p := concat("/", segs)
	p != ""
	not endswith(p, "/")
}

# covers(loc, res): the resource (an object, or for a list its prefix) is
# in loc's bucket under loc's prefix. Bucket-level requests (no key, no
# prefix) are covered only by a whole-bucket location.
covers(loc, res) if {
	res.bucket == loc.bucket
	startswith(path(res), loc.prefix)
}

path(res) := res.prefix if is_string(res.prefix)

path(res) := res.key if not is_string(res.prefix)

# within(a, b): location a is location b or lies under it (both parsed).
within(a, b) if {
	a.bucket == b.bucket
	startswith(a.prefix, b.prefix)
}

# strictly_within(a, b): a lies under b and is not b itself.
strictly_within(a, b) if {
	within(a, b)
	a.prefix != b.prefix
}

# overlaps(a, b): one of the two locations contains the other.
overlaps(a, b) if within(a, b)

overlaps(a, b) if within(b, a)
