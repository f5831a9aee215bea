package countersign.authz_test

import data.countersign.authz

ann := {"id": "ann", "issuer": "https://idp.example/", "groups": ["analysts"], "claims": {}}

eve := {"id": "eve", "issuer": "https://idp.example/", "groups": ["etl"], "claims": {}}

table_t := {"prefix": "prod", "namespace": ["db"], "name": "t"}

table_t2 := {"prefix": "prod", "namespace": ["db"], "name": "t2"}

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

ls(p, table, prefix) := req(p, table, "ListObjectsV2", "list", {"bucket": "lake", "key": "", "prefix": prefix, "arn": "arn:aws:s3:::lake"})

copy_dest(p, table, src, dst) := object.union(put(p, table, dst), {"operation": "CopyObject", "copy_source": obj(src)})

copy_src(p, table, src) := object.union(get(p, table, src), {"operation": "CopyObject", "copy_source": obj(src)})

test_reads_under_table_location if {
	authz.allow with input as get(ann, table_t, "wh/db/t/data/00000-0.parquet")
	authz.allow with input as get(ann, table_t, "wh/db/t/metadata/v3.metadata.json")
}

test_sibling_table_key_denied if {
	# ann may read t2 through t2's route, but not through t's.
	r := get(ann, table_t, "wh/db/t2/data/00000-0.parquet")
	not authz.allow with input as r
	contains(authz.reason, "is outside table prod/db/t") with input as r
	authz.allow with input as get(ann, table_t2, "wh/db/t2/data/00000-0.parquet")
}

test_prefix_trick_denied if {
	not authz.allow with input as get(ann, table_t, "wh/db/t_old/data/f.parquet")
	not authz.allow with input as get(ann, table_t, "wh/db/t")

	# t2's location in data has no trailing slash: it still does not cover t2_old.
	not authz.allow with input as get(ann, table_t2, "wh/db/t2_old/data/f.parquet")
}

test_other_bucket_denied if {
	not authz.allow with input as object.union(get(ann, table_t, "wh/db/t/f"), {"resource": {"bucket": "other"}})
}

test_legacy_route_denied if {
	r := get(ann, null, "wh/db/t/data/00000-0.parquet")
	not authz.allow with input as r
	startswith(authz.reason, "legacy sign route") with input as r
}

test_unknown_table_denied if {
	r := get(ann, {"prefix": "prod", "namespace": ["db"], "name": "nope"}, "wh/db/nope/f.parquet")
	not authz.allow with input as r
	contains(authz.reason, "is not in data.countersign.tables") with input as r

	# The route without a prefix names table "/db/t", a different entry.
	not authz.allow with input as get(ann, {"prefix": "", "namespace": ["db"], "name": "t"}, "wh/db/t/f.parquet")
}

test_multi_level_namespace if {
	events := {"prefix": "prod", "namespace": ["db", "sub"], "name": "events"}
	authz.allow with input as get(ann, events, "wh/db/sub/events/data/f.parquet")
	not authz.allow with input as get(ann, events, "wh/db/sub/other/f.parquet")
}

test_table_grants_separate_access if {
	not authz.allow with input as put(ann, table_t, "wh/db/t/data/new.parquet")
	authz.allow with input as put(eve, table_t, "wh/db/t/data/new.parquet")
	not authz.allow with input as put(eve, table_t2, "wh/db/t2/data/new.parquet") # no grant for etl on t2
}

del(key) := object.union(req(eve, table_t, "DeleteObjects", "delete", obj(key)), {"action": "s3:DeleteObject"})

test_delete_objects_decided_per_key if {
	authz.allow with input as del("wh/db/t/data/old.parquet")
	not authz.allow with input as del("wh/db/t2/data/old.parquet")
	not authz.allow with input as del("wh/db/t_old/data/old.parquet")
}

test_lists if {
	authz.allow with input as ls(ann, table_t, "wh/db/t/")
	authz.allow with input as ls(ann, table_t, "wh/db/t/metadata/")
	not authz.allow with input as ls(ann, table_t, "wh/db/")
	not authz.allow with input as ls(ann, table_t, "wh/db/t")
	not authz.allow with input as ls(ann, table_t2, "wh/db/t2/") # analysts may only read t2

	# Bucket-level requests are never under a table's location.
	not authz.allow with input as req(ann, table_t, "HeadBucket", "list", {"bucket": "lake", "key": "", "prefix": null, "arn": "arn:aws:s3:::lake"})
}

test_copy_within_table if {
	authz.allow with input as copy_dest(eve, table_t, "wh/db/t/data/a.parquet", "wh/db/t/data/b.parquet")
	authz.allow with input as copy_src(eve, table_t, "wh/db/t/data/a.parquet")
}

