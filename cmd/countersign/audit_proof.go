package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/countersign/countersign/audit"
)

// runAuditProof implements `countersign audit proof`.
func runAuditProof(_ context.Context, args []string, stdout, stderr io.Writer) int {
	fs := auditFlagSet("audit proof", stderr)
	dir := fs.String("dir", ".", "audit log directory (audit.dir)")
	id := fs.String("id", "", "the record's event id (required)")
	size := fs.Int64("size", 0, "prove against the checkpoint of this tree size (default: the newest)")
	if !auditParseFlags(fs, args, stderr, 0) {
		return 2
	}
	if *id == "" {
		fmt.Fprintln(stderr, "countersign audit proof: -id EVENTID is required")
		return 2
	}
	fsys, err := audit.DirFS(*dir)
	if err != nil {
		fmt.Fprintln(stderr, "countersign audit proof:", err)
		return 2
	}
	p, err := audit.Prove(fsys, *id, *size)
	if err != nil {
		fmt.Fprintln(stderr, "countersign audit proof:", err)
		return 1
	}
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(p); err != nil {
		fmt.Fprintln(stderr, "countersign audit proof:", err)
		return 1
	}
	return 0
}

// runAuditVerifyProof implements `countersign audit verify-proof`.
func runAuditVerifyProof(_ context.Context, args []string, stdout, stderr io.Writer) int {
	fs := auditFlagSet("audit verify-proof", stderr)
	var vf auditVerifierFlags
	vf.register(fs)
	if !auditParseFlags(fs, args, stderr, 1) {
		return 2
	}
	verifiers, err := vf.load()
	if err != nil {
		fmt.Fprintln(stderr, "countersign audit verify-proof:", err)
		return 2
	}
	var data []byte
	if path := fs.Arg(0); path != "" && path != "-" {
		data, err = os.ReadFile(path)
	} else {
		data, err = io.ReadAll(os.Stdin)
	}
	if err != nil {
		fmt.Fprintln(stderr, "countersign audit verify-proof:", err)
		return 2
	}
	var p audit.Proof
	if err := json.Unmarshal(data, &p); err != nil {
		fmt.Fprintln(stderr, "countersign audit verify-proof: not a proof:", err)
		return 2
	}
	rec, cp, err := p.Check(verifiers)
	if err != nil {
		fmt.Fprintln(stdout, "FAIL:", err)
		return 1
	}
	fmt.Fprintf(stdout, "ok: record %s (seq %d) is in %s at tree size %d, checkpoint signed by %s\n",
		rec.ID, rec.Seq, cp.Origin, cp.Size, strings.Join(cp.Signers, ", "))
	fmt.Fprintln(stdout, p.Record)
	return 0
}
