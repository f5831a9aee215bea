package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	iofs "io/fs"
	"slices"
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
	var qf auditQueryFlags
	qf.register(fs)
	if !auditParseFlags(fs, args, stderr, 0) {
		return 2
	}
	f, err := qf.filter(time.Now())
	if err != nil {
		fmt.Fprintln(stderr, "countersign audit query:", err)
		return 2
	}
	fsys, err := audit.DirFS(*dir)
	if err != nil {
		fmt.Fprintln(stderr, "countersign audit query:", err)
		return 2
	}
	p := qf.printer(stdout, false)
	start := time.Now()
	err = audit.QueryWith(ctx, fsys, f, qf.options(), func(r *audit.Record, line []byte) error {
		return p.add("", r, line)
	})
	if err != nil {
		fmt.Fprintln(stderr, "countersign audit query:", err)
		return 1
	}
	p.finish()
	qf.printStats(stderr, time.Since(start))
	return 0
}

// auditQueryFlags are the filter and output flags of audit query and
// audit fleet query.
type auditQueryFlags struct {
	f                                          audit.Filter
	since, until, decision, kind, format, dist string
	noIndex, stats                             bool
	st                                         audit.QueryStats
}

func (q *auditQueryFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&q.f.Principal, "principal", "", "principal id")
	fs.StringVar(&q.f.Key, "key", "", "object key, exactly")
	fs.StringVar(&q.f.KeyPrefix, "key-prefix", "", "object key prefix")
	fs.StringVar(&q.f.Bucket, "bucket", "", "bucket")
	fs.StringVar(&q.since, "since", "", "records at or after this time")
	fs.StringVar(&q.until, "until", "", "records before this time")
	fs.StringVar(&q.decision, "decision", "", "allow, deny, error, unauthenticated or malformed")
	fs.StringVar(&q.kind, "kind", "", "access or lifecycle")
	fs.StringVar(&q.format, "format", "jsonl", "jsonl (the records as stored) or table")
	fs.StringVar(&q.dist, "distinct", "", "principal or object: list each once, with count and first/last time")
	fs.BoolVar(&q.noIndex, "no-index", false, "scan every segment, ignoring segment indexes")
	fs.BoolVar(&q.stats, "stats", false, "print what the query read to stderr")
}

func (q *auditQueryFlags) options() audit.QueryOptions {
	return audit.QueryOptions{NoIndex: q.noIndex, Stats: &q.st}
}

// printStats writes -stats' line.
func (q *auditQueryFlags) printStats(stderr io.Writer, elapsed time.Duration) {
	s := q.st
	if s.Unreadable > 0 {
		fmt.Fprintf(stderr, "warning: lines that could match but are not readable records: %d; the results leave them out (run countersign audit verify)\n", s.Unreadable)
	}
	if !q.stats {
		return
	}
	fmt.Fprintf(stderr, "stats: %v, %d segments (%d through their index: %d of %d blocks read; %d skipped by time), %.1f MB of records read\n",
		elapsed.Round(time.Millisecond), s.Segments, s.Indexed, s.BlocksRead, s.Blocks, s.SegmentsSkipped, float64(s.BytesRead)/1e6)
}

// filter checks the flags and returns the filter.
func (q *auditQueryFlags) filter(now time.Time) (audit.Filter, error) {
	f := q.f
	if f.Key != "" && f.KeyPrefix != "" {
		return f, errors.New("-key and -key-prefix exclude each other")
	}
	var err error
	if f.Since, err = auditParseTime(q.since, now); err != nil {
		return f, errors.New("-since: " + err.Error())
	}
	if f.Until, err = auditParseTime(q.until, now); err != nil {
		return f, errors.New("-until: " + err.Error())
	}
	if !f.Since.IsZero() && !f.Until.IsZero() && !f.Since.Before(f.Until) {
		return f, fmt.Errorf("-since %s is not before -until %s: no record can match", q.since, q.until)
	}
	switch d := audit.Decision(q.decision); d {
	case "", audit.DecisionAllow, audit.DecisionDeny, audit.DecisionError, audit.DecisionUnauthenticated, audit.DecisionMalformed:
		f.Decision = d
	default:
		return f, fmt.Errorf("-decision %q: allow, deny, error, unauthenticated or malformed", q.decision)
	}
	switch k := audit.Kind(q.kind); k {
	case "", audit.KindAccess, audit.KindLifecycle:
		f.Kind = k
	default:
		return f, fmt.Errorf("-kind %q: access or lifecycle", q.kind)
	}
	if q.format != "jsonl" && q.format != "table" {
		return f, fmt.Errorf("-format %q: jsonl or table", q.format)
	}
	if q.dist != "" && q.dist != "principal" && q.dist != "object" {
		return f, fmt.Errorf("-distinct %q: principal or object", q.dist)
	}
	return f, nil
}

