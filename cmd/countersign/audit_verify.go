package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/countersign/countersign/audit"
	"github.com/countersign/countersign/audit/upload"
)

// runAuditVerify implements `countersign audit verify`.
func runAuditVerify(_ context.Context, args []string, stdout, stderr io.Writer) int {
	fs := auditFlagSet("audit verify", stderr)
	dir := fs.String("dir", ".", "audit log directory (audit.dir)")
	var vf auditVerifierFlags
	vf.register(fs)
	partial := fs.Bool("partial", false, "the log may start after seq 0 (earlier segments uploaded and removed)")
	origin := fs.String("origin", "", "the origin every checkpoint must have, e.g. countersign/node-1")
	var trusted stringList
	fs.Var(&trusted, "trusted", "a checkpoint note held outside the log (repeatable); the log must contain it")
	configPath := fs.String("config", "", "countersign configuration whose audit.upload names the bucket to read")
	source := fs.String("source", "local", "with -config: bucket (the uploaded segments) or both (bucket and -dir together)")
	node := fs.String("node", "", "with -config: the node whose uploads to read (default audit.node_id)")
	exportDir := fs.String("export", "", "also check the Parquet export in this directory (from audit export) against the log")
	if !auditParseFlags(fs, args, stderr, 0) {
		return 2
	}
	verifiers, err := vf.load()
	if err != nil {
		fmt.Fprintln(stderr, "countersign audit verify:", err)
		return 2
	}
	opts := audit.VerifyOptions{Verifiers: verifiers, Partial: *partial, Origin: *origin}
	for _, f := range trusted {
		b, err := os.ReadFile(f)
		if err != nil {
			fmt.Fprintln(stderr, "countersign audit verify:", err)
			return 2
		}
		opts.Trusted = append(opts.Trusted, b)
	}
	fsys, err := audit.DirFS(*dir)
	if err != nil && *source != "bucket" {
		fmt.Fprintln(stderr, "countersign audit verify:", err)
		return 2
	}
	if *source != "local" {
		bucket, err := auditBucketFS(*configPath, *node)
		if err != nil {
			fmt.Fprintln(stderr, "countersign audit verify:", err)
			return 2
		}
		switch *source {
		case "bucket":
			fsys = bucket
		case "both":
			fsys = upload.UnionFS(fsys, bucket)
		default:
			fmt.Fprintf(stderr, "countersign audit verify: -source must be local, bucket or both, not %q\n", *source)
			return 2
		}
	}
	start := time.Now()
	res, err := audit.Verify(fsys, opts)
	if res != nil {
		for _, w := range res.Warnings {
			fmt.Fprintln(stdout, "warning:", w)
		}
		for _, a := range res.Artefacts {
			fmt.Fprintln(stdout, "crash or disk-full artefact (not tampering):", a)
		}
	}
	if err != nil {
		fmt.Fprintln(stdout, "FAIL:", err)
		var ve *audit.VerifyError
		if errors.As(err, &ve) {
			fmt.Fprintln(stdout, "no crash or full disk leaves this: the log was altered, truncated or damaged")
		}
		return 1
	}
	fmt.Fprintf(stdout, "ok: %s: records %d..%d (%d) in %d segments, %d checkpoints verified, %d segment indexes rebuilt and equal (%v)\n",
		res.Origin, res.First, int64(res.Next)-1, res.Next-res.First, res.Segments, res.Checkpoints, res.Indexes, time.Since(start).Round(time.Millisecond))
	if l := res.Latest; l != nil {
		fmt.Fprintf(stdout, "latest checkpoint: size %d, root %s, signed by %s\n", l.Size, l.Root, strings.Join(l.Signers, ", "))
	}
	if res.Uncovered > 0 {
		fmt.Fprintf(stdout, "note: the last %d records are not yet covered by a checkpoint (a live or crashed log)\n", res.Uncovered)
	}
	for _, a := range res.Abandoned {
		fmt.Fprintf(stdout, "abandoned: %s after byte %d (%d bytes never acknowledged, ignored)\n", a.Name, a.ValidBytes, a.IgnoredBytes)
	}
	if *exportDir != "" {
		return auditCheckExport(fsys, *exportDir, stdout)
	}
	return 0
}
