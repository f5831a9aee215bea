package countersign.authz_test

import data.countersign.authz

ann := {"id": "ann", "issuer": "https://idp.example/", "groups": ["analysts"], "claims": {}}

eve := {"id": "eve", "issuer": "https://idp.example/", "groups": ["etl"], "claims": {}}

obj(bucket, key) := {"bucket": bucket, "key": key, "prefix": null, "arn": concat("", ["arn:aws:s3:::", bucket, "/", key])}

req(principal, op, action, access, res) := {
	"version": 1,
	"principal": principal,
	"operation": op, "action": action, "access": access,
	"resource": res,
	"copy_source": null,
	"table": null,
	"request": {"method": "GET", "region": "us-east-1", "host": "lake.s3.us-east-1.amazonaws.com", "headers": {}},
	"source": {"ip": "10.0.0.7"},
}

get(p, key) := req(p, "GetObject", "s3:GetObject", "read", obj("lake", key))

put(p, key) := req(p, "PutObject", "s3:PutObject", "write", obj("lake", key))

delete_key(p, key) := req(p, "DeleteObjects", "s3:DeleteObject", "delete", obj("lake", key))

ls(p, prefix) := req(p, "ListObjectsV2", "s3:ListBucket", "list", {"bucket": "lake", "key": "", "prefix": prefix, "arn": "arn:aws:s3:::lake"})

# The two decisions the server makes for a CopyObject: the destination
# (write) and the source (read), both carrying copy_source.
copy_dest(p, src, dst) := object.union(put(p, dst), {"operation": "CopyObject", "copy_source": obj("lake", src)})

copy_src(p, src) := object.union(get(p, src), {"operation": "CopyObject", "copy_source": obj("lake", src)})

with_header(r, name) := object.union(r, {"request": {"headers": {name: "v"}}})

# --- reads -----------------------------------------------------------------

test_reads_granted_table if {
	authz.allow with input as get(ann, "wh/db/t/data/00000-0.parquet")
	authz.allow with input as get(ann, "wh/db/t/metadata/v3.metadata.json")
	not authz.reason with input as get(ann, "wh/db/t/data/00000-0.parquet")
}

test_sibling_table_denied if {
	not authz.allow with input as get(ann, "wh/db/t2/data/00000-0.parquet")
	contains(authz.reason, "no group of ann grants read") with input as get(ann, "wh/db/t2/data/00000-0.parquet")
}

test_prefix_trick_denied if {
	# The grant is "wh/db/t/", so neither t_old nor a key equal to the bare
	# table path is covered.
	not authz.allow with input as get(ann, "wh/db/t_old/data/f.parquet")
	not authz.allow with input as get(ann, "wh/db/t")
}

test_other_bucket_denied if {
	not authz.allow with input as req(ann, "GetObject", "s3:GetObject", "read", obj("other", "wh/db/t/f.parquet"))
}

# --- access classes are separate ---------------------------------------------

test_read_grant_does_not_write if {
	not authz.allow with input as put(ann, "wh/db/t/data/new.parquet")
}

test_write_grant_covers_every_db_table if {
	authz.allow with input as put(eve, "wh/db/t/data/new.parquet")
	authz.allow with input as put(eve, "wh/db/t2/data/new.parquet")
	not authz.allow with input as put(eve, "wh/sales/new.parquet")
}

test_delete_objects_decided_per_key if {
	# One DeleteObjects, three keys: each is its own decision, and the
	# server refuses the request because t2's key is denied.
	authz.allow with input as delete_key(eve, "wh/db/t/data/old-1.parquet")
	authz.allow with input as delete_key(eve, "wh/db/t/metadata/snap-1.avro")
	not authz.allow with input as delete_key(eve, "wh/db/t2/data/old-1.parquet")
	not authz.allow with input as delete_key(ann, "wh/db/t/data/old-1.parquet")
}

# --- lists -------------------------------------------------------------------

test_list_within_grant if {
	authz.allow with input as ls(ann, "wh/db/t/")
	authz.allow with input as ls(ann, "wh/db/t/metadata/")
}

test_list_beyond_grant_denied if {
	not authz.allow with input as ls(ann, "wh/db/") # would reveal t2
	not authz.allow with input as ls(ann, "wh/db/t") # would list t_old, t2
	not authz.allow with input as ls(ann, "")
}

test_bucket_level_list_needs_some_list_grant if {
	head := req(ann, "HeadBucket", "s3:ListBucket", "list", {"bucket": "lake", "key": "", "prefix": null, "arn": "arn:aws:s3:::lake"})
	authz.allow with input as head
	not authz.allow with input as object.union(head, {"principal": {"groups": ["nobody"]}})
	not authz.allow with input as object.union(head, {"resource": {"bucket": "other", "arn": "arn:aws:s3:::other"}})
}

# --- copies ------------------------------------------------------------------

test_copy_within_grants if {
	authz.allow with input as copy_dest(eve, "wh/db/t/data/a.parquet", "wh/db/t2/data/a.parquet")
	authz.allow with input as copy_src(eve, "wh/db/t/data/a.parquet")
}

