# A catalog-issued, table-scoped token (for example the token an Iceberg
# 1.11 catalog hands an engine with remote-signing-config). Its claims say
# where the engine may go and what it may do there:
#
#   "location": "s3://bucket/path/to/table/"   (or a list of locations)
#   "access":   ["read"] | ["read", "list"] | ["read", "write", "delete", "list"]
#               (optional; absent means ["read"])
#               "delete" does not include "delete_version" (removing an
#               object version for good): a token allows that only if
#               it lists it.
#
# The claims are trusted only from the catalog's own issuers
# (data.countersign.catalog_token.issuers): an identity provider's token
# with a "location" claim grants nothing.
#
# When such a token is present, every object, list prefix and copy source
# must lie under one of its locations, with an access class it lists
# (`deny`), and then the token allows (`allow`). Without one, this library
# neither denies nor allows.
#
# A library, not a complete policy (see README.md, "Composition"); the
# complete policies in deploy/policies are loaded with this directory.
package countersign.lib.catalog_token

import data.countersign.catalog_token as config
import data.countersign.lib.location

claims := object.get(input.principal, "claims", {})

# present: the principal was authenticated by a token from the catalog.
present if input.principal.issuer in config.issuers

locations contains location.parse(claims.location) if {
	present
	is_string(claims.location)
}

locations contains location.parse(l) if {
	present
	is_array(claims.location)
	some l in claims.location
}

# access is the set of access classes the token grants. A malformed
# "access" claim grants nothing.
access := {a | some a in claims.access} if is_array(claims.access)

access := {"read"} if not claims.access

access := set() if {
	claims.access
	not is_array(claims.access)
}

deny contains "catalog token carries no valid s3:// location claim" if {
	present
	count(locations) == 0
}

deny contains msg if {
	present
	not input.access in access
	msg := sprintf("catalog token grants %v, not %v", [sort(access), object.get(input, "access", null)])
}

deny contains msg if {
	present
	count(locations) > 0
	some res in resources
	not covered(res)
	msg := sprintf("%v is outside the catalog token's location", [object.get(res, "arn", "the object")])
}

resources contains input.resource

resources contains input.copy_source if input.copy_source != null

covered(res) if {
	some loc in locations
	location.covers(loc, res)
}

default allow := false

allow if {
	present
	count(deny) == 0
	input.access in access
	covered(input.resource)
}

reason := "no catalog token: the principal was not issued by the catalog" if not present
