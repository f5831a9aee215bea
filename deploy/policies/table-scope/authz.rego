# Complete policy, loaded with ../lib: per-table grants and locations from
# the catalog (lib/table_scope.rego, lib/location.rego, data in data.json)
# under the guardrails (lib/guardrails.rego). Only the per-table sign route
# is allowed. See README.md.
package countersign.authz

import data.countersign.lib.guardrails
import data.countersign.lib.table_scope

default allow := false

# Composition: any reason in deny refuses; otherwise some permit allows.
allow if {
	count(deny) == 0
	count(permit) > 0
}

deny contains msg if some msg in guardrails.deny

deny contains msg if some msg in table_scope.deny

permit contains "table" if table_scope.allow

reason := concat("; ", sort(deny)) if count(deny) > 0

reason := table_scope.reason if {
	count(deny) == 0
	count(permit) == 0
}
