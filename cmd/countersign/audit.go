package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	iofs "io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/countersign/countersign/audit"
	"github.com/countersign/countersign/audit/upload"
	"golang.org/x/mod/sumdb/note"
)

// auditUsage is the `countersign audit` help, and its lines for the
// top-level usage.
const auditUsage = `Usage:
  countersign audit verify [-dir DIR] -pubkey FILE|-pubkey-text KEY [-partial] [-trusted FILE]...
      Check the audit log in DIR: seq continuity, every record, the Merkle
      tree against every signed checkpoint, checkpoint signatures and
      consistency, segment seals. Names the first bad record (file, line,
      seq) and exits 1. What a crash or a full disk leaves at the end (a
      torn last line, a segment whose creation failed) is listed as an
      artefact, not tampering, and exits 0. -pubkey/-pubkey-text may
      repeat (rotated keys).

  countersign audit query [-dir DIR] [-principal P] [-key K | -key-prefix KP] [-bucket B]
                          [-since T] [-until T] [-decision D] [-kind K]
                          [-format jsonl|table] [-distinct principal|object]
      Records matching every filter, in order. T is RFC 3339, a date
      (2026-11-30, UTC) or a duration ago (24h). Examples:
        every object P touched:   -principal P -since T1 -until T2 -distinct object
        every principal of K:     -bucket B -key K -distinct principal

  countersign audit proof [-dir DIR] -id EVENTID [-size N]
      Print the inclusion proof (JSON) of one record against the newest
      checkpoint (or the one of size N).

  countersign audit verify-proof -pubkey FILE|-pubkey-text KEY [FILE|-]
      Check an inclusion proof printed by "audit proof".

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
		"proof":        runAuditProof,
		"verify-proof": runAuditVerifyProof,
		"keygen":       runAuditKeygen,
		"pubkey":       runAuditPubkey,
	}}.run(ctx, args, stdout, stderr)
}

// auditStrings is a repeatable string flag.
type auditStrings []string

func (s *auditStrings) String() string     { return strings.Join(*s, ",") }
func (s *auditStrings) Set(v string) error { *s = append(*s, v); return nil }

// auditVerifierFlags are -pubkey FILE and -pubkey-text KEY, both repeatable.
type auditVerifierFlags struct{ files, texts auditStrings }

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

func runAuditVerify(_ context.Context, args []string, stdout, stderr io.Writer) int {
	fs := auditFlagSet("audit verify", stderr)
	dir := fs.String("dir", ".", "audit log directory (audit.dir)")
	var vf auditVerifierFlags
	vf.register(fs)
	partial := fs.Bool("partial", false, "the log may start after seq 0 (earlier segments uploaded and removed)")
	origin := fs.String("origin", "", "the origin every checkpoint must have, e.g. countersign/node-1")
	var trusted auditStrings
	fs.Var(&trusted, "trusted", "a checkpoint note held outside the log (repeatable); the log must contain it")
	configPath := fs.String("config", "", "countersign configuration whose audit.upload names the bucket to read")
	source := fs.String("source", "local", "with -config: bucket (the uploaded segments) or both (bucket and -dir together)")
	node := fs.String("node", "", "with -config: the node whose uploads to read (default audit.node_id)")
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
	fmt.Fprintf(stdout, "ok: %s: records %d..%d (%d) in %d segments, %d checkpoints verified (%v)\n",
		res.Origin, res.First, int64(res.Next)-1, res.Next-res.First, res.Segments, res.Checkpoints, time.Since(start).Round(time.Millisecond))
	if l := res.Latest; l != nil {
		fmt.Fprintf(stdout, "latest checkpoint: size %d, root %s, signed by %s\n", l.Size, l.Root, strings.Join(l.Signers, ", "))
	}
	if res.Uncovered > 0 {
		fmt.Fprintf(stdout, "note: the last %d records are not yet covered by a checkpoint (a live or crashed log)\n", res.Uncovered)
	}
	for _, a := range res.Abandoned {
		fmt.Fprintf(stdout, "abandoned: %s after byte %d (%d bytes never acknowledged, ignored)\n", a.Name, a.ValidBytes, a.IgnoredBytes)
	}
	return 0
}

func runAuditQuery(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := auditFlagSet("audit query", stderr)
	dir := fs.String("dir", ".", "audit log directory (audit.dir)")
	var f audit.Filter
	fs.StringVar(&f.Principal, "principal", "", "principal id")
	fs.StringVar(&f.Key, "key", "", "object key, exactly")
	fs.StringVar(&f.KeyPrefix, "key-prefix", "", "object key prefix")
	fs.StringVar(&f.Bucket, "bucket", "", "bucket")
	since := fs.String("since", "", "records at or after this time")
	until := fs.String("until", "", "records before this time")
	decision := fs.String("decision", "", "allow, deny, error, unauthenticated or malformed")
	kind := fs.String("kind", "", "access or lifecycle")
	format := fs.String("format", "jsonl", "jsonl (the records as stored) or table")
	distinct := fs.String("distinct", "", "principal or object: list each once, with count and first/last time")
	if !auditParseFlags(fs, args, stderr, 0) {
		return 2
	}
	usage := func(msg string) int {
		fmt.Fprintln(stderr, "countersign audit query:", msg)
		return 2
	}
	if f.Key != "" && f.KeyPrefix != "" {
		return usage("-key and -key-prefix exclude each other")
	}
	now := time.Now()
	var err error
	if f.Since, err = auditParseTime(*since, now); err != nil {
		return usage("-since: " + err.Error())
	}
	if f.Until, err = auditParseTime(*until, now); err != nil {
		return usage("-until: " + err.Error())
	}
	switch d := audit.Decision(*decision); d {
	case "", audit.DecisionAllow, audit.DecisionDeny, audit.DecisionError, audit.DecisionUnauthenticated, audit.DecisionMalformed:
		f.Decision = d
	default:
		return usage(fmt.Sprintf("-decision %q: allow, deny, error, unauthenticated or malformed", *decision))
	}
	switch k := audit.Kind(*kind); k {
	case "", audit.KindAccess, audit.KindLifecycle:
		f.Kind = k
	default:
		return usage(fmt.Sprintf("-kind %q: access or lifecycle", *kind))
	}
	if *format != "jsonl" && *format != "table" {
		return usage(fmt.Sprintf("-format %q: jsonl or table", *format))
	}
	if *distinct != "" && *distinct != "principal" && *distinct != "object" {
		return usage(fmt.Sprintf("-distinct %q: principal or object", *distinct))
	}
	fsys, err := audit.DirFS(*dir)
	if err != nil {
		return usage(err.Error())
	}

	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	type seen struct {
		n           int
		first, last time.Time
	}
	groups := map[string]*seen{}
	var order []string
	if *format == "table" && *distinct == "" {
		fmt.Fprintln(tw, "TIME\tSEQ\tPRINCIPAL\tDECISION\tSTATUS\tOPERATION\tOBJECT")
	}
	n := 0
	err = audit.Query(ctx, fsys, f, func(r *audit.Record, line []byte) error {
		n++
		if *distinct != "" {
			k := auditPrincipal(r)
			if *distinct == "object" {
				k = auditObject(r)
			}
			g := groups[k]
			if g == nil {
				g = &seen{first: r.Time}
				groups[k] = g
				order = append(order, k)
			}
			g.n++
			g.last = r.Time
			return nil
		}
		if *format == "jsonl" {
			_, err := fmt.Fprintf(stdout, "%s\n", line)
			return err
		}
		op := r.Operation
		if r.Kind == audit.KindLifecycle {
			op = string(r.Event)
		}
		_, err := fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\n", r.Time.Format(time.RFC3339Nano), r.Seq,
			auditPrincipal(r), r.Decision, auditStatus(r), op, auditObject(r))
		return err
	})
	if err != nil {
		fmt.Fprintln(stderr, "countersign audit query:", err)
		return 1
	}
	if *distinct != "" {
		if *format == "jsonl" {
			for _, k := range order {
				g := groups[k]
				b, _ := json.Marshal(map[string]any{*distinct: k, "records": g.n, "first": g.first, "last": g.last})
				fmt.Fprintf(stdout, "%s\n", b)
			}
			return 0
		}
		fmt.Fprintf(tw, "%s\tRECORDS\tFIRST\tLAST\n", strings.ToUpper(*distinct))
		for _, k := range order {
			g := groups[k]
			fmt.Fprintf(tw, "%s\t%d\t%s\t%s\n", k, g.n, g.first.Format(time.RFC3339), g.last.Format(time.RFC3339))
		}
	}
	tw.Flush()
	return 0
}

func auditPrincipal(r *audit.Record) string {
	if r.Principal == nil {
		return "-"
	}
	return r.Principal.ID
}

func auditObject(r *audit.Record) string {
	switch {
	case r.Kind == audit.KindLifecycle:
		return "-"
	case r.Prefix != nil:
		return r.Bucket + "/" + *r.Prefix + "*"
	case r.Key != "" && r.VersionID != "":
		// One version is another object than the key's current one.
		return r.Bucket + "/" + r.Key + "?versionId=" + r.VersionID
	case r.Key != "":
		return r.Bucket + "/" + r.Key
	case r.Bucket != "":
		return r.Bucket
	}
	return "-"
}

func auditStatus(r *audit.Record) string {
	if r.Status == 0 {
		return "-"
	}
	return fmt.Sprint(r.Status)
}

// auditParseTime reads a time: RFC 3339, a date (UTC midnight), or a duration
// ago.
func auditParseTime(s string, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		return t, nil
	}
	if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		return now.Add(-d), nil
	}
	return time.Time{}, fmt.Errorf("%q: use RFC 3339 (2026-11-30T12:00:00Z), a date (2026-11-30) or a duration ago (24h)", s)
}

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

func runAuditKeygen(_ context.Context, args []string, stdout, stderr io.Writer) int {
	fs := auditFlagSet("audit keygen", stderr)
	name := fs.String("name", "", "key name shown in checkpoint signatures, e.g. countersign-audit-prod (required)")
	out := fs.String("out", "", "directory to write checkpoint.key, checkpoint.pub and hmac.key into (required)")
	if !auditParseFlags(fs, args, stderr, 0) {
		return 2
	}
	if *name == "" || *out == "" {
		fmt.Fprintln(stderr, "countersign audit keygen: -name and -out are required")
		return 2
	}
	skey, vkey, hkey, err := audit.GenerateKeys(*name)
	if err != nil {
		fmt.Fprintln(stderr, "countersign audit keygen:", err)
		return 2
	}
	if err := os.MkdirAll(*out, 0o700); err != nil {
		fmt.Fprintln(stderr, "countersign audit keygen:", err)
		return 1
	}
	files := []struct {
		name, data string
		mode       os.FileMode
	}{
		{"checkpoint.key", skey, 0o600},
		{"checkpoint.pub", vkey, 0o644},
		{"hmac.key", hkey, 0o600},
	}
	for _, f := range files {
		if _, err := os.Stat(filepath.Join(*out, f.name)); err == nil {
			fmt.Fprintf(stderr, "countersign audit keygen: %s exists; not overwriting a key\n", filepath.Join(*out, f.name))
			return 1
		}
	}
	for _, f := range files {
		path := filepath.Join(*out, f.name)
		fh, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, f.mode)
		if err == nil {
			_, err = fh.WriteString(f.data + "\n")
			if cerr := fh.Close(); err == nil {
				err = cerr
			}
		}
		if err != nil {
			fmt.Fprintln(stderr, "countersign audit keygen:", err)
			return 1
		}
	}
	fmt.Fprintf(stdout, "wrote %s (audit.checkpoint_key_file), %s (audit.hmac_key_file), %s\nverifier key: %s\n",
		filepath.Join(*out, "checkpoint.key"), filepath.Join(*out, "hmac.key"), filepath.Join(*out, "checkpoint.pub"), vkey)
	return 0
}

func runAuditPubkey(_ context.Context, args []string, stdout, stderr io.Writer) int {
	fs := auditFlagSet("audit pubkey", stderr)
	key := fs.String("key", "", "checkpoint signing key file (audit.checkpoint_key_file)")
	if !auditParseFlags(fs, args, stderr, 0) {
		return 2
	}
	if *key == "" {
		fmt.Fprintln(stderr, "countersign audit pubkey: -key FILE is required")
		return 2
	}
	b, err := os.ReadFile(*key)
	if err != nil {
		fmt.Fprintln(stderr, "countersign audit pubkey:", err)
		return 1
	}
	vkey, err := audit.VerifierKey(string(b))
	if err != nil {
		fmt.Fprintln(stderr, "countersign audit pubkey:", err)
		return 1
	}
	fmt.Fprintln(stdout, vkey)
	return 0
}

// auditBucketFS opens the uploaded log named by a configuration's
// audit.upload section, read-only.
func auditBucketFS(configPath, node string) (iofs.FS, error) {
	if configPath == "" {
		return nil, fmt.Errorf("-source bucket|both needs -config with an audit.upload section")
	}
	cfg, err := loadConfig(configPath, Config{})
	if err != nil {
		return nil, err
	}
	up := cfg.Audit.Upload
	if !up.Enabled() {
		return nil, fmt.Errorf("%s has no audit.upload.bucket", configPath)
	}
	if err := up.Validate(); err != nil {
		return nil, err
	}
	if node == "" {
		node = cfg.Audit.NodeID
	}
	if node == "" && up.Prefix == "" {
		return nil, fmt.Errorf("-node is required: %s sets neither audit.node_id nor audit.upload.prefix", configPath)
	}
	ctx := context.Background()
	client, err := upload.NewClient(ctx, up)
	if err != nil {
		return nil, err
	}
	return upload.BucketFS(ctx, client, up.Bucket, up.KeyPrefix(node))
}
