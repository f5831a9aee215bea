# Complete policy combining every library of deploy/policies/lib, loaded
# with it:
#
#   restrictions (deny, any one refuses):
#     guardrails     admin/Unknown operations, dangerous headers, input version
#     table_scope    per-table route: objects must lie under the table's location
#     catalog_token  catalog token: objects must lie under its location, with its access
#   permissions (permit, any one allows when nothing denies):
#     grants         group grants on key prefixes
#     table_scope    per-table grants
#     catalog_token  the catalog token itself
#
# See README.md.
package countersign.authz

import data.countersign.lib.catalog_token
import data.countersign.lib.grants
import data.countersign.lib.guardrails
import data.countersign.lib.table_scope

default allow := false

allow if {
	count(deny) == 0
	count(permit) > 0
}

deny contains msg if some msg in guardrails.deny

deny contains msg if some msg in table_scope.deny

deny contains msg if some msg in catalog_token.deny

permit contains "grants" if grants.allow

permit contains "table" if table_scope.allow

permit contains "catalog-token" if catalog_token.allow

reason := concat("; ", sort(deny)) if count(deny) > 0

reason := msg if {
	count(deny) == 0
	count(permit) == 0
	msg := sprintf("no group grant, table grant or catalog token allows %v on %v", [
		object.get(input, "access", null),
		object.get(object.get(input, "resource", {}), "arn", "the object"),
	])
}
