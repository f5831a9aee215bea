# Development policy embedded in `countersign serve -dev`. NOT for
# production: every caller may read, write, delete and list objects in the
# development buckets listed in data.countersign.dev.buckets. Admin
# operations (ACLs, bucket configuration, unknown requests) and requests
# carrying headers that change an object's protection are denied.
package countersign.authz

default allow := false

data_access := {"read", "write", "delete", "list"}

allow if {
	input.access in data_access
	input.resource.bucket in data.countersign.dev.buckets
	not dangerous_header
	copy_source_allowed
}

reason := "admin operations are not allowed" if input.access == "admin"

reason := sprintf("bucket %q is not a development bucket", [input.resource.bucket]) if {
	input.access != "admin"
	not input.resource.bucket in data.countersign.dev.buckets
}

reason := "request carries a header that changes object protection" if dangerous_header

copy_source_allowed if input.copy_source == null

copy_source_allowed if input.copy_source.bucket in data.countersign.dev.buckets

# Headers that change access control, retention or the HTTP method.
dangerous_prefixes := {"x-amz-grant-", "x-amz-object-lock-"}

dangerous_names := {
	"x-amz-acl",
	"x-amz-website-redirect-location",
	"x-amz-bypass-governance-retention",
	"x-http-method-override",
	"x-http-method",
	"x-method-override",
}

dangerous_header if {
	some name, _ in input.request.headers
	name in dangerous_names
}

dangerous_header if {
	some name, _ in input.request.headers
	some p in dangerous_prefixes
	startswith(name, p)
}
