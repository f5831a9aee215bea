# Complete policy, loaded with ../lib: catalog-issued table-scoped tokens
# (lib/catalog_token.rego, lib/location.rego, trusted issuers in data.json)
# under the guardrails (lib/guardrails.rego). See README.md.
package countersign.authz

import data.countersign.lib.catalog_token
import data.countersign.lib.guardrails

default allow := false

# Composition: any reason in deny refuses; otherwise some permit allows.
allow if {
	count(deny) == 0
	count(permit) > 0
}

deny contains msg if some msg in guardrails.deny

deny contains msg if some msg in catalog_token.deny

permit contains "catalog-token" if catalog_token.allow

reason := concat("; ", sort(deny)) if count(deny) > 0

reason := catalog_token.reason if {
	count(deny) == 0
	count(permit) == 0
}