test_copy_source_outside_table_denied if {
	r := copy_dest(eve, table_t, "wh/db/t2/data/a.parquet", "wh/db/t/data/a.parquet")
	not authz.allow with input as r
	contains(authz.reason, "copy source") with input as r
	not authz.allow with input as copy_src(eve, table_t, "wh/db/t2/data/a.parquet")
}

test_admin_and_dangerous_headers_denied if {
	not authz.allow with input as req(eve, table_t, "PutObjectAcl", "admin", obj("wh/db/t/data/a.parquet"))
	not authz.allow with input as req(eve, table_t, "Unknown", "admin", obj("wh/db/t/data/a.parquet"))
	not authz.allow with input as object.union(put(eve, table_t, "wh/db/t/data/a.parquet"), {"request": {"headers": {"x-amz-grant-full-control": "id=x"}}})
	not authz.allow with input as object.union(put(eve, table_t, "wh/db/t/data/a.parquet"), {"request": {"headers": {"x-amz-object-lock-legal-hold": "ON"}}})
}

test_null_principal_denied if {
	r := get(null, table_t, "wh/db/t/data/00000-0.parquet")
	not authz.allow with input as r
	authz.reason == "no principal: the request is not authenticated" with input as r
}

test_locations_parse if {
	data.countersign.lib.location.parse("s3://lake/wh/db/t") == {"bucket": "lake", "prefix": "wh/db/t/"}
	data.countersign.lib.location.parse("s3a://lake/wh/") == {"bucket": "lake", "prefix": "wh/"}
	data.countersign.lib.location.parse("s3://lake") == {"bucket": "lake", "prefix": ""}
	data.countersign.lib.location.parse("s3://lake/") == {"bucket": "lake", "prefix": ""}
	not data.countersign.lib.location.parse("gs://lake/wh/")
	not data.countersign.lib.location.parse("s3:///wh/")
}

vobj(key, version) := object.union(obj(key), {"version_id": version})

test_table_delete_grant_does_not_remove_versions if {
	authz.allow with input as req(eve, table_t, "DeleteObject", "delete", obj("wh/db/t/data/old.parquet"))
	not authz.allow with input as req(eve, table_t, "DeleteObject", "delete_version", vobj("wh/db/t/data/old.parquet", "v1"))
	t := object.union(data.countersign.tables["prod/db/t"], {"grants": {"etl": ["delete_version"]}})
	authz.allow with input as req(eve, table_t, "DeleteObject", "delete_version", vobj("wh/db/t/data/old.parquet", "v1")) with data.countersign.tables["prod/db/t"] as t
}

# With countersign fronting the catalog, the catalog's location for this
# caller (input.table.location) may narrow the operator's location, never
# replace or widen it: any committer can change it (set-location).
test_catalog_location_narrows_data if {
	narrowed := object.union(table_t, {"location": "s3://lake/wh/db/t/current"})
	authz.allow with input as get(ann, narrowed, "wh/db/t/current/data/f.parquet")
	r := get(ann, narrowed, "wh/db/t/data/f.parquet")
	not authz.allow with input as r
	contains(authz.reason, "is outside table prod/db/t (s3://lake/wh/db/t/current)") with input as r
	authz.allow with input as get(ann, object.union(table_t, {"location": "s3://lake/wh/db/t"}), "wh/db/t/data/f.parquet")
}

test_catalog_location_never_replaces_data if {
	moved := object.union(table_t, {"location": "s3://lake/wh/moved/t"})
	r := get(ann, moved, "wh/moved/t/data/00000-0.parquet")
	not authz.allow with input as r
	contains(authz.reason, "the catalog's location s3://lake/wh/moved/t for table prod/db/t is outside the operator's s3://lake/wh/db/t/") with input as r
	# Nor is anything of the operator's location signed while the
	# catalog names another: the table is refused until it is fixed.
	not authz.allow with input as get(ann, moved, "wh/db/t/data/00000-0.parquet")
}

test_catalog_location_never_widens_data if {
	every where in ["s3://lake", "s3://lake/", "s3://lake/wh/", "s3://lake/wh/db/", "s3://lake/wh/db/t2", "s3://other/wh/db/t/", "s3a://lake/wh/db/t_old/"] {
		wide := object.union(table_t, {"location": where})
		not authz.allow with input as get(ann, wide, "wh/db/t2/data/f.parquet")
		not authz.allow with input as get(ann, wide, "wh/db/t/data/f.parquet")
		contains(authz.reason, "a catalog location may only narrow it") with input as get(ann, wide, "wh/db/t/data/f.parquet")
	}
}

test_catalog_location_unparseable_is_refused if {
	r := get(ann, object.union(table_t, {"location": "gs://lake/wh/db/t/"}), "wh/db/t/data/f.parquet")
	not authz.allow with input as r
	contains(authz.reason, "is not an s3:// location") with input as r
	# An operator location that does not parse does not let the catalog's through.
	bad := {"prod/db/t": {"location": "lake/wh/db/t/", "grants": {"analysts": ["read"]}}}
	r2 := get(ann, object.union(table_t, {"location": "s3://lake/wh/db/t/"}), "wh/db/t/data/f.parquet")
	not authz.allow with input as r2 with data.countersign.tables as bad
}

