# Group grants on key prefixes, from data.countersign.grants:
#
#   {"<group>": {"<bucket>": {"read":   ["wh/db/t/", ...],
#                             "write":  [...],
#                             "delete": [...],
#                             "delete_version": [...],
#                             "list":   [...]}}}
#
# keyed by what a decision looks up — the principal's group, the bucket,
# the access class — so a decision scans only that group's prefixes for
# that bucket and access, however many grants there are.
#
# "delete" covers deletes that leave the versions behind (DeleteObject,
# DeleteObjects without <VersionId>: a delete marker on a versioned
# bucket), which is what snapshot expiry sends. Removing a version for
# good (s3:DeleteObjectVersion, access delete_version) needs a grant that
# names it: "delete" does not cover it, so versioning stays a way back.
#
# Prefixes are plain string prefixes, as in IAM: end them with "/" ("wh/db/t/")
# or "wh/db/t" would also cover "wh/db/t_old/".
#
# A library, not a complete policy (see README.md, "Composition"); the
# complete policies in deploy/policies are loaded with this directory.
package countersign.lib.grants

import data.countersign.grants

default allow := false

# allow: a group of the principal grants the access class on the object
# (for a list, on the list prefix) and, for a copy, read on the source.
allow if {
	granted(input.access, input.resource)
	copy_source_granted
}

copy_source_granted if input.copy_source == null

copy_source_granted if granted("read", input.copy_source)

granted(access, res) if {
	some group in input.principal.groups
	some prefix in grants[group][res.bucket][access]
	startswith(path(res), prefix)
}

# HeadBucket and GetBucketLocation (access list, no key, no prefix) need
# some list grant in the bucket: they reveal that it exists, not what is in it.
granted("list", res) if {
	res.key == ""
	res.prefix == null
	some group in input.principal.groups
	count(grants[group][res.bucket].list) > 0
}

path(res) := res.prefix if is_string(res.prefix)

path(res) := res.key if not is_string(res.prefix)

reason := "no principal: the request is not authenticated" if input.principal == null

reason := msg if {
	input.principal != null
	not granted(input.access, input.resource)
	msg := sprintf("no group of %v grants %v on %v%v", [
		object.get(input.principal, "id", ""),
		object.get(input, "access", null),
		object.get(input.resource, "arn", "the object"),
		version_hint,
	])
}

default version_hint := ""

version_hint := sprintf(" (version %v: removing a version for good needs a delete_version grant, delete does not cover it)", [input.resource.version_id]) if {
	input.access == "delete_version"
}

reason := msg if {
	input.principal != null
	granted(input.access, input.resource)
	not copy_source_granted
	msg := sprintf("no group of %v grants read on the copy source %v", [
		object.get(input.principal, "id", ""),
		object.get(input.copy_source, "arn", "(unknown)"),
	])
}
