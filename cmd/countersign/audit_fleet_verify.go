package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/countersign/countersign/audit/fleet"
)

// runAuditFleetVerify implements `countersign audit fleet verify`.
func runAuditFleetVerify(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := auditFlagSet("audit fleet verify", stderr)
	var where auditFleetFlags
	where.register(fs)
	var vf auditVerifierFlags
	vf.register(fs)
	partial := fs.Bool("partial", false, "node logs may start after seq 0")
	versions := fs.Bool("versions", true, "with -config: every version of every object must agree (a versioned, Object Lock bucket keeps them all)")
	parallel := fs.Int("parallel", 0, "nodes verified at once (default: all of them, up to 16)")
	if !auditParseFlags(fs, args, stderr, 0) {
		return 2
	}
	if *parallel < 0 || *parallel > 1024 {
		fmt.Fprintf(stderr, "countersign audit fleet verify: -parallel %d: 0 (all nodes, up to 16) to 1024\n", *parallel)
		return 2
	}
	verifiers, err := vf.load()
	if err != nil {
		fmt.Fprintln(stderr, "countersign audit fleet verify:", err)
		return 2
	}
	nodes, client, bucket, prefix, err := where.nodes(ctx)
	if err != nil {
		fmt.Fprintln(stderr, "countersign audit fleet verify:", err)
		return 2
	}
	opts := fleet.VerifyOptions{Verifiers: verifiers, Partial: *partial, Parallel: *parallel}
	if client != nil && *versions {
		opts.Versions = &fleet.S3Versions{Client: client, Bucket: bucket, Prefix: prefix}
	}
	start := time.Now()
	reports, err := fleet.Verify(ctx, nodes, opts)
	if err != nil {
		fmt.Fprintln(stderr, "countersign audit fleet verify:", err)
		return 1
	}
	failed := 0
	var records uint64
	for _, r := range reports {
		where := strings.Join(r.Layers, " + ")
		if r.Result != nil {
			for _, a := range r.Result.Artefacts {
				fmt.Fprintf(stdout, "%s: crash or disk-full artefact (not tampering): %s\n", r.Node, a)
			}
		}
		for _, c := range r.Conflicts {
			fmt.Fprintf(stdout, "FAIL %s: %s\n", r.Node, c)
		}
		if r.Err != nil {
			fmt.Fprintf(stdout, "FAIL %s: %v (in %s)\n", r.Node, r.Err, where)
		}
		if !r.OK() {
			failed++
			continue
		}
		res := r.Result
		records += res.Next - res.First
		fmt.Fprintf(stdout, "ok %s: records %d..%d in %d segments, %d checkpoints and %d indexes verified, latest size %d root %s (%s)\n",
			r.Node, res.First, int64(res.Next)-1, res.Segments, res.Checkpoints, res.Indexes, res.Latest.Size, res.Latest.Root, where)
		if res.Uncovered > 0 {
			fmt.Fprintf(stdout, "%s: note: the last %d records are not yet covered by a checkpoint\n", r.Node, res.Uncovered)
		}
	}
	if failed > 0 {
		fmt.Fprintf(stdout, "FAIL: %d of %d nodes: no crash or full disk leaves this: a log was altered, truncated, deleted in part or forked\n", failed, len(reports))
		return 1
	}
	fmt.Fprintf(stdout, "ok: %d nodes, %d records verified (%v)\n", len(reports), records, time.Since(start).Round(time.Millisecond))
	return 0
}
