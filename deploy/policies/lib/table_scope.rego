# Table scope, from the operator's table locations in data.countersign.tables:
#
#   {"<prefix>/<namespace levels joined by .>/<name>": {
#       "location": "s3://bucket/path/to/table/",
#       "grants":   {"<group>": ["read", "list"], ...}}}
#
# and, for tables the data gives no location, the operator's roots in
# data.countersign.table_roots, keyed by warehouse (the route's prefix) or
# by warehouse and namespace:
#
#   {"<prefix>": "s3://bucket/warehouse/",
#    "<prefix>/<namespace levels joined by .>": "s3://bucket/warehouse/ns/"}
#
# A grant names access classes; "delete" does not include
# "delete_version" (removing an object version for good): a table whose
# groups may do that lists it.
#
# Locations only narrow. When countersign fronts the catalog, the catalog
# tells it the table's location (input.table.location, from the
# catalog's answer to this caller: catalog.upstream). Any principal that
# may commit to a table can change that location (Iceberg's set-location
# update, or createTable/registerTable with a location), so it is never a
# grant of its own:
#
#   - the table has a location in data.countersign.tables: the catalog's
#     must be that location or lie under it (it narrows the operator's,
#     never replaces or widens it);
#   - it has none: the most specific root in data.countersign.table_roots
#     (namespace levels from the deepest, then the warehouse) applies, and
#     the catalog's location must lie strictly under it (so never a bucket
#     root), must not contain or lie inside another table's location in
#     data.countersign.tables, and must not contain any root;
#   - neither: the table is refused (deny), whatever the catalog says.
#
# A refused location denies every request on the table's route, and
# every credential mint for it. Without a catalog location the entry's
# "location" applies, as before.
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
# The catalog front applies the same rule before it forwards a location
# change, and to every location it learns (policy.Engine.CheckTableLocation
# is its Go form; a test holds the two to the same answers).
#
# A library, not a complete policy (see README.md, "Composition"); the
# complete policies in deploy/policies are loaded with this directory.
package countersign.lib.table_scope

import data.countersign.lib.location
import data.countersign.table_roots
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

# operator_location is the table's location in the data.
operator_location := l if {
	l := table.location
	is_string(l)
	l != ""
}

# root_keys are the keys of data.countersign.table_roots that may apply,
# most specific first: the namespace and each of its ancestors, then the
# warehouse.
root_keys := array.concat(
	[k |
		some i in numbers.range(count(input.table.namespace), 1)
		i > 0
		k := concat("/", [input.table.prefix, concat(".", array.slice(input.table.namespace, 0, i))])
	],
	[input.table.prefix],
)

# root is the operator's root for a table the data gives no location.
root := [r | some k in root_keys; r := table_roots[k]][0] if not operator_location

# The three locations parsed, each once.
catalog_parsed := location.parse(catalog_location)

operator_parsed := location.parse(operator_location)

root_parsed := location.parse(root)

# Partial evaluation (the scope compiler, the signing fast path) walks the
# rules every reference depends on, each time it meets the reference,
# looking for the unknown per-request input; none of the rules below
# depends on it. So that this walk stays short, table_location depends on
# catalog_accepted, which says in two rules, each naming the parsed
# locations once, what `refused` says with its reasons: the catalog's
# location is accepted exactly when refused is empty (a test holds the
# two to the same answers).
catalog_accepted if {
	cat := catalog_parsed
	clean_path(cat)
	location.within(cat, operator_parsed)
}

catalog_accepted if {
	not operator_location
	cat := catalog_parsed
	clean_path(cat)
	own := root_parsed
	location.strictly_within(cat, own)
	count(overlapping) == 0
	count(contained_roots) == 0
	count(other_roots) == 0
}

# overlapping are the other tables whose location in the data contains
# or lies inside the catalog's location, by key.
overlapping[other] := t.location if {
	cat := catalog_parsed
	root
	some other, t in tables
	other != id
	is_string(t.location)
	o := location.parse(t.location)
	location.overlaps(cat, o)
}

# contained_roots are the roots the catalog's location contains, by key.
contained_roots[k] := r if {
	cat := catalog_parsed
	root
	some k, r in table_roots
	o := location.parse(r)
	location.within(o, cat)
}

