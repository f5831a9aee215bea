package countersign.authz_test

import data.countersign.authz

get(bucket, key) := {
	"version": 1,
	"principal": null,
	"operation": "GetObject", "action": "s3:GetObject", "access": "read",
	"resource": {"bucket": bucket, "key": key, "prefix": null, "arn": concat("", ["arn:aws:s3:::", bucket, "/", key])},
	"copy_source": null,
	"table": null,
	"request": {"method": "GET", "region": "us-east-1", "host": "localhost:7070", "headers": {}},
	"source": {"ip": "127.0.0.1"},
}

test_anyone_uses_the_dev_bucket if {
	authz.allow with input as get("warehouse", "db/t/data/f.parquet")
	authz.allow with input as object.union(get("warehouse", "db/t/data/f.parquet"), {"principal": {"id": "ann", "groups": []}})
	authz.allow with input as object.union(get("warehouse", "db/t/data/f.parquet"), {"operation": "PutObject", "access": "write"})
}

test_other_buckets_denied if {
	not authz.allow with input as get("prod", "db/t/data/f.parquet")
	authz.reason == `bucket "prod" is not a development bucket` with input as get("prod", "db/t/data/f.parquet")
}

test_copy_from_other_bucket_denied if {
	not authz.allow with input as object.union(get("warehouse", "db/t/f"), {"operation": "CopyObject", "access": "write", "copy_source": {"bucket": "prod", "key": "x", "arn": "arn:aws:s3:::prod/x"}})
}

test_guardrails if {
	not authz.allow with input as object.union(get("warehouse", "db/t/f"), {"operation": "PutObjectAcl", "access": "admin"})
	not authz.allow with input as object.union(get("warehouse", "db/t/f"), {"request": {"headers": {"x-amz-acl": "public-read"}}})
}

test_versions_not_removed_for_good if {
	del := object.union(get("warehouse", "db/t/f"), {"operation": "DeleteObject", "action": "s3:DeleteObject", "access": "delete"})
	authz.allow with input as del
	vdel := object.union(del, {"action": "s3:DeleteObjectVersion", "access": "delete_version", "resource": {"version_id": "v1"}})
	not authz.allow with input as vdel
	contains(authz.reason, "does not remove object versions") with input as vdel
}
