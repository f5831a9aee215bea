# Policy for the per-principal session tests (sessions_test.go): alice may
# read and write under lake/wh/db/t/, nothing else; in particular no one
# may delete, and nothing outside that prefix is allowed.
package countersign.authz

default allow := false

allow if {
	input.principal.id == "alice"
	input.access in {"read", "write"}
	input.resource.bucket == "lake"
	startswith(input.resource.key, "wh/db/t/")
}
