// Package policy decides, per object, whether a principal may perform an S3
// action, by evaluating an Open Policy Agent policy (package
// countersign.authz, rule allow, optional reason).
//
// The package loads a policy (Load, from files or an embedded tree;
// Manager, from files or an OPA bundle it keeps fresh: manager.go,
// source.go, snapshot.go, bundle.go), admits it (a package
// countersign.authz with a rule allow, and no allow that allows what no
// rule decided: allowcheck.go), and decides (Engine.Authorize, engine.go).
// RunTests runs a policy's own tests (runtests.go, countersign policy
// test).
//
// # Fast path
//
// A scan asks the same question — principal P reads the objects of table T
// — thousands of times with a different key each time, and a full
// evaluation of the policy package with a 10,000-grant data document
// costs more than the rest of the request. The fast path, package
// policy/internal/fastpath (policy/internal/fastpath/doc.go), decides an
// object from its scope's residual policy, partially evaluated once per
// scope and cached, an order of magnitude cheaper (bench/README.md,
// "Policy decisions"), and every decision stays exactly the full
// evaluation's (Allow, Reason, and the error when OPA reports one).
// docs/design.md, "Fast path", gives the argument in short.
//
// This package knows it only through fastpath.go: an Engine builds its
// cache with fastpath.New (FastPathOptions; a reload builds a new Engine,
// so the cache starts empty), Authorize asks Cache.Decide first and
// evaluates the whole package when it cannot decide, and Engine.FastPath
// says why a policy is always fully evaluated (http.send, time.now_ns or
// with, for example). The fast path's tests, its differential tests
// against rego's own evaluation and the policy fuzzer live beside it.
//
// # Upgrading OPA
//
// The fast path depends on how OPA compiles, partially evaluates and
// evaluates: policy/internal/fastpath/doc.go, "Upgrading OPA", is the
// checklist.
//
// OnCache (ManagerOptions) is called once per decision the fast path was
// asked for: true when a cached residual decided.
package policy
