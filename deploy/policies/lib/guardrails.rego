# Guardrails: requests that no grant should ever allow, whoever asks.
#
# A library, not a complete policy: every complete policy in
# deploy/policies is loaded with this directory (lib/) and refuses when
# `deny` is not empty (see README.md, "Composition").
#
# Every deny rule here must fire even on a malformed input, so: messages
# are built only from values the conditions established, or with
# object.get defaults (a message that failed to build would drop the
# denial); and no `not f(input.x)` whose input.x may be undefined (OPA
# hoists input.x out of the negation, so the rule would be undefined
# rather than true — open-policy-agent/opa#1877).
package countersign.lib.guardrails

import data.countersign.lib.vending

# deny is the set of reasons this request must be refused: deny_vendable
# and deny_headers (lib/guardrails_headers.rego). A policy that composes
# deny keeps every guardrail; a policy written to vend credentials
# composes deny_vendable instead (deploy/policies/vending), and says why.
deny contains msg if some msg in deny_vendable

deny contains msg if some msg in deny_headers

# deny_vendable are the guardrails a vended credential can keep: they
# condition on the input's version, the access class, the operation being
# recognized and the data being sign-only, never on the request's
# headers, so the scope compiler can carry them into a session policy
# (an admin or unrecognized operation is simply not granted; sign-only
# data is not vended).
deny_vendable contains msg if {
	input.version != 1
	msg := sprintf("input version %v is not 1, the version this policy was written for", [input.version])
}

deny_vendable contains "input carries no version" if not input.version

deny_vendable contains msg if {
	input.access == "admin"
	msg := sprintf("%s is an admin operation (ACLs, retention, bucket configuration, unrecognized requests)", [object.get(input, "operation", "the operation")])
}

deny_vendable contains "the request is not a recognized S3 operation (Unknown)" if input.operation == "Unknown"

deny_vendable contains "input carries no access class" if not input.access

deny_vendable contains msg if {
	not object.get(input, "access", null) in access_classes
	msg := sprintf("access class %v is not one of read, write, delete, delete_version, list, admin", [object.get(input, "access", null)])
}

# Sign-only data is never vended as credentials (lib/vending.rego); sign
# requests are not affected.
deny_vendable contains msg if some msg in vending.deny

# delete_version is the permanent removal of an object version
# (s3:DeleteObjectVersion): a class of its own, so that a "delete" grant
# (snapshot expiry) does not take away versioning as a way to recover.
access_classes := {"read", "write", "delete", "delete_version", "list", "admin"}
