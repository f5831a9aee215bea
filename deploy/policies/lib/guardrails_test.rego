package countersign.lib.guardrails_test

import data.countersign.lib.guardrails

get := {
	"version": 1,
	"principal": {"id": "ann", "issuer": "https://idp.example/", "groups": ["analysts"], "claims": {}},
	"operation": "GetObject", "action": "s3:GetObject", "access": "read",
	"resource": {"bucket": "lake", "key": "wh/db/t/data/f.parquet", "prefix": null, "arn": "arn:aws:s3:::lake/wh/db/t/data/f.parquet"},
	"copy_source": null,
	"table": null,
	"request": {"method": "GET", "region": "us-east-1", "host": "lake.s3.us-east-1.amazonaws.com", "headers": {"range": "bytes=0-99"}},
	"source": {"ip": "10.0.0.7"},
}

put := object.union(get, {"operation": "PutObject", "action": "s3:PutObject", "access": "write", "request": {"method": "PUT"}})

with_header(req, name) := object.union(req, {"request": {"headers": {name: "v"}}})

test_ordinary_requests_pass if {
	count(guardrails.deny) == 0 with input as get
	count(guardrails.deny) == 0 with input as put
	count(guardrails.deny) == 0 with input as object.union(put, {"access": "delete", "operation": "DeleteObject"})
	count(guardrails.deny) == 0 with input as object.union(get, {"access": "list", "operation": "ListObjectsV2"})
}

test_null_principal_is_not_a_guardrail if {
	count(guardrails.deny) == 0 with input as object.union(get, {"principal": null})
}

test_admin_operation_denied if {
	some msg in guardrails.deny with input as object.union(put, {"operation": "PutObjectAcl", "action": "s3:PutObjectAcl", "access": "admin"})
	contains(msg, "PutObjectAcl is an admin operation")
}

test_admin_denied_even_with_minimal_input if {
	count(guardrails.deny) > 0 with input as {"version": 1, "access": "admin"}
}

test_unknown_operation_denied if {
	guardrails.deny["the request is not a recognized S3 operation (Unknown)"] with input as object.union(get, {"operation": "Unknown", "action": "s3:Unknown", "access": "admin"})
}

test_unknown_access_class_denied if {
	count(guardrails.deny) > 0 with input as object.union(get, {"access": "superuser"})
	count(guardrails.deny) > 0 with input as object.remove(get, ["access"])
}

test_input_version_checked if {
	count(guardrails.deny) > 0 with input as object.union(get, {"version": 2})
	count(guardrails.deny) > 0 with input as object.remove(get, ["version"])
}

dangerous := [
	"x-amz-acl",
	"x-amz-grant-read",
	"x-amz-grant-full-control",
	"x-amz-grant-write-acp",
	"x-amz-website-redirect-location",
	"x-amz-bypass-governance-retention",
	"x-amz-object-lock-mode",
	"x-amz-object-lock-retain-until-date",
	"x-amz-object-lock-legal-hold",
	"x-http-method-override",
	"x-http-method",
	"x-method-override",
	"x-amz-tagging",
	"x-amz-tagging-directive",
	"x-amz-server-side-encryption-aws-kms-key-id",
	"x-amz-server-side-encryption-context",
	"x-amz-server-side-encryption-customer-algorithm",
	"x-amz-server-side-encryption-customer-key",
	"x-amz-server-side-encryption-customer-key-md5",
	"x-amz-copy-source-server-side-encryption-customer-algorithm",
	"x-amz-copy-source-server-side-encryption-customer-key",
	"x-amz-copy-source-server-side-encryption-customer-key-md5",
	"X-Amz-Tagging",
	"X-Amz-Acl",
	"X-HTTP-Method-Override",
]

test_dangerous_headers_denied if {
	every name in dangerous {
		some msg in guardrails.deny with input as with_header(put, name)
		contains(msg, lower(name))
	}
}

test_harmless_headers_pass if {
	every name in ["content-type", "x-amz-meta-owner", "x-amz-copy-source", "x-amz-checksum-crc32", "x-amz-server-side-encryption", "x-amz-server-side-encryption-bucket-key-enabled", "content-md5"] {
		count(guardrails.deny) == 0 with input as with_header(put, name)
	}
}

test_no_headers_at_all_passes if {
	count(guardrails.deny) == 0 with input as object.union(get, {"request": {"headers": null}})
}

test_delete_version_is_a_known_access_class if {
	count(guardrails.deny) == 0 with input as object.union(put, {"access": "delete_version", "operation": "DeleteObject", "action": "s3:DeleteObjectVersion", "resource": {"version_id": "v1"}})
}