# A table with grants but no location in the data: its location comes
# from the catalog only within the operator's root for its warehouse or
# namespace (data.countersign.table_roots).
grants_only := {
	"prod/db/t": {"grants": {"analysts": ["read", "list"]}},
	"prod/db/t2": {"location": "s3://lake/wh/db/t2/", "grants": {"analysts": ["read"]}},
	"prod/db.sub/events": {"grants": {"analysts": ["read"]}},
}

roots := {"prod": "s3://lake/wh/", "prod/db.sub": "s3://lake/wh/subs/"}

at(where) := object.union(table_t, {"location": where})

test_catalog_location_needs_a_root if {
	r := get(ann, at("s3://lake/wh/db/t"), "wh/db/t/data/f.parquet")
	not authz.allow with input as r with data.countersign.tables as grants_only
	contains(authz.reason, "no root in data.countersign.table_roots") with input as r with data.countersign.tables as grants_only
	# No entry at all: still refused, never confined to the catalog's word alone.
	not authz.allow with input as r with data.countersign.tables as {}
	contains(authz.reason, "no root in data.countersign.table_roots") with input as r with data.countersign.tables as {}
}

test_catalog_location_under_root if {
	authz.allow with input as get(ann, at("s3://lake/wh/db/t"), "wh/db/t/data/f.parquet") with data.countersign.tables as grants_only with data.countersign.table_roots as roots
	r := get(ann, at("s3://lake/wh/db/t"), "wh/db/other/f.parquet")
	not authz.allow with input as r with data.countersign.tables as grants_only with data.countersign.table_roots as roots
	contains(authz.reason, "is outside table prod/db/t") with input as r with data.countersign.tables as grants_only with data.countersign.table_roots as roots
}

test_catalog_location_refused_at_or_outside_root if {
	every where, why in {
		"s3://lake": "not strictly under the operator's root",
		"s3://lake/": "not strictly under the operator's root",
		"s3://lake/wh": "not strictly under the operator's root",
		"s3://lake/other/t/": "not strictly under the operator's root",
		"s3://other/wh/db/t/": "not strictly under the operator's root",
		"s3://lake/wh/db/t2/": "overlaps table prod/db/t2's location",
		"s3://lake/wh/db/t2/sub/": "overlaps table prod/db/t2's location",
		"s3://lake/wh/db/": "overlaps table prod/db/t2's location",
		"s3://lake/wh/subs/": "contains the root s3://lake/wh/subs/",
		"s3://lake/wh/subs/x/": "lies inside the root s3://lake/wh/subs/",
	} {
		r := get(ann, at(where), "wh/db/t2/data/f.parquet")
		not authz.allow with input as r with data.countersign.tables as grants_only with data.countersign.table_roots as roots
		contains(authz.reason, why) with input as r with data.countersign.tables as grants_only with data.countersign.table_roots as roots
	}
}

test_namespace_root_is_most_specific if {
	events := {"prefix": "prod", "namespace": ["db", "sub"], "name": "events"}
	ok := object.union(events, {"location": "s3://lake/wh/subs/events"})
	authz.allow with input as get(ann, ok, "wh/subs/events/f.parquet") with data.countersign.tables as grants_only with data.countersign.table_roots as roots
	# Under the warehouse root but not the namespace's: refused.
	r := get(ann, object.union(events, {"location": "s3://lake/wh/db/events"}), "wh/db/events/f.parquet")
	not authz.allow with input as r with data.countersign.tables as grants_only with data.countersign.table_roots as roots
	contains(authz.reason, "not strictly under the operator's root s3://lake/wh/subs/") with input as r with data.countersign.tables as grants_only with data.countersign.table_roots as roots
}

test_invalid_root_refuses if {
	r := get(ann, at("s3://lake/wh/db/t"), "wh/db/t/data/f.parquet")
	not authz.allow with input as r with data.countersign.tables as grants_only with data.countersign.table_roots as {"prod": "lake/wh/"}
	contains(authz.reason, "is not an s3:// location") with input as r with data.countersign.tables as grants_only with data.countersign.table_roots as {"prod": "lake/wh/"}
}

test_entry_without_location_denied if {
	r := get(ann, table_t, "wh/db/t/data/f.parquet")
	not authz.allow with input as r with data.countersign.tables as grants_only
	contains(authz.reason, "has no location in data.countersign.tables") with input as r with data.countersign.tables as grants_only
}

test_empty_catalog_location_uses_data if {
	authz.allow with input as get(ann, object.union(table_t, {"location": ""}), "wh/db/t/data/00000-0.parquet")
}