# other_roots are the roots under the table's own root that the catalog's
# location lies in, by key.
other_roots[k] := r if {
	cat := catalog_parsed
	own := root_parsed
	some k, r in table_roots
	o := location.parse(r)
	location.strictly_within(o, own)
	location.within(cat, o)
}

# clean_path(loc): no path segment of loc is empty, "." or "..".
clean_path(loc) if loc.prefix == ""

clean_path(loc) if {
	loc.prefix != ""
	every seg in split(trim_suffix(loc.prefix, "/"), "/") {
		not seg in {"", ".", ".."}
	}
}

# refused are the reasons the catalog's location is not this table's.
refused contains msg if {
	catalog_location
	not catalog_parsed
	msg := sprintf("the catalog's location %v for table %v is not an s3:// location", [catalog_location, id])
}

refused contains msg if {
	cat := catalog_parsed
	not clean_path(cat)
	msg := sprintf("the catalog's location %v for table %v has an empty, \".\" or \"..\" path segment", [catalog_location, id])
}

refused contains msg if {
	catalog_location
	operator_location
	not operator_parsed
	msg := sprintf("table %v's location %v in data.countersign.tables is not an s3:// location", [id, operator_location])
}

refused contains msg if {
	cat := catalog_parsed
	op := operator_parsed
	not location.within(cat, op)
	msg := sprintf("the catalog's location %v for table %v is outside the operator's %v (data.countersign.tables): a catalog location may only narrow it", [catalog_location, id, operator_location])
}

refused contains msg if {
	catalog_location
	not operator_location
	not root
	msg := sprintf("table %v has no location in data.countersign.tables and no root in data.countersign.table_roots (keys %v): a location from the catalog alone is never trusted", [id, concat(", ", [sprintf("%q", [k]) | some k in root_keys])])
}

refused contains msg if {
	cat := catalog_parsed
	r := root_parsed
	not location.strictly_within(cat, r)
	msg := sprintf("the catalog's location %v for table %v is not strictly under the operator's root %v (data.countersign.table_roots)", [catalog_location, id, root])
}

refused contains msg if {
	catalog_location
	root
	not root_parsed
	msg := sprintf("the root %v that data.countersign.table_roots gives table %v is not an s3:// location", [root, id])
}

refused contains msg if {
	some other, l in overlapping
	msg := sprintf("the catalog's location %v for table %v overlaps table %v's location %v", [catalog_location, id, other, l])
}

refused contains msg if {
	some k, r in contained_roots
	msg := sprintf("the catalog's location %v for table %v contains the root %v of %q (data.countersign.table_roots)", [catalog_location, id, r, k])
}

refused contains msg if {
	some k, r in other_roots
	msg := sprintf("the catalog's location %v for table %v lies inside the root %v of %q, not the table's own (data.countersign.table_roots)", [catalog_location, id, r, k])
}

table_location := catalog_location if catalog_accepted

table_location := operator_location if not catalog_location

loc := location.parse(table_location)

# The rules that depend on the request come first, and name it before
# anything else: partial evaluation's walk of `deny` then stops at once.
deny contains msg if {
	res := input.resource
	loc
	not location.covers(loc, res)
	msg := sprintf("%v is outside table %v (%v)", [describe(res), id, table_location])
}

deny contains msg if {
	loc
	input.copy_source != null
	not location.covers(loc, input.copy_source)
	msg := sprintf("copy source %v is outside table %v (%v)", [describe(input.copy_source), id, table_location])
}

deny contains msg if {
	input.table != null
	not catalog_location
	not table
	msg := sprintf("table %v is not in data.countersign.tables", [object.get(input.table, "name", "")])
}

deny contains msg if {
	input.table != null
	not catalog_location
	table
	not operator_location
	msg := sprintf("table %v has no location in data.countersign.tables", [id])
}

deny contains msg if {
	table_location
	not loc
	msg := sprintf("table %v has no valid s3:// location", [id])
}

deny contains msg if some msg in refused

describe(res) := sprintf("%v (prefix %q)", [object.get(res, "arn", "the bucket"), res.prefix]) if is_string(res.prefix)

describe(res) := object.get(res, "arn", "the object") if not is_string(res.prefix)

default allow := false

# (The request first, as in deny.)
allow if {
	res := input.resource
	loc
	count(deny) == 0
	location.covers(loc, res)
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
