package main

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"time"

	"github.com/countersign/countersign/audit"
	"github.com/countersign/countersign/audit/export"
)

func runAuditExport(_ context.Context, args []string, stdout, stderr io.Writer) int {
	fs := auditFlagSet("audit export", stderr)
	dir := fs.String("dir", ".", "audit log directory (audit.dir)")
	out := fs.String("out", "audit-export", "directory to write node=<id>/day=<date>/seg-<first seq>.parquet under")
	if !auditParseFlags(fs, args, stderr, 0) {
		return 2
	}
	fsys, err := audit.DirFS(*dir)
	if err != nil {
		fmt.Fprintln(stderr, "countersign audit export:", err)
		return 2
	}
	start := time.Now()
	res, err := export.Export(fsys, *out)
	if res != nil {
		records := 0
		for _, f := range res.Written {
			fmt.Fprintf(stdout, "wrote %s (%s, %d records)\n", f.Path, f.State, f.Records)
			records += f.Records
		}
		for _, name := range res.Open {
			fmt.Fprintf(stdout, "skipped %s: not sealed yet (still written); the next export after it is sealed writes it\n", name)
		}
		if err == nil {
			elapsed := time.Since(start)
			fmt.Fprintf(stdout, "ok: %d records in %d new files, %d files already exported, into %s (%v, %.0f records/s)\n",
				records, len(res.Written), len(res.Existing), *out, elapsed.Round(time.Millisecond), float64(records)/elapsed.Seconds())
		}
	}
	if err != nil {
		fmt.Fprintln(stderr, "countersign audit export:", err)
		return 1
	}
	return 0
}

// auditCheckExport is audit verify's -export: the export in out against
// the log in fsys (which audit.Verify has just passed).
func auditCheckExport(fsys fs.FS, out string, stdout io.Writer) int {
	res, err := export.Check(fsys, out)
	if err != nil {
		fmt.Fprintln(stdout, "FAIL: export:", err)
		return 1
	}
	for _, p := range res.Problems {
		fmt.Fprintln(stdout, "FAIL: export:", p)
	}
	if len(res.Problems) > 0 {
		fmt.Fprintf(stdout, "the export in %s does not match the log: export again into an empty directory (countersign audit export -out DIR)\n", out)
		return 1
	}
	fmt.Fprintf(stdout, "ok: export %s: %d files, %d rows, each the record with its seq and leaf hash; %d open segments not exported\n",
		out, res.Files, res.Rows, len(res.Open))
	if len(res.Earlier) > 0 {
		fmt.Fprintf(stdout, "note: %d files of segments before this log's first were not checked (uploaded and removed here? check with -config and -source both)\n", len(res.Earlier))
	}
	return 0
}
