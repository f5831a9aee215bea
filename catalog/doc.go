// Package catalog is countersign's Iceberg REST catalog front: countersign
// serves the catalog API on its own listener by forwarding the routes of
// Iceberg's REST spec to the upstream catalog, and turns the catalog's
// table answers into remote-signing ones, so that engines get per-object
// signing, policy and audit from a catalog that implements none of them.
//
// What the front does, and why, is docs/design.md, "Catalog front":
//
//   - route.go: every request-target is parsed once, in one canonical
//     spelling, into a typed Route of the spec's operations; any other
//     spelling is refused, other paths are 404, and countersign's own
//     sign and credentials routes are never forwarded.
//   - forward.go: the upstream request is built from the Route (method,
//     path, query, body, the caller's Authorization) and sent only to the
//     configured upstream, under limits and timeouts; answers are read and
//     cleaned unless their schema cannot carry a credential.
//   - body.go, budget.go: request bodies stream unless the front must read
//     them, and the bodies and answers it reads share byte budgets.
//   - rewrite.go, credentials.go: table answers get remote signing on in
//     every form clients read; config keys pass by an allow-list, and
//     vended credentials only where the policy allows vending (Vendor,
//     vending.go).
//   - tablechange.go, known.go: locations only narrow the operator's; a
//     location change through the front is refused, and a location that
//     contains or lies inside another known table's is refused.
//   - locations.go: each table's location, remembered from the catalog's
//     answers per caller and fetched with the caller's token when unknown,
//     for the policy's table.location.
//   - refusals.go: every refusal the front makes itself is an audit record.
//   - separator.go: the namespace separator from the upstream's
//     /v1/config.
package catalog
