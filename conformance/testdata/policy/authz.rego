# Policy for the conformance tests. Group "lakehouse-writers" may read,
# write, delete and list bucket "lake"; group "lakehouse-readers" may only
# read and list it. Everything else (other buckets, admin operations, other
# principals) is denied.
package countersign.authz

default allow := false

allow if {
	"lakehouse-writers" in input.principal.groups
	input.access in {"read", "write", "delete", "list"}
	input.resource.bucket == "lake"
}

allow if {
	"lakehouse-readers" in input.principal.groups
	input.access in {"read", "list"}
	input.resource.bucket == "lake"
}

reason := "read-only principal" if {
	"lakehouse-readers" in input.principal.groups
	not "lakehouse-writers" in input.principal.groups
	input.access in {"write", "delete"}
}
