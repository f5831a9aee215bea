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
