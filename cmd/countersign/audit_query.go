package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	iofs "io/fs"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/countersign/countersign/audit"
	"github.com/countersign/countersign/audit/upload"
)

// runAuditQuery implements `countersign audit query`.
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
