package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/countersign/countersign/audit"
	"github.com/countersign/countersign/audit/generate"
	"github.com/countersign/countersign/audit/upload"
)

// runAuditGenerate implements `countersign audit generate`.
func runAuditGenerate(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := auditFlagSet("audit generate", stderr)
	out := fs.String("out", "", "directory to write one log per node into, <out>/<node>/ (required)")
	keys := fs.String("keys", "", "directory with checkpoint.key and hmac.key, from countersign audit keygen (required)")
	nodes := fs.Int("nodes", 3, "number of nodes, node-1 ... node-N")
	nodeList := fs.String("node", "", "comma-separated node ids instead of -nodes (e.g. node-2 to continue one node's log)")
	records := fs.Int("records", 100000, "access records over all nodes")
	seed := fs.Uint64("seed", 1, "workload seed")
	start := fs.String("start", "2026-11-01", "simulated start time (RFC 3339 or a date); a continued log needs a later one")
	span := fs.Duration("span", 30*24*time.Hour, "simulated time the records spread over")
	people := fs.Int("people", 200, "principals besides the 5 service principals")
	segBytes := fs.Int64("segment-max-bytes", 0, "audit.segment_max_bytes (default 64 MiB)")
	segAge := fs.Duration("segment-max-age", 24*time.Hour, "audit.segment_max_age, simulated")
	uploadConfig := fs.String("upload", "", "countersign configuration whose audit.upload names the bucket: upload each node's sealed segments there, as the server's uploader does")
	if !auditParseFlags(fs, args, stderr, 0) {
		return 2
	}
	usage := func(msg string) int {
		fmt.Fprintln(stderr, "countersign audit generate:", msg)
		return 2
	}
	if *out == "" || *keys == "" {
		return usage("-out and -keys are required (make keys with countersign audit keygen -name NAME -out DIR)")
	}
	switch {
	case *nodes < 1 && *nodeList == "":
		return usage(fmt.Sprintf("-nodes %d: at least 1", *nodes))
	case *records < 0:
		return usage(fmt.Sprintf("-records %d: not negative", *records))
	case *span <= 0:
		return usage(fmt.Sprintf("-span %v: positive", *span))
	case *people < 0:
		return usage(fmt.Sprintf("-people %d: not negative", *people))
	case *segBytes < 0:
		return usage(fmt.Sprintf("-segment-max-bytes %d: not negative (0: the default)", *segBytes))
	}
	signer, err := os.ReadFile(filepath.Join(*keys, "checkpoint.key"))
	if err != nil {
		return usage(err.Error())
	}
	hmacKey, err := os.ReadFile(filepath.Join(*keys, "hmac.key"))
	if err != nil {
		return usage(err.Error())
	}
	t0, err := auditParseTime(*start, time.Now())
	if err != nil {
		return usage("-start: " + err.Error())
	}
	opts := generate.Options{
		Out: *out, Records: *records, Seed: *seed, Start: t0, Span: *span, People: *people,
		Audit:         audit.Config{SegmentMaxBytes: *segBytes, SegmentMaxAge: *segAge},
		CheckpointKey: strings.TrimSpace(string(signer)),
		HMACKey:       []byte(strings.TrimSpace(string(hmacKey))),
	}
	if *nodeList != "" {
		opts.Nodes = strings.Split(*nodeList, ",")
	} else {
		for i := 1; i <= *nodes; i++ {
			opts.Nodes = append(opts.Nodes, fmt.Sprintf("node-%d", i))
		}
	}
	var up upload.Config
	if *uploadConfig != "" {
		cfg, err := loadConfig(*uploadConfig, Config{})
		if err != nil {
			return usage(err.Error())
		}
		if up = cfg.Audit.Upload; !up.Enabled() {
			return usage(*uploadConfig + " has no audit.upload.bucket")
		}
		if err := up.Validate(); err != nil {
			return usage(err.Error())
		}
		if up.Prefix != "" {
			return usage("audit.upload.prefix must be empty (each node then uploads under <node_id>/, the fleet layout)")
		}
	}
	var mu sync.Mutex
	sealed := map[string][]audit.SegmentInfo{}
	opts.OnSeal = func(node string, seg audit.SegmentInfo) {
		mu.Lock()
		sealed[node] = append(sealed[node], seg)
		mu.Unlock()
	}
	began := time.Now()
	res, err := generate.Run(ctx, opts)
	elapsed := time.Since(began)
	total := 0
	for _, r := range res {
		total += r.Records
		if r.Dir != "" {
			fmt.Fprintf(stdout, "%s: %d access records, tree size %d, in %s\n", r.Node, r.Records, r.Stats.TreeSize, r.Dir)
		}
	}
	if err != nil {
		fmt.Fprintln(stderr, "countersign audit generate:", err)
		return 1
	}
	fmt.Fprintf(stdout, "ok: %d access records over %d nodes in %v (%.0f records/s)\n", total, len(res), elapsed.Round(time.Millisecond), float64(total)/elapsed.Seconds())
	if *uploadConfig == "" {
		return 0
	}
	began = time.Now()
	for _, r := range res {
		u, err := upload.New(ctx, up, r.Dir, upload.Options{NodeID: r.Node})
		if err != nil {
			fmt.Fprintln(stderr, "countersign audit generate:", err)
			return 1
		}
		for _, seg := range sealed[r.Node] {
			u.Notify(seg)
		}
		err = u.Flush(ctx)
		u.Close()
		if err != nil {
			fmt.Fprintf(stderr, "countersign audit generate: uploading %s: %v\n", r.Node, err)
			return 1
		}
	}
	fmt.Fprintf(stdout, "ok: uploaded every node's sealed segments to s3://%s/<node>/ (%v)\n", up.Bucket, time.Since(began).Round(time.Millisecond))
	return 0
}
