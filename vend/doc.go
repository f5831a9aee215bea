// Package vend is credential vending: temporary S3 credentials for
// everything under one prefix, for engines that cannot remote-sign
// (Trino, DuckDB, PyIceberg's PyArrow FileIO, native readers), minted
// under the same policy and audit log as countersign's signatures.
//
// A mint is decided like a signature, as its own operation (docs/design.md,
// "Credential vending"):
//
//   - The policy is asked, with operation "MintCredentials" and input.mint
//     {prefix, access, duration_seconds}, once per S3 access class the mint
//     needs (read; read and write for read-write). A denial refuses the
//     mint: this is where a policy marks data sign-only
//     (deploy/policies/lib/vending.rego).
//   - By default a mint is allowed only when every key under the prefix
//     would be allowed: the scope compiled from the policy for that
//     principal and access class must be exact (not the bucket-wide
//     fallback) and one of its grants must cover the whole prefix.
//   - The credentials' session policy is the compiled scope intersected
//     with the prefix; their lifetime is bounded by configuration and by
//     the caller's token.
//   - Every mint, allowed or refused, is one audit record (audit.Mint)
//     written before the answer: when it cannot be written, nothing is
//     handed out.
//
// The package consumes the scope compiler, the session-policy compiler and
// the STS minter through interfaces declared here, so it links neither OPA
// nor the AWS SDK; cmd/countersign wires the real ones.
package vend