test_copy_source_outside_grant_denied if {
	# eve may write wh/db/ but not read wh/sales/: both decisions refuse.
	not authz.allow with input as copy_dest(eve, "wh/sales/q1.parquet", "wh/db/t/data/q1.parquet")
	contains(authz.reason, "copy source arn:aws:s3:::lake/wh/sales/q1.parquet") with input as copy_dest(eve, "wh/sales/q1.parquet", "wh/db/t/data/q1.parquet")
	not authz.allow with input as copy_src(eve, "wh/sales/q1.parquet")
}

test_copy_source_in_other_bucket_denied if {
	r := object.union(put(eve, "wh/db/t/data/x.parquet"), {"operation": "CopyObject", "copy_source": obj("other", "wh/db/t/data/x.parquet")})
	not authz.allow with input as r
}

# --- guardrails --------------------------------------------------------------

test_admin_operation_denied_despite_grant if {
	acl := req(eve, "PutObjectAcl", "s3:PutObjectAcl", "admin", obj("lake", "wh/db/t/data/a.parquet"))
	not authz.allow with input as acl
	contains(authz.reason, "PutObjectAcl is an admin operation") with input as acl
	not authz.allow with input as object.union(acl, {"operation": "Unknown", "action": "s3:Unknown"})
}

test_dangerous_headers_denied_despite_grant if {
	every h in ["x-amz-acl", "x-amz-grant-read", "x-amz-object-lock-mode", "x-amz-bypass-governance-retention", "x-http-method-override", "x-amz-website-redirect-location"] {
		not authz.allow with input as with_header(put(eve, "wh/db/t/data/a.parquet"), h)
	}
	authz.allow with input as with_header(put(eve, "wh/db/t/data/a.parquet"), "content-type")
}

# --- principals ---------------------------------------------------------------

test_null_principal_denied if {
	not authz.allow with input as get(null, "wh/db/t/data/00000-0.parquet")
	authz.reason == "no principal: the request is not authenticated" with input as get(null, "wh/db/t/data/00000-0.parquet")
}

test_principal_without_groups_denied if {
	not authz.allow with input as get({"id": "x", "issuer": "i", "groups": [], "claims": {}}, "wh/db/t/f")
	not authz.allow with input as get({"id": "x", "issuer": "i", "groups": null, "claims": {}}, "wh/db/t/f")
	not authz.allow with input as get({"id": "analysts", "issuer": "i", "groups": ["unknown"], "claims": {}}, "wh/db/t/f")
}

test_input_version_2_denied if {
	not authz.allow with input as object.union(get(ann, "wh/db/t/f"), {"version": 2})
}

# --- the shipped data --------------------------------------------------------

test_grant_prefixes_end_in_slash if {
	bad := [p |
		some g, b, a
		some p in data.countersign.grants[g][b][a]
		p != ""
		not endswith(p, "/")
	]
	count(bad) == 0
}

# --- object versions -----------------------------------------------------------

vobj(key, version) := object.union(obj("lake", key), {"version_id": version})

delete_version(p, key, version) := req(p, "DeleteObject", "s3:DeleteObjectVersion", "delete_version", vobj(key, version))

test_delete_grant_does_not_remove_versions if {
	# eve's "delete" grant (snapshot expiry) covers the delete that leaves a
	# delete marker, not removing a version for good: that is how a
	# mistaken delete is undone.
	authz.allow with input as req(eve, "DeleteObject", "s3:DeleteObject", "delete", obj("lake", "wh/db/t/data/old-1.parquet"))
	not authz.allow with input as delete_version(eve, "wh/db/t/data/old-1.parquet", "3HL4kqtJlcpXroDTDmJ+gq")
	not authz.allow with input as object.union(delete_version(eve, "wh/db/t/data/old-1.parquet", "null"), {"operation": "DeleteObjects"})
	contains(authz.reason, "needs a delete_version grant") with input as delete_version(eve, "wh/db/t/data/old-1.parquet", "v1")
}

test_version_delete_needs_a_grant_that_names_it if {
	g := {"etl": {"lake": {"delete_version": ["wh/db/t/"]}}}
	authz.allow with input as delete_version(eve, "wh/db/t/data/old-1.parquet", "v1") with data.countersign.grants as g
	not authz.allow with input as delete_version(eve, "wh/db/t2/data/old-1.parquet", "v1") with data.countersign.grants as g
	not authz.allow with input as delete_version(ann, "wh/db/t/data/old-1.parquet", "v1") with data.countersign.grants as g
}

test_reading_a_version_is_a_read if {
	authz.allow with input as req(ann, "GetObject", "s3:GetObjectVersion", "read", vobj("wh/db/t/data/00000-0.parquet", "v1"))
	not authz.allow with input as req(ann, "GetObject", "s3:GetObjectVersion", "read", vobj("wh/db/t2/data/00000-0.parquet", "v1"))
}
