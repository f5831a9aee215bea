# Complete policy, loaded with ../lib: group grants on key prefixes
# (lib/grants.rego, data in data.json) under the guardrails
# (lib/guardrails.rego). See README.md.
package countersign.authz

import data.countersign.lib.grants
import data.countersign.lib.guardrails

default allow := false

# Composition: any reason in deny refuses; otherwise some permit allows.
allow if {
	count(deny) == 0
	count(permit) > 0
}

deny contains msg if some msg in guardrails.deny

permit contains "grants" if grants.allow

reason := concat("; ", sort(deny)) if count(deny) > 0

reason := grants.reason if {
	count(deny) == 0
	count(permit) == 0
}
