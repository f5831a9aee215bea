# Development policy embedded in `countersign serve -dev`. NOT for
# production: every caller — authenticated or not (principal null) — may
# read, write, delete and list objects in the development buckets listed
# in data.countersign.dev.buckets, but not remove object versions for
# good. The guardrails (lib/guardrails.rego, embedded with this directory)
# still deny admin operations (ACLs, bucket configuration, unknown
# requests) and headers that change an object's protection.
package countersign.authz

import data.countersign.lib.guardrails

default allow := false

# Composition (see deploy/policies/README.md): any reason in deny refuses;
# otherwise some permit allows.
allow if {
	count(deny) == 0
	count(permit) > 0
}

deny contains msg if some msg in guardrails.deny

# Removing an object version for good is not development work: versions
# are how a mistaken delete or overwrite is undone.
deny contains msg if {
	input.access == "delete_version"
	msg := sprintf("the development policy does not remove object versions for good (%s of version %v)", [object.get(input, "operation", "delete"), object.get(input.resource, "version_id", "")])
}

deny contains msg if {
	input.copy_source != null
	not object.get(input.copy_source, "bucket", "") in data.countersign.dev.buckets
	msg := sprintf("copy source bucket %q is not a development bucket", [object.get(input.copy_source, "bucket", "")])
}

permit contains "dev-bucket" if input.resource.bucket in data.countersign.dev.buckets

reason := concat("; ", sort(deny)) if count(deny) > 0

reason := sprintf("bucket %q is not a development bucket", [object.get(input.resource, "bucket", "")]) if {
	count(deny) == 0
	count(permit) == 0
}
