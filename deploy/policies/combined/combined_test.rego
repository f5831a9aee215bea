package countersign.authz_test

import data.countersign.authz

ann := {"id": "ann", "issuer": "https://idp.example/", "groups": ["analysts"], "claims": {}}

eve := {"id": "eve", "issuer": "https://idp.example/", "groups": ["etl"], "claims": {}}

table_t := {"prefix": "prod", "namespace": ["db"], "name": "t"}

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
}

get(p, table, key) := req(p, table, "GetObject", "read", obj(key))

put(p, table, key) := req(p, table, "PutObject", "write", obj(key))

test_group_grants_on_legacy_route if {
	authz.allow with input as get(ann, null, "wh/db/t/data/f.parquet")
	authz.allow with input as get(ann, null, "wh/sales/q1.parquet")
	not authz.allow with input as get(ann, null, "wh/db/t2/data/f.parquet")
}

test_table_route_confines_group_grants if {
	# eve's group grant covers all of wh/db/, but on t's route only t's
	# files are allowed.
	authz.allow with input as put(eve, table_t, "wh/db/t/data/new.parquet")
	authz.allow with input as put(eve, null, "wh/db/t2/data/new.parquet")
	r := put(eve, table_t, "wh/db/t2/data/new.parquet")
	not authz.allow with input as r
	contains(authz.reason, "is outside table prod/db/t") with input as r
}

test_table_grants_permit_on_their_route if {
	# ann has no group grant on t2, but t2's table grants let analysts read it.
	not authz.allow with input as get(ann, null, "wh/db/t2/data/f.parquet")
	authz.allow with input as get(ann, {"prefix": "prod", "namespace": ["db"], "name": "t2"}, "wh/db/t2/data/f.parquet")
}

test_catalog_token_confines_its_bearer if {
	# A catalog token whose principal also sits in a group with wider grants
	# is still confined to the token's location and access.
	tok := {"id": "job", "issuer": "https://catalog.example/", "groups": ["etl"], "claims": {"location": "s3://lake/wh/db/t/"}}
	authz.allow with input as get(tok, null, "wh/db/t/data/f.parquet")
	not authz.allow with input as get(tok, null, "wh/db/t2/data/f.parquet")
	not authz.allow with input as put(tok, null, "wh/db/t/data/f.parquet")
}

test_guardrails_apply_to_every_permit if {
	not authz.allow with input as req(eve, null, "PutObjectAcl", "admin", obj("wh/db/t/data/a.parquet"))
	not authz.allow with input as object.union(put(eve, table_t, "wh/db/t/data/a.parquet"), {"request": {"headers": {"x-amz-acl": "public-read"}}})
}

test_null_principal_denied if {
	r := get(null, null, "wh/db/t/data/f.parquet")
	not authz.allow with input as r
	contains(authz.reason, "no group grant, table grant or catalog token allows read") with input as r
	not authz.allow with input as get(null, table_t, "wh/db/t/data/f.parquet")
}

vobj(key, version) := object.union(obj(key), {"version_id": version})

test_no_delete_grant_removes_versions if {
	# eve may delete under wh/db/t/ by group grant and by table grant;
	# neither removes a version for good, on either route.
	authz.allow with input as req(eve, table_t, "DeleteObject", "delete", obj("wh/db/t/data/old.parquet"))
	authz.allow with input as req(eve, null, "DeleteObject", "delete", obj("wh/db/t/data/old.parquet"))
	not authz.allow with input as req(eve, table_t, "DeleteObject", "delete_version", vobj("wh/db/t/data/old.parquet", "v1"))
	not authz.allow with input as req(eve, null, "DeleteObject", "delete_version", vobj("wh/db/t/data/old.parquet", "v1"))
}
