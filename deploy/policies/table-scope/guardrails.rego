# Guardrails: requests that no grant should ever allow, whoever asks.
#
# A library, not a complete policy: every complete policy in
# deploy/policies carries an identical copy of this file and refuses when
# `deny` is not empty (see README.md, "Composition").
#
# Every deny rule here must fire even on a malformed input, so: messages
# are built only from values the conditions established, or with
# object.get defaults (a message that failed to build would drop the
# denial); and no `not f(input.x)` whose input.x may be undefined (OPA
# hoists input.x out of the negation, so the rule would be undefined
# rather than true — open-policy-agent/opa#1877).
package countersign.lib.guardrails

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
	msg := sprintf("access class %v is not one of read, write, delete, list, admin", [object.get(input, "access", null)])
}

deny contains msg if {
	some name, _ in input.request.headers
	dangerous_header(lower(name))
	msg := sprintf("header %s changes access control, object protection or the HTTP method", [lower(name)])
}

access_classes := {"read", "write", "delete", "list", "admin"}

# DESIGN §3: headers that change an object's access control, retention or
# the request's meaning. x-amz-copy-source is not here: it is authorized as
# a read of the source.
dangerous_names := {
	"x-amz-acl",
	"x-amz-website-redirect-location",
	"x-amz-bypass-governance-retention",
	"x-http-method-override",
	"x-http-method",
	"x-method-override",
}

dangerous_prefixes := {"x-amz-grant-", "x-amz-object-lock-"}

dangerous_header(name) if name in dangerous_names

dangerous_header(name) if {
	some p in dangerous_prefixes
	startswith(name, p)
}
