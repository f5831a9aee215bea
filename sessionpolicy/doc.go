// Package sessionpolicy turns a policy.Scope (what the OPA policy lets a
// principal reach in a bucket, from the scope compiler) into the IAM
// session policy of an STS AssumeRole: the store then enforces the
// policy's prefixes too (docs/design.md, "Scope compiler").
//
// The document is deterministic (the same scope gives the same bytes),
// compact, and at most Options.MaxBytes long: STS AssumeRole accepts at
// most 2,048 characters of plaintext JSON in its Policy parameter (the STS
// API reference, and aws-sdk-go-v2's sts.AssumeRoleInput.Policy). Only
// characters from U+0020 to U+00FF, tab, LF and CR may appear, so
// everything else is written as a JSON \u escape and a byte is a
// character. STS's separate packed-size limit (PackedPolicyTooLarge,
// session tags included) cannot be computed here: STS refuses the mint,
// and the caller fails closed.
//
// A document over the limit is coarsened by longest common prefixes:
// repeatedly, the two neighbouring prefixes (sorted, within one statement)
// with the longest common prefix are replaced by it, until the document
// fits. Coarsening only widens, so the document still covers the scope;
// when even one prefix per statement does not fit, Compile fails with an
// error naming the limit.
package sessionpolicy
