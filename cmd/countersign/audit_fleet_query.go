package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/countersign/countersign/audit/fleet"
)

// runAuditFleetQuery implements `countersign audit fleet query`.
func runAuditFleetQuery(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := auditFlagSet("audit fleet query", stderr)
	var where auditFleetFlags
	where.register(fs)
	var qf auditQueryFlags
	qf.register(fs)
	if !auditParseFlags(fs, args, stderr, 0) {
		return 2
	}
	f, err := qf.filter(time.Now())
	if err != nil {
		fmt.Fprintln(stderr, "countersign audit fleet query:", err)
		return 2
	}
	nodes, _, _, _, err := where.nodes(ctx)
	if err != nil {
		fmt.Fprintln(stderr, "countersign audit fleet query:", err)
		return 2
	}
	p := qf.printer(stdout, true)
	start := time.Now()
	err = fleet.Query(ctx, nodes, f, qf.options(), func(h fleet.Hit) error {
		return p.add(h.Node, h.Record, h.Line)
	})
	if err != nil {
		fmt.Fprintln(stderr, "countersign audit fleet query:", err)
		return 1
	}
	p.finish()
	qf.printStats(stderr, time.Since(start))
	return 0
}
