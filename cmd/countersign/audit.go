package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/countersign/countersign/audit"
	"golang.org/x/mod/sumdb/note"
)

// auditUsage is the `countersign audit` help, and its lines for the
// top-level usage.
const auditUsage = `Usage:
  countersign audit verify [-dir DIR] -pubkey FILE|-pubkey-text KEY [-partial] [-trusted FILE]... [-export OUT]
      Check the audit log in DIR: seq continuity, every record, the Merkle
      tree against every signed checkpoint, checkpoint signatures and
      consistency, segment seals. Names the first bad record (file, line,
      seq) and exits 1. What a crash or a full disk leaves at the end (a
      torn last line, a segment whose creation failed) is listed as an
      artefact, not tampering, and exits 0. -pubkey/-pubkey-text may
      repeat (rotated keys). With -export, also check that export: each
      sealed segment's file holds exactly its records (seq, leaf hash and
      every column), no row missing or extra.

  countersign audit query [-dir DIR] [-principal P] [-key K | -key-prefix KP] [-bucket B]
                          [-since T] [-until T] [-decision D] [-kind K]
                          [-format jsonl|table] [-distinct principal|object]
      Records matching every filter, in order. T is RFC 3339, a date
      (2026-11-30, UTC) or a duration ago (24h). Examples:
        every object P touched:   -principal P -since T1 -until T2 -distinct object
        every principal of K:     -bucket B -key K -distinct principal

  countersign audit fleet verify [-config FILE] [-root DIR]... [-dir NODE=DIR]...
                                 -pubkey FILE|-pubkey-text KEY [-versions=false] [-parallel N]
      Verify every node's log at once: the audit bucket of FILE's
      audit.upload (every <node_id>/ under it), directories laid out like
      it (-root) and nodes' own audit directories (-dir). Each node is
      verified as audit verify does (its checkpoint chain and tree, gaps,
      missing segments), in parallel, and every file with several copies
      (a local one and an uploaded one, or several object versions in an
      Object Lock bucket) must be the same: a checkpoints file signed two
      ways is a fork. Every problem is named with its node and segment.

  countersign audit fleet query [-config FILE] [-root DIR]... [-dir NODE=DIR]... [audit query's flags]
      audit query over every node, merged in time order, the node on every
      line (-format table adds a NODE column; -distinct lists the nodes).

  countersign audit export [-dir DIR] [-out DIR]
      Write every sealed segment as Parquet for SQL engines, one file per
      segment: OUT/node=<id>/day=<YYYY-MM-DD>/seg-<first seq>.parquet (the
      day of its first record), a row per record with seq, node and its
      Merkle leaf hash. The open segment is skipped; files already there
      are kept. "audit verify -export OUT" checks an export.

  countersign audit proof [-dir DIR] -id EVENTID [-size N]
      Print the inclusion proof (JSON) of one record against the newest
      checkpoint (or the one of size N).

  countersign audit verify-proof -pubkey FILE|-pubkey-text KEY [FILE|-]
      Check an inclusion proof printed by "audit proof".

  countersign audit generate -out DIR -keys KEYDIR [-nodes N | -node ID,...] [-records N]
                             [-seed S] [-start T] [-span D] [-upload CONFIG]
      Write a realistic multi-node log for measuring the tools at scale
      (not for production): DIR/<node>/ per node, the audit bucket's layout,
      a month of simulated requests through the real log (records, tree,
      signed checkpoints, seals). An existing node log is continued. With
      -upload, each node's sealed segments are uploaded as the server does.

  countersign audit keygen -name NAME -out DIR
      Write a checkpoint signing key (DIR/checkpoint.key, 0600), its
      verifier key (DIR/checkpoint.pub) and a token HMAC key
      (DIR/hmac.key, 0600): audit.checkpoint_key_file, audit.hmac_key_file.

  countersign audit pubkey -key FILE
      Print the verifier key of a checkpoint signing key.
`

// runAudit implements `countersign audit ...`.
func runAudit(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return commands{prog: "countersign audit", usage: auditUsage, table: map[string]command{
		"verify":       runAuditVerify,
		"query":        runAuditQuery,
		"export":       runAuditExport,
		"proof":        runAuditProof,
		"verify-proof": runAuditVerifyProof,
		"keygen":       runAuditKeygen,
		"generate":     runAuditGenerate,
		"fleet":        runAuditFleet,
		"pubkey":       runAuditPubkey,
	}}.run(ctx, args, stdout, stderr)
}

// auditVerifierFlags are -pubkey FILE and -pubkey-text KEY, both repeatable.
type auditVerifierFlags struct{ files, texts stringList }

func (v *auditVerifierFlags) register(fs *flag.FlagSet) {
	fs.Var(&v.files, "pubkey", "file of checkpoint verifier keys, one per line (repeatable)")
	fs.Var(&v.texts, "pubkey-text", "a checkpoint verifier key (repeatable)")
}

func (v *auditVerifierFlags) load() (note.Verifiers, error) {
	keys := slices.Clone([]string(v.texts))
	for _, f := range v.files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		if _, err := audit.ParseVerifiers(string(b)); err != nil {
			return nil, fmt.Errorf("-pubkey %s: %w", f, err)
		}
		keys = append(keys, string(b))
	}
	if len(keys) == 0 {
		return nil, errors.New("give the checkpoint verifier key: -pubkey FILE or -pubkey-text KEY (from countersign audit pubkey; keep it outside the audit dir)")
	}
	return audit.ParseVerifiers(keys...)
}

func auditFlagSet(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage of countersign %s (see countersign audit help):\n", name)
		fs.PrintDefaults()
	}
	return fs
}

// auditParseFlags parses flags and refuses stray arguments.
func auditParseFlags(fs *flag.FlagSet, args []string, stderr io.Writer, maxArgs int) bool {
	if err := fs.Parse(args); err != nil {
		return false
	}
	if fs.NArg() > maxArgs {
		fmt.Fprintf(stderr, "countersign %s: unexpected argument %q\n", fs.Name(), fs.Arg(maxArgs))
		return false
	}
	return true
}
