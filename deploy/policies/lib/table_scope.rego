# Table scope, from the catalog's table locations in data.countersign.tables:
#
#   {"<prefix>/<namespace levels joined by .>/<name>": {
#       "location": "s3://bucket/path/to/table/",
#       "grants":   {"<group>": ["read", "list"], ...}}}
#
# A grant names access classes; "delete" does not include
# "delete_version" (removing an object version for good): a table whose
# groups may do that lists it.
#
# The table's location is the catalog's own when countersign fronts the
# catalog (input.table.location, from the catalog's answer to this
# caller: catalog.upstream), and otherwise the entry's "location". With
# the catalog's location a table needs no entry here to be confined to
# it; its grants still come from its entry (or from another library).
#
# On the per-table sign route (input.table set) every object, list prefix
# and copy source must lie under the table's location: a key in a sibling
# table, or outside any table, is denied (`deny`) even if another rule of
# the policy would allow it. The table's grants say which groups may do
# what to it (`allow`).
#
# On the legacy route (input.table null) this library neither denies nor
# allows: it defers to the policy's other rules. A policy made of this
# library alone therefore refuses the legacy route.
#
# A library, not a complete policy (see README.md, "Composition"); the
# complete policies in deploy/policies are loaded with this directory.
package countersign.lib.table_scope

import data.countersign.lib.location
import data.countersign.tables

# id is the table's key in data.countersign.tables. (A namespace level
# containing "." is indistinguishable from two levels; both name the same
# entry, so they get the same location and grants.)
id := concat("/", [input.table.prefix, concat(".", input.table.namespace), input.table.name])

table := tables[id]

# catalog_location is the location the catalog gave this caller.
catalog_location := input.table.location if {
	is_string(input.table.location)
	input.table.location != ""
}

table_location := catalog_location

table_location := table.location if not catalog_location

loc := location.parse(table_location)

deny contains msg if {
	input.table != null
	not catalog_location
	not table
	msg := sprintf("table %v is not in data.countersign.tables", [object.get(input.table, "name", "")])
}

deny contains msg if {
	table_location
	not loc
	msg := sprintf("table %v has no valid s3:// location", [id])
}

deny contains msg if {
	loc
	not location.covers(loc, input.resource)
	msg := sprintf("%v is outside table %v (%v)", [describe(input.resource), id, table_location])
}

deny contains msg if {
	loc
	input.copy_source != null
	not location.covers(loc, input.copy_source)
	msg := sprintf("copy source %v is outside table %v (%v)", [describe(input.copy_source), id, table_location])
}

describe(res) := sprintf("%v (prefix %q)", [object.get(res, "arn", "the bucket"), res.prefix]) if is_string(res.prefix)

describe(res) := object.get(res, "arn", "the object") if not is_string(res.prefix)

default allow := false

allow if {
	loc
	count(deny) == 0
	location.covers(loc, input.resource)
	copy_source_covered
	some group in input.principal.groups
	input.access in table.grants[group]
}

copy_source_covered if input.copy_source == null

copy_source_covered if location.covers(loc, input.copy_source)

reason := "legacy sign route: no table named; this policy allows only the per-table route" if input.table == null

reason := "no principal: the request is not authenticated" if {
	input.table != null
	count(deny) == 0
	input.principal == null
}

reason := msg if {
	input.table != null
	count(deny) == 0
	input.principal != null
	not allow
	msg := sprintf("no group of %v is granted %v on table %v", [
		object.get(input.principal, "id", ""),
		object.get(input, "access", null),
		id,
	])
}
