package countersign.lib.vending_test

import data.countersign.lib.guardrails
import data.countersign.lib.vending

mint := {
	"version": 1,
	"principal": {"id": "ann", "issuer": "https://idp.example/", "groups": ["analysts"], "claims": {}},
	"operation": "MintCredentials", "action": "sts:AssumeRole", "access": "read",
	"resource": {"bucket": "lake", "key": "", "prefix": "wh/db/t/", "arn": "arn:aws:s3:::lake/wh/db/t/*", "version_id": ""},
	"copy_source": null,
	"table": null,
	"request": {"method": "GET", "region": "us-east-1", "host": "", "headers": {}},
	"source": {"ip": "10.0.0.7"},
	"mint": {"prefix": "wh/db/t/", "access": "read", "duration_seconds": 900},
}

get := object.union(mint, {
	"operation": "GetObject", "action": "s3:GetObject",
	"resource": {"key": "wh/pii/t/f.parquet", "prefix": null, "arn": "arn:aws:s3:::lake/wh/pii/t/f.parquet"},
	"mint": null,
})

at(prefix) := object.union(mint, {"resource": {"prefix": prefix}, "mint": {"prefix": prefix}})

sign_only := ["s3://lake/wh/pii/"]

tables := {"prod/db/cards": {"location": "s3://lake/wh/cards/", "sign_only": true}, "prod/db/t": {"location": "s3://lake/wh/db/t/"}}

test_no_sign_only_data_denies_nothing if {
	count(vending.deny) == 0 with input as mint with data.countersign.sign_only as [] with data.countersign.tables as {}
	count(vending.deny) == 0 with input as mint with data.countersign.sign_only as sign_only with data.countersign.tables as tables
}

test_sign_only_location_is_not_vended if {
	some msg in vending.deny with input as at("wh/pii/t/") with data.countersign.sign_only as sign_only with data.countersign.tables as tables
	contains(msg, "s3://lake/wh/pii/ is sign-only")
}

test_prefix_above_sign_only_location_is_not_vended if {
	count(vending.deny) > 0 with input as at("wh/") with data.countersign.sign_only as sign_only with data.countersign.tables as tables
	count(vending.deny) > 0 with input as at("") with data.countersign.sign_only as sign_only with data.countersign.tables as tables
}

test_sign_only_table_is_not_vended if {
	some msg in vending.deny with input as at("wh/cards/data/") with data.countersign.sign_only as sign_only with data.countersign.tables as tables
	contains(msg, "s3://lake/wh/cards/ is sign-only")
}

test_other_bucket_and_sibling_prefix_are_vended if {
	count(vending.deny) == 0 with input as object.union(at("wh/pii/"), {"resource": {"bucket": "other"}}) with data.countersign.sign_only as sign_only with data.countersign.tables as tables
	count(vending.deny) == 0 with input as at("wh/piix/") with data.countersign.sign_only as sign_only with data.countersign.tables as tables
}

test_sign_only_data_is_still_signed if {
	count(vending.deny) == 0 with input as get with data.countersign.sign_only as sign_only with data.countersign.tables as tables
	count(guardrails.deny) == 0 with input as get with data.countersign.sign_only as sign_only with data.countersign.tables as tables
}

test_invalid_sign_only_location_refuses_every_mint if {
	some msg in vending.deny with input as mint with data.countersign.sign_only as ["lake/wh/"]
	contains(msg, "not an s3:// location")
}

test_guardrails_include_vending if {
	count(guardrails.deny) > 0 with input as at("wh/pii/") with data.countersign.sign_only as sign_only with data.countersign.tables as tables
}

# A sign-only table needs no location in the data when countersign fronts
# the catalog: it is refused by its identity, whatever location the mint
# names (the catalog's, which the caller can change).
no_location := {"prod/db/cards": {"sign_only": true, "grants": {"analysts": ["read"]}}, "prod/db/t": {"location": "s3://lake/wh/db/t/"}}

for_table(table, prefix) := object.union(at(prefix), {"table": table})

cards := {"prefix": "prod", "namespace": ["db"], "name": "cards", "location": "s3://lake/db/cards-1234/"}

test_sign_only_table_without_location_is_not_vended if {
	every prefix in ["db/cards-1234/", "elsewhere/", ""] {
		some msg in vending.deny with input as for_table(cards, prefix) with data.countersign.sign_only as [] with data.countersign.tables as no_location
		contains(msg, "table prod/db/cards is sign-only")
	}
	# The same by identity when the data has a location, and the mint names another.
	some msg in vending.deny with input as for_table(object.union(cards, {"location": "s3://lake/moved/"}), "moved/") with data.countersign.sign_only as [] with data.countersign.tables as tables
	contains(msg, "table prod/db/cards is sign-only")
}

test_other_table_is_vended_beside_sign_only_table if {
	t := {"prefix": "prod", "namespace": ["db"], "name": "t", "location": "s3://lake/wh/db/t/"}
	count(vending.deny) == 0 with input as for_table(t, "wh/db/t/") with data.countersign.sign_only as [] with data.countersign.tables as no_location
	# Namespace levels are part of the identity.
	deeper := {"prefix": "prod", "namespace": ["db", "x"], "name": "cards", "location": "s3://lake/x/"}
	with_deeper := object.union(no_location, {"prod/db.x/cards": {"location": "s3://lake/x/"}})
	count(vending.deny) == 0 with input as for_table(deeper, "x/") with data.countersign.sign_only as [] with data.countersign.tables as with_deeper
}

# A table located only by the catalog could be given the sign-only
# table's location (which the data does not hold): not vended until the
# sign-only table has a location in the data.
test_catalog_located_table_refused_while_a_sign_only_table_has_no_location if {
	other := {"prefix": "prod", "namespace": ["db"], "name": "other", "location": "s3://lake/db/cards-1234/"}
	some msg in vending.deny with input as for_table(other, "db/cards-1234/") with data.countersign.sign_only as [] with data.countersign.tables as no_location
	contains(msg, "table prod/db/cards is sign-only and has no location")
	located := object.union(no_location, {"prod/db/cards": {"sign_only": true, "location": "s3://lake/db/cards-1234/"}})
	count(vending.deny) == 0 with input as for_table(other, "elsewhere/") with data.countersign.sign_only as [] with data.countersign.tables as located
}

test_location_mint_refused_while_a_sign_only_table_has_no_location if {
	some msg in vending.deny with input as at("db/") with data.countersign.sign_only as [] with data.countersign.tables as no_location
	contains(msg, "table prod/db/cards is sign-only and has no location")
	count(vending.deny) == 0 with input as at("db/") with data.countersign.sign_only as [] with data.countersign.tables as {"prod/db/t": {"location": "s3://lake/wh/db/t/"}}
}
