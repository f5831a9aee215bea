# Policy for the adversarial suite (adversarial_test.go): members of group
# "engineers" may read, write, delete and list bucket "lake" except keys
# under "denied/"; everything else is denied. It composes the shipped
# guardrails (deploy/policies/lib, loaded beside this file), so the
# suite also proves that the guardrails refuse dangerous headers and admin
# operations through the real endpoint. The source of a copy is decided
# as its own object (a read), so the rules above cover it: this policy
# deliberately does not look at input.copy_source, so that the suite shows
# the classifier's copy-source decision alone refusing the copy.
package countersign.authz

import data.countersign.lib.guardrails

default allow := false

allow if {
	count(guardrails.deny) == 0
	"engineers" in input.principal.groups
	input.access in {"read", "write", "delete", "list"}
	input.resource.bucket == "lake"
	not startswith(input.resource.key, "denied/")
}

reason := concat("; ", sort(guardrails.deny)) if count(guardrails.deny) > 0
