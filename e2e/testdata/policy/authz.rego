# Policy for the end-to-end tests: members of group "engineers" may use
# bucket "lake" for data operations, except keys under "denied/"; the
# bucket "private", admin operations and every other principal are denied.
package countersign.authz

default allow := false

allow if {
	"engineers" in input.principal.groups
	input.access in {"read", "write", "delete", "list"}
	input.resource.bucket == "lake"
	not startswith(input.resource.key, "denied/")
}

reason := "admin operations are denied" if input.access == "admin"
