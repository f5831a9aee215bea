# Policy for the end-to-end tests: data operations on bucket "lake" are
# allowed except under "denied/"; the bucket "private" and every admin
# operation are denied.
package countersign.authz

default allow := false

allow if {
	input.access in {"read", "write", "delete", "list"}
	input.resource.bucket == "lake"
	not startswith(input.resource.key, "denied/")
}

reason := "admin operations are denied" if input.access == "admin"
