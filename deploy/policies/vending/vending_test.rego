package countersign.authz_test

import data.countersign.authz

ann := {"id": "ann", "issuer": "https://idp.example/", "groups": ["analysts"], "claims": {}}

eve := {"id": "eve", "issuer": "https://idp.example/", "groups": ["etl"], "claims": {}}

table_t := {"prefix": "prod", "namespace": ["db"], "name": "t"}

table_cards := {"prefix": "prod", "namespace": ["db"], "name": "cards"}

obj(key) := {"bucket": "lake", "key": key, "prefix": null, "arn": concat("", ["arn:aws:s3:::lake/", key])}

req(principal, table, op, access, res) := {
	"version": 1,
	"principal": principal,
	"operation": op, "action": "s3:GetObject", "access": access,
	"resource": res,
	"copy_source": null,
	"table": table,
	"request": {"method": "GET", "region": "us-east-1", "host": "lake.s3.us-east-1.amazonaws.com", "headers": {}},
	"source": {"ip": "10.0.0.7"},
	"mint": null,
}

get(p, table, key) := req(p, table, "GetObject", "read", obj(key))

put(p, table, key) := req(p, table, "PutObject", "write", obj(key))

with_header(r, name) := object.union(r, {"request": {"headers": {name: "v"}}})

mint(p, table, prefix, access) := object.union(req(p, table, "MintCredentials", access, {"bucket": "lake", "key": "", "prefix": prefix, "arn": concat("", ["arn:aws:s3:::lake/", prefix, "*"]), "version_id": ""}), {
	"action": "sts:AssumeRole",
	"mint": {"prefix": prefix, "access": access, "duration_seconds": 900},
})

test_group_grants if {
	authz.allow with input as get(ann, null, "wh/db/t/data/f.parquet")
	authz.allow with input as get(ann, null, "wh/sales/q1.parquet")
	authz.allow with input as put(eve, null, "wh/db/t2/data/new.parquet")
	not authz.allow with input as put(ann, null, "wh/db/t/data/new.parquet")
	not authz.allow with input as get(ann, null, "wh/db/t2/data/f.parquet")
}

test_table_grants_and_scope if {
	authz.allow with input as get(ann, {"prefix": "prod", "namespace": ["db"], "name": "t2"}, "wh/db/t2/data/f.parquet")
	r := put(eve, table_t, "wh/db/t2/data/new.parquet")
	not authz.allow with input as r
	contains(authz.reason, "is outside table prod/db/t") with input as r
}

test_guardrails_it_keeps if {
	not authz.allow with input as object.union(put(eve, null, "wh/db/t/f"), {"operation": "PutObjectAcl", "access": "admin"})
	not authz.allow with input as object.union(get(eve, null, "wh/db/t/f"), {"operation": "Unknown", "access": "admin"})
	not authz.allow with input as object.union(get(eve, null, "wh/db/t/f"), {"version": 2})
	not authz.allow with input as object.union(get(eve, null, "wh/db/t/f"), {"access": "superuser"})
}

# The header guardrail is left out on purpose (see authz.rego): the same
# request the combined example refuses for its header is allowed here.
test_headers_are_not_screened if {
	r := with_header(put(eve, null, "wh/db/t/data/new.parquet"), "x-amz-acl")
	authz.allow with input as r
	some msg in data.countersign.lib.guardrails.deny with input as r
	count(data.countersign.lib.guardrails.deny_vendable) == 0 with input as r
}

test_mints_follow_the_grants if {
	authz.allow with input as mint(eve, null, "wh/db/t/", "write")
	authz.allow with input as mint(ann, table_t, "wh/db/t/", "read")
	not authz.allow with input as mint(ann, table_t, "wh/db/t/", "write")
}

test_sign_only_data_is_signed_never_vended if {
	authz.allow with input as put(eve, table_cards, "wh/cards/data/c.parquet")
	r := mint(eve, table_cards, "wh/cards/", "read")
	not authz.allow with input as r
	contains(authz.reason, "sign-only") with input as r
	authz.allow with input as get(eve, null, "wh/db/pii/p.parquet")
	not authz.allow with input as mint(eve, null, "wh/db/pii/", "read")
	not authz.allow with input as mint(eve, null, "wh/db/", "read")
}

test_null_principal_denied if {
	not authz.allow with input as get(null, null, "wh/db/t/data/f.parquet")
	not authz.allow with input as mint(null, null, "wh/db/t/", "read")
}
