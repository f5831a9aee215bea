// Package audit is countersign's audit log: one JSON line per object per
// decision (record.go, SCHEMA.md), durable before the signed answer leaves,
// tamper-evident, and readable by the tools (verify, query, proof).
//
// # Writing
//
// Open starts one writer goroutine; Append encodes the records on the
// caller's goroutine (hand-appended JSON, encode.go), queues them and
// blocks until the writer has written everything queued since its last
// batch in one pwrite(2) and made it durable with one fdatasync(2): group
// commit, with no timer and no delay (writer.go). Segment files are
// preallocated with zeros so that fdatasync flushes data only
// (prealloc.go). Append fails with ErrUnavailable while the log cannot
// write; callers answer 503 and sign nothing.
//
// # Files
//
// In audit.dir:
//
//	seg-<first seq, 20 digits>.jsonl        records, one per line, then unused zeros
//	seg-<first seq, 20 digits>.checkpoints  signed checkpoints, one JSON object per line
//	seg-<first seq, 20 digits>.index        a sealed segment's block index (index.go)
//	next.prealloc                           the next segment, being zero-filled
//	LOCK                                    flock: one writer per directory
//
// A segment is rotated when it reaches segment_max_bytes or
// segment_max_age, and at Close: it gets a "seal" record, its padding is
// dropped, and a checkpoint covers the seal. Sealed segments and their
// checkpoints files are final (ListSegments, Options.OnSeal) and can be
// uploaded; Verify, Query and Prove read any fs.FS, so a bucket can be
// verified the same way.
//
// # Tamper evidence
//
// Every line is a leaf of one RFC 6962 Merkle tree spanning all segments
// (seq = leaf index; golang.org/x/mod/sumdb/tlog). At least every
// checkpoint_interval while records arrive, at every seal, with every idle
// heartbeat and at Close, the writer signs the tree's size and root as a
// note (golang.org/x/mod/sumdb/note, Ed25519) with origin
// "countersign/<node>" (checkpoint.go). The writer keeps only the tree's
// right edge in memory, and each checkpoint entry stores it too, so
// startup reads one checkpoint and the records after it (tree.go).
//
// # Failures
//
// A failed write or fdatasync is never retried on the same file: the
// segment is abandoned, Healthy reports the cause, and every RetryInterval
// the writer tries to open a new segment, whose first record ("recover")
// names the abandoned segment and the number of its bytes that are the log
// (everything made durable before the failure). The failed batch was
// never acknowledged; its seqs are reused. Verify reads an abandoned
// segment up to that point and reports the rest as ignored (writer.go).
//
// After a crash, Open keeps a clean tail and seals it, or abandons a torn
// one the same way; segments are never truncated or rewritten to repair
// them (recovery.go).
package audit
