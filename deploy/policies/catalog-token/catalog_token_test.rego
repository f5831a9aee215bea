package countersign.authz_test

import data.countersign.authz

catalog := "https://catalog.example/"

token(claims) := {"id": "spark-job-42", "issuer": catalog, "groups": [], "claims": claims}

reader := token({"location": "s3://lake/wh/db/t/"})

writer := token({"location": "s3://lake/wh/db/t/", "access": ["read", "write", "delete", "list"]})

obj(bucket, key) := {"bucket": bucket, "key": key, "prefix": null, "arn": concat("", ["arn:aws:s3:::", bucket, "/", key])}

req(principal, op, access, res) := {
	"version": 1,
	"principal": principal,
	"operation": op, "action": "s3:GetObject", "access": access,
	"resource": res,
	"copy_source": null,
	"table": {"prefix": "prod", "namespace": ["db"], "name": "t"},
	"request": {"method": "GET", "region": "us-east-1", "host": "lake.s3.us-east-1.amazonaws.com", "headers": {}},
	"source": {"ip": "10.0.0.7"},
}

get(p, key) := req(p, "GetObject", "read", obj("lake", key))

put(p, key) := req(p, "PutObject", "write", obj("lake", key))

ls(p, prefix) := req(p, "ListObjectsV2", "list", {"bucket": "lake", "key": "", "prefix": prefix, "arn": "arn:aws:s3:::lake"})

test_token_reads_its_location if {
	authz.allow with input as get(reader, "wh/db/t/data/00000-0.parquet")
	authz.allow with input as get(reader, "wh/db/t/metadata/v3.metadata.json")
}

test_default_access_is_read_only if {
	r := put(reader, "wh/db/t/data/new.parquet")
	not authz.allow with input as r
	contains(authz.reason, `catalog token grants ["read"], not write`) with input as r
	not authz.allow with input as ls(reader, "wh/db/t/")
}

test_access_claim_widens if {
	authz.allow with input as put(token({"location": "s3://lake/wh/db/t/", "access": ["read", "write"]}), "wh/db/t/data/new.parquet")
	not authz.allow with input as req(token({"location": "s3://lake/wh/db/t/", "access": ["read", "write"]}), "DeleteObject", "delete", obj("lake", "wh/db/t/data/old.parquet"))
	authz.allow with input as ls(writer, "wh/db/t/")
}

test_sibling_and_prefix_tricks_denied if {
	not authz.allow with input as get(reader, "wh/db/t2/data/00000-0.parquet")
	not authz.allow with input as get(reader, "wh/db/t_old/data/00000-0.parquet")
	not authz.allow with input as get(reader, "wh/db/t")

	# A location claim without the trailing slash is read as the directory.
	bare := token({"location": "s3://lake/wh/db/t"})
	authz.allow with input as get(bare, "wh/db/t/data/f.parquet")
	not authz.allow with input as get(bare, "wh/db/t_old/data/f.parquet")

	not authz.allow with input as ls(writer, "wh/db/")
	not authz.allow with input as ls(writer, "wh/db/t")
}

test_other_bucket_denied if {
	not authz.allow with input as req(reader, "GetObject", "read", obj("other", "wh/db/t/data/f.parquet"))
}

del(key) := req(writer, "DeleteObjects", "delete", obj("lake", key))

test_delete_objects_decided_per_key if {
	authz.allow with input as del("wh/db/t/data/old.parquet")
	not authz.allow with input as del("wh/db/t2/data/old.parquet")
}

dest(src, dst) := object.union(put(writer, dst), {"operation": "CopyObject", "copy_source": obj("lake", src)})

source(src) := object.union(get(writer, src), {"operation": "CopyObject", "copy_source": obj("lake", src)})

test_copies if {
	authz.allow with input as dest("wh/db/t/data/a.parquet", "wh/db/t/data/b.parquet")
	authz.allow with input as source("wh/db/t/data/a.parquet")
	not authz.allow with input as dest("wh/db/t2/data/a.parquet", "wh/db/t/data/b.parquet")
	contains(authz.reason, "lake/wh/db/t2/data/a.parquet is outside the catalog token's location") with input as dest("wh/db/t2/data/a.parquet", "wh/db/t/data/b.parquet")
	not authz.allow with input as source("wh/db/t2/data/a.parquet")
}

test_several_locations if {
	two := token({"location": ["s3://lake/wh/db/t/", "s3://lake/wh/db/t2/"]})
	authz.allow with input as get(two, "wh/db/t/f.parquet")
	authz.allow with input as get(two, "wh/db/t2/f.parquet")
	not authz.allow with input as get(two, "wh/db/t3/f.parquet")
}

test_untrusted_issuer_grants_nothing if {
	idp := {"id": "mallory", "issuer": "https://idp.example/", "groups": ["admins"], "claims": {"location": "s3://lake/", "access": ["read", "write"]}}
	not authz.allow with input as get(idp, "wh/db/t/f.parquet")
	startswith(authz.reason, "no catalog token") with input as get(idp, "wh/db/t/f.parquet")
}

test_malformed_claims_denied if {
	not authz.allow with input as get(token({}), "wh/db/t/f.parquet")
	not authz.allow with input as get(token({"location": "gs://lake/wh/db/t/"}), "wh/db/t/f.parquet")
	not authz.allow with input as get(token({"location": "s3://lake/wh/db/t/", "access": "read"}), "wh/db/t/f.parquet")
	not authz.allow with input as get(token({"location": "s3://lake/wh/db/t/", "access": []}), "wh/db/t/f.parquet")
	not authz.allow with input as get(token(null), "wh/db/t/f.parquet")
}

test_admin_and_dangerous_headers_denied if {
	not authz.allow with input as req(writer, "PutObjectAcl", "admin", obj("lake", "wh/db/t/data/a.parquet"))
	not authz.allow with input as req(writer, "Unknown", "admin", obj("lake", "wh/db/t/data/a.parquet"))
	not authz.allow with input as object.union(put(writer, "wh/db/t/data/a.parquet"), {"request": {"headers": {"x-amz-acl": "public-read"}}})
	not authz.allow with input as object.union(put(writer, "wh/db/t/data/a.parquet"), {"request": {"headers": {"x-method-override": "DELETE"}}})
}

test_null_principal_denied if {
	not authz.allow with input as get(null, "wh/db/t/data/f.parquet")
}

test_token_delete_does_not_remove_versions if {
	vdel := object.union(del("wh/db/t/data/old.parquet"), {"operation": "DeleteObject", "access": "delete_version", "resource": {"version_id": "v1"}})
	not authz.allow with input as vdel
	vwriter := token({"location": "s3://lake/wh/db/t/", "access": ["delete_version"]})
	authz.allow with input as object.union(vdel, {"principal": vwriter})
}
