# Complete policy, loaded with ../lib, written to vend credentials
# (vending.enabled; README.md, "Credential vending"): group grants on key
# prefixes (lib/grants.rego) and per-table grants confined to the table's
# location (lib/table_scope.rego, lib/location.rego), under the guardrails
# a session policy can carry (guardrails.deny_vendable: input version,
# admin and unrecognized operations refused, sign-only data never vended,
# lib/vending.rego). Every rule conditions only on the principal, the
# operation and the key, so the scope compiler vends exactly what it
# allows: `countersign policy scope -vend` shows it.
#
# What it leaves out, on purpose: the header guardrail
# (lib/guardrails_headers.rego, guardrails.deny_headers). An IAM session
# policy carries no condition on headers, so a policy that kept it would
# vend nothing. The holder of a credential this policy vends talks to the
# store directly and can send, on what the credential allows, the headers
# a signed request under the other examples is refused for: x-amz-acl and
# x-amz-grant-* (object ACLs), x-amz-object-lock-* (retention and legal
# hold), x-amz-bypass-governance-retention, x-amz-tagging and
# x-amz-tagging-directive (tags that feed tag-based access, lifecycle
# expiry and replication), x-amz-server-side-encryption-aws-kms-key-id and
# -context (a KMS key the owner does not control),
# x-amz-server-side-encryption-customer-* and the copy-source ones
# (customer keys S3 never stores), x-amz-website-redirect-location and the
# HTTP method overrides. Which of them the store still refuses is its
# IAM's: AWS asks for s3:PutObjectAcl, s3:PutObjectRetention,
# s3:PutObjectLegalHold or s3:BypassGovernanceRetention with the ACL,
# lock and bypass headers, actions of admin operations this policy never
# allows, so never vended; but tags come with s3:PutObjectTagging, which
# a write grant vends, and the encryption-key and redirect headers need
# nothing beyond s3:PutObject. Other stores may ask for less.
# The same rules decide signed requests (a scope is compiled from the
# S3 requests the policy allows, not from the mint), so signed requests
# under this policy are not screened for those headers either.
#
# Use it for data whose writers you trust with that: every grant in
# data.json is also a credential. Data that must keep the header
# guardrail is either marked sign-only (data.countersign.sign_only, or
# "sign_only": true on a table: never vended, still signed for, but
# signed requests under this policy are not screened for headers
# either), or served by a policy that composes guardrails.deny (every
# other example), which vends nothing.
#
# Reads lose nothing: on GetObject, HeadObject and listings none of these
# headers changes stored data (ACL, grant, tag, lock and KMS headers do
# nothing on a read; customer-key headers only decrypt an object already
# so encrypted). Only writes and deletes give them an effect. Keeping
# deny_headers on writes and deletes alone would still vend reads, but
# would refuse every read-write mint (s3:PutObject would not be exact);
# an operator who vends only reads and wants the writers' headers screened
# can add
#
#   deny contains msg if {
#   	not input.access in {"read", "list"}
#   	some msg in guardrails.deny_headers
#   }
#
# See README.md in this directory's parent.
package countersign.authz

import data.countersign.lib.grants
import data.countersign.lib.guardrails
import data.countersign.lib.table_scope

default allow := false

# Composition: any reason in deny refuses; otherwise some permit allows.
allow if {
	count(deny) == 0
	count(permit) > 0
}

deny contains msg if some msg in guardrails.deny_vendable

deny contains msg if some msg in table_scope.deny

permit contains "grants" if grants.allow

permit contains "table" if table_scope.allow

reason := concat("; ", sort(deny)) if count(deny) > 0

reason := msg if {
	count(deny) == 0
	count(permit) == 0
	msg := sprintf("no group grant or table grant allows %v on %v", [
		object.get(input, "access", null),
		object.get(object.get(input, "resource", {}), "arn", "the object"),
	])
}
