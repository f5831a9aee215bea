# Credential vending: data that never leaves as credentials.
#
# A mint (input.operation "MintCredentials", input.mint set; see the
# README's policy input) asks for temporary S3 credentials for everything
# under input.resource.prefix of input.resource.bucket. Data marked
# sign-only is reached only through countersign's signatures, decided and
# recorded one object at a time; it is never vended:
#
#   data.countersign.sign_only:                 ["s3://bucket/path/", ...]
#   data.countersign.tables["<id>"].sign_only:  true (that table's location)
#
# A mint is refused when its prefix and a sign-only location overlap: the
# prefix lies under the location, or the location under the prefix
# (credentials for wh/ would reach a sign-only wh/pii/). The prefix
# checked is the one minted (input.resource), whatever table it is for.
# A mint for a table (input.table set) whose entry is sign-only is refused
# by the table's identity, whatever its location: with a catalog front a
# table needs no location in the data, and the catalog's location is the
# caller's to change. A sign-only entry that is not a valid location
# refuses every mint (fail closed). While a sign-only table has no
# location in the data, mints for a location and for tables located only
# by the catalog are refused: either could be the sign-only table's.
#
# Sign requests (input.mint null) are never denied here: a sign-only
# table is signed for as before.
#
# A library, not a complete policy: lib/guardrails.rego includes its deny,
# so every complete policy in deploy/policies refuses such mints.
package countersign.lib.vending

import data.countersign.lib.location
import data.countersign.sign_only
import data.countersign.tables

deny contains msg if {
	input.mint != null
	some where in sign_only_locations
	loc := location.parse(where)
	overlaps(loc, input.resource)
	msg := sprintf("%v is sign-only: it is never vended as credentials, only signed for object by object", [where])
}

deny contains msg if {
	input.mint != null
	some where in sign_only_locations
	not location.parse(where)
	msg := sprintf("sign-only location %v is not an s3:// location; no credentials are vended until it is fixed", [where])
}

deny contains msg if {
	input.mint != null
	input.table != null
	id := concat("/", [object.get(input.table, "prefix", ""), concat(".", object.get(input.table, "namespace", [])), object.get(input.table, "name", "")])
	tables[id].sign_only == true
	msg := sprintf("table %v is sign-only: it is never vended as credentials, only signed for object by object", [id])
}

deny contains msg if {
	input.mint != null
	some id, t in tables
	t.sign_only == true
	not has_location(t)
	input.table == null
	msg := sprintf("table %v is sign-only and has no location in data.countersign.tables: no credentials are vended for a location rather than a table until it has one", [id])
}

# A table located only by the catalog (no location of its own in the
# data) could be given the location of a sign-only table that has none
# there either: nothing in the data tells the two apart. Its mints are
# refused until every sign-only table has a location in the data.
deny contains msg if {
	input.mint != null
	input.table != null
	not has_location(object.get(tables, table_id, {}))
	some id, t in tables
	t.sign_only == true
	not has_location(t)
	id != table_id
	msg := sprintf("table %v is sign-only and has no location in data.countersign.tables: no credentials are vended for a table located only by the catalog until it has one", [id])
}

table_id := concat("/", [object.get(input.table, "prefix", ""), concat(".", object.get(input.table, "namespace", [])), object.get(input.table, "name", "")])

sign_only_locations contains where if some where in sign_only

sign_only_locations contains t.location if {
	some t in tables
	t.sign_only == true
	has_location(t)
}

overlaps(loc, res) if {
	res.bucket == loc.bucket
	startswith(object.get(res, "prefix", ""), loc.prefix)
}

overlaps(loc, res) if {
	res.bucket == loc.bucket
	startswith(loc.prefix, object.get(res, "prefix", ""))
}

has_location(t) if {
	is_string(t.location)
	t.location != ""
}