// auditQueryPrinter writes query results: the records, or with -distinct
// one line per principal or object.
type auditQueryPrinter struct {
	stdout   io.Writer
	tw       *tabwriter.Writer
	format   string
	distinct string
	fleet    bool // a NODE column, and the nodes of each distinct line
	groups   map[string]*auditSeen
	order    []string
}

type auditSeen struct {
	n           int
	first, last time.Time
	nodes       []string
}

func (q *auditQueryFlags) printer(stdout io.Writer, fleet bool) *auditQueryPrinter {
	p := &auditQueryPrinter{stdout: stdout, tw: tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0),
		format: q.format, distinct: q.dist, fleet: fleet, groups: map[string]*auditSeen{}}
	if p.format == "table" && p.distinct == "" {
		if fleet {
			fmt.Fprint(p.tw, "NODE\t")
		}
		fmt.Fprintln(p.tw, "TIME\tSEQ\tPRINCIPAL\tDECISION\tSTATUS\tOPERATION\tOBJECT")
	}
	return p
}

func (p *auditQueryPrinter) add(node string, r *audit.Record, line []byte) error {
	if p.distinct != "" {
		k := auditPrincipal(r)
		if p.distinct == "object" {
			k = auditObject(r)
		}
		g := p.groups[k]
		if g == nil {
			g = &auditSeen{first: r.Time}
			p.groups[k] = g
			p.order = append(p.order, k)
		}
		g.n++
		g.last = r.Time
		if node != "" && !slices.Contains(g.nodes, node) {
			g.nodes = append(g.nodes, node)
		}
		return nil
	}
	if p.format == "jsonl" {
		_, err := fmt.Fprintf(p.stdout, "%s\n", line)
		return err
	}
	op := r.Operation
	if r.Kind == audit.KindLifecycle {
		op = string(r.Event)
	}
	if p.fleet {
		fmt.Fprintf(p.tw, "%s\t", node)
	}
	_, err := fmt.Fprintf(p.tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\n", r.Time.Format(time.RFC3339Nano), r.Seq,
		auditPrincipal(r), r.Decision, auditStatus(r), op, auditObject(r))
	return err
}

func (p *auditQueryPrinter) finish() {
	if p.distinct != "" {
		if p.format == "jsonl" {
			for _, k := range p.order {
				g := p.groups[k]
				m := map[string]any{p.distinct: k, "records": g.n, "first": g.first, "last": g.last}
				if p.fleet {
					slices.Sort(g.nodes)
					m["nodes"] = g.nodes
				}
				b, _ := json.Marshal(m)
				fmt.Fprintf(p.stdout, "%s\n", b)
			}
			return
		}
		fmt.Fprintf(p.tw, "%s\tRECORDS\tFIRST\tLAST", strings.ToUpper(p.distinct))
		if p.fleet {
			fmt.Fprint(p.tw, "\tNODES")
		}
		fmt.Fprintln(p.tw)
		for _, k := range p.order {
			g := p.groups[k]
			fmt.Fprintf(p.tw, "%s\t%d\t%s\t%s", k, g.n, g.first.Format(time.RFC3339), g.last.Format(time.RFC3339))
			if p.fleet {
				slices.Sort(g.nodes)
				fmt.Fprintf(p.tw, "\t%s", strings.Join(g.nodes, ","))
			}
			fmt.Fprintln(p.tw)
		}
	}
	p.tw.Flush()
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
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t, err = time.Parse(time.DateOnly, s)
	}
	if err == nil {
		// The zero time would mean "no bound" to the filter.
		if t.Before(time.Unix(0, 0)) {
			return time.Time{}, fmt.Errorf("%q is before 1970: no record is that old", s)
		}
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
