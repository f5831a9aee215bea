// Package testsupport runs the real programs that countersign's test
// modules (e2e and conformance) test against: it builds countersign, the
// pinned versitygw and (for e2e) the pinned SeaweedFS, starts them on
// loopback ports, backs versitygw
// with its standalone IAM service for temporary credentials, plays the
// identity provider (a JWKS file and hand-signed RS256 tokens), and makes
// audit keys.
//
// It is a module of its own because test files cannot be imported across
// modules, and both test modules need the same harness. It holds only
// what both share; each module keeps its own configuration, keys and
// client-side helpers, and wraps these types where it adds methods. The
// exception is the catalog tests' setup (catalog.go: SeaweedFS's Iceberg
// catalog, the token it and countersign both accept, and countersign's
// config for it), which both modules wrote alike.
//
// The test binary's working directory must be a module directly below
// the repository root (as e2e/ and conformance/ are): countersign is
// built from "..", versitygw from "../tools", SeaweedFS from
// "../tools/seaweedfs".
package testsupport
