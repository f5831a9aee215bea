# Guardrails on headers: requests carrying a header that changes an
# object's protection or the request's meaning are refused, whoever asks.
#
# Part of package countersign.lib.guardrails (lib/guardrails.rego), kept
# apart because it is the one guardrail a vended credential cannot keep:
# it decides by the request's headers, and an IAM session policy carries
# no condition on them. guardrails.deny includes deny_headers, so every
# policy composing guardrails.deny (grants, table-scope, catalog-token,
# combined, dev) refuses these headers on every signed request, and for
# that very reason vends nothing (README.md, "Credential vending").
# A policy written to vend (deploy/policies/vending) composes
# guardrails.deny_vendable and leaves this part out: whoever holds its
# credentials talks to the store directly and can send these headers
# on what the credentials allow (see that example's authz.rego).
#
# The rule fires even on a malformed input (see lib/guardrails.rego).
package countersign.lib.guardrails

deny_headers contains msg if {
	some name, _ in input.request.headers
	dangerous_header(lower(name))
	msg := sprintf("header %s changes access control, object protection, encryption keys, tags or the HTTP method", [lower(name)])
}

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
