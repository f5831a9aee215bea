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

# deny is the set of reasons this request must be refused.
deny contains msg if {
	input.version != 1
	msg := sprintf("input version %v is not 1, the version this policy was written for", [input.version])
}

deny contains "input carries no version" if not input.version

deny contains msg if {
	input.access == "admin"
	msg := sprintf("%s is an admin operation (ACLs, retention, bucket configuration, unrecognized requests)", [object.get(input, "operation", "the operation")])
}

deny contains "the request is not a recognized S3 operation (Unknown)" if input.operation == "Unknown"

deny contains "input carries no access class" if not input.access

deny contains msg if {
	not object.get(input, "access", null) in access_classes
	msg := sprintf("access class %v is not one of read, write, delete, delete_version, list, admin", [object.get(input, "access", null)])
}

deny contains msg if {
	some name, _ in input.request.headers
	dangerous_header(lower(name))
	msg := sprintf("header %s changes access control, object protection, encryption keys, tags or the HTTP method", [lower(name)])
}

# Sign-only data is never vended as credentials (lib/vending.rego); sign
# requests are not affected.
deny contains msg if some msg in vending.deny

# delete_version is the permanent removal of an object version
# (s3:DeleteObjectVersion): a class of its own, so that a "delete" grant
# (snapshot expiry) does not take away versioning as a way to recover.
access_classes := {"read", "write", "delete", "delete_version", "list", "admin"}

# Headers that change an object's access control, retention, encryption
# key or tags, or the request's meaning. x-amz-copy-source is not here: it
# is authorized as a read of the source.
#
# - Tags (x-amz-tagging, and x-amz-tagging-directive on a copy, which
#   replaces or clears them) feed tag-based access control, lifecycle
#   expiry and replication rules: IAM asks for s3:PutObjectTagging for them.
# - A KMS key id or encryption context chosen by the caller can encrypt
#   the lake under a key the owner does not control (and that its holder
#   can later revoke); customer-provided keys (SSE-C, also on a copy
#   source) leave the data readable only with a key S3 never stores. Use
#   the bucket's default encryption instead. x-amz-server-side-encryption
#   alone (AES256, or aws:kms with the bucket's or the account's key) and
#   x-amz-server-side-encryption-bucket-key-enabled stay allowed.
dangerous_names := {
	"x-amz-acl",
	"x-amz-website-redirect-location",
	"x-amz-bypass-governance-retention",
	"x-http-method-override",
	"x-http-method",
	"x-method-override",
	"x-amz-tagging",
	"x-amz-tagging-directive",
	"x-amz-server-side-encryption-aws-kms-key-id",
	"x-amz-server-side-encryption-context",
}

dangerous_prefixes := {
	"x-amz-grant-",
	"x-amz-object-lock-",
	"x-amz-server-side-encryption-customer-",
	"x-amz-copy-source-server-side-encryption-customer-",
}

dangerous_header(name) if name in dangerous_names

dangerous_header(name) if {
	some p in dangerous_prefixes
	startswith(name, p)
}
