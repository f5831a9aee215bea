// Package catalog is countersign's Iceberg REST catalog front: countersign
// serves the catalog API on its own listener by forwarding every route it
// does not own to the upstream catalog, and turns the catalog's table
// answers into remote-signing ones, so that engines get per-object
// signing, policy and audit from a catalog that implements none of them.
//
// What the front does, and why, is docs/design.md, "Catalog front":
//
//   - forward.go: every route countersign does not own goes to the
//     upstream unchanged (method, path, query, body, headers with the
//     caller's Authorization, status, error bodies), streamed, under
//     limits and timeouts; an upstream that is down or slow is a 502 or
//     504 in Iceberg's error model.
//   - paths.go: which Iceberg REST route a path is, and so what the front
//     does with its answer.
//   - rewrite.go, credentials.go: loadTable, createTable and
//     registerTable answers get remote signing on in every form clients
//     read, and lose vended credentials unless the policy allows vending
//     for the table (Vendor).
//   - locations.go: each table's location, remembered from the catalog's
//     answers per caller and fetched with the caller's token when unknown,
//     for the policy's table.location.
//   - separator.go: the namespace separator from the upstream's
//     /v1/config.
package catalog
