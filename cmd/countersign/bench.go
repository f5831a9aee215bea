package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/countersign/countersign/audit"
	"github.com/countersign/countersign/bench"
)

const benchUsage = `Usage:
  countersign bench [flags]                   load a running countersign with an Iceberg scan's sign requests
  countersign bench gen-grants -out DIR [...] write a policy with a generated grants document, and configs to serve it

The load only goes to -url (and -floor-url), which must be loopback
addresses unless -allow-remote is set. Each run stops by itself: after
-scans scans (default 1), -requests requests or -duration, whichever
comes first of those set.

Tokens: -token, -token-file (one per line), or -hs256-secret (or -config
with auth.hs256_secret) to mint one token per -principals for serve's
development HS256 mode.

With -floor-url (a countersign started with serve
-` + cannedFlagName + `)
the same workload runs alternately against the floor and the full path,
-rounds times, and the report gives the full/floor ratios and checks the
targets (docs/design.md, Targets).

Flags:
`

// runBench is "countersign bench".
func runBench(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "gen-grants" {
		return runGenGrants(args[1:], stdout, stderr)
	}
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, benchUsage)
		fs.PrintDefaults()
	}
	w := bench.DefaultWorkload()
	var (
		target      = fs.String("url", "", "countersign's base URL (default http://127.0.0.1:8181, or from -config's listen)")
		floorURL    = fs.String("floor-url", "", "base URL of a canned-response countersign: alternate floor and full runs and compare")
		metricsURL  = fs.String("metrics-url", "", "the full target's /metrics (default URL/metrics; \"-\": do not scrape)")
		floorMetURL = fs.String("floor-metrics-url", "", "the floor's /metrics (default FLOOR-URL/metrics; \"-\": do not scrape)")
		alsoURL     = fs.String("also-url", "", "base URL of another full countersign (e.g. with credentials.per_principal) run in every round after the full target, compared with the floor too")
		alsoName    = fs.String("also-name", "sessions", "report name of -also-url's target")
		alsoMetURL  = fs.String("also-metrics-url", "", "-also-url's /metrics (default ALSO-URL/metrics; \"-\": do not scrape)")
		allowRemote = fs.Bool("allow-remote", false, "allow a URL that is not a loopback address")
		configPath  = fs.String("config", "", "countersign YAML config the server runs with: default -url from listen, token claims and secret from auth")

		token      = fs.String("token", "", "bearer token for every request")
		tokenFile  = fs.String("token-file", "", "file of bearer tokens, one per line; requests are spread over them")
		secret     = fs.String("hs256-secret", "", "mint tokens with this HS256 secret (serve's development auth.hs256_secret)")
		principals = fs.Int("principals", 1, "number of principals (tokens) to mint")
		groups     = fs.Int("groups", 100, "minted principal i is in group bench-g<i % groups> (as gen-grants writes them)")
		issuer     = fs.String("issuer", "", "iss of minted tokens (default countersign-dev, or -config's auth.issuer)")
		audience   = fs.String("audience", "", "aud of minted tokens, comma-separated (default countersign, or -config's auth.audience)")

		conc        = fs.Int("c", 64, "concurrent connections, one request in flight each")
		duration    = fs.Duration("duration", 0, "stop each run after this long")
		requests    = fs.Int64("requests", 0, "stop each run after this many requests")
		scans       = fs.Int("scans", 0, "stop each run after this many complete scans (default 1 when neither -duration nor -requests is set)")
		rounds      = fs.Int("rounds", 0, "rounds of runs (default 3 with -floor-url, else 1)")
		warmup      = fs.Duration("warmup", 2*time.Second, "warm each target up this long before the first round (connections, token cache)")
		timeout     = fs.Duration("timeout", 10*time.Second, "timeout of one request")
		verifyEvery = fs.Int("verify-every", 1000, "decode and check one response in this many against its request (<0: never)")
		jsonOut     = fs.String("json", "", "also write the report as JSON to this file")
		noProgress  = fs.Bool("no-progress", false, "no progress bar (it is drawn only when stdout is a terminal)")
	)
	fs.StringVar(&w.Endpoint, "s3-endpoint", w.Endpoint, "S3 endpoint the signed requests are for (must be in countersign's endpoints)")
	fs.BoolVar(&w.PathStyle, "path-style", w.PathStyle, "path-style addressing (false: bucket as a sub-domain of the endpoint)")
	fs.StringVar(&w.Region, "region", w.Region, "region")
	fs.StringVar(&w.Bucket, "bucket", w.Bucket, "bucket")
	fs.StringVar(&w.Warehouse, "warehouse", w.Warehouse, "warehouse key prefix")
	fs.StringVar(&w.Namespace, "namespace", w.Namespace, "namespace: tables are at s3://BUCKET/WAREHOUSE/NAMESPACE/t<i>/")
	fs.IntVar(&w.Tables, "tables", w.Tables, "tables the files are spread over")
	fs.IntVar(&w.Files, "files", w.Files, "data files per scan")
	fs.IntVar(&w.Partitions, "partitions", w.Partitions, "day=... partition directories per table (0: none)")
	fs.IntVar(&w.ReadsPerFile, "reads-per-file", w.ReadsPerFile, "ranged column reads per file, after its footer read")
	fs.IntVar(&w.HeadsPerFile, "heads-per-file", w.HeadsPerFile, "HEADs per file")
	fs.IntVar(&w.Writes, "writes", w.Writes, "multipart uploads per scan")
	fs.IntVar(&w.PartsPerWrite, "parts-per-write", w.PartsPerWrite, "parts per multipart upload")
	fs.IntVar(&w.Deletes, "deletes", w.Deletes, "DeleteObjects requests per scan")
	fs.IntVar(&w.KeysPerDelete, "keys-per-delete", w.KeysPerDelete, "keys per DeleteObjects")
	fs.BoolVar(&w.ContentSHA256, "content-sha256", w.ContentSHA256, "send x-amz-content-sha256: UNSIGNED-PAYLOAD (the Java client sends none)")
	fs.StringVar(&w.Route, "route", w.Route, "sign route: legacy (/v1/aws/s3/sign) or table (/v1/{prefix}/namespaces/{ns}/tables/{t}/sign)")
	fs.StringVar(&w.CatalogPrefix, "catalog-prefix", w.CatalogPrefix, "{prefix} of the per-table route")
	fs.Uint64Var(&w.Seed, "seed", w.Seed, "seed of file names, sizes and ranges")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "countersign bench: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	fail := func(err error) int {
		fmt.Fprintln(stderr, "countersign bench:", err)
		return 1
	}

	// Defaults from the server's config, then flags.
	iss, aud := devIssuer, []string{devAudience}
	if *configPath != "" {
		cfg, err := loadConfig(*configPath, devConfig())
		if err != nil {
			return fail(err)
		}
		if *target == "" && cfg.Listen != "" {
			*target = "http://" + cfg.Listen
		}
		if cfg.Auth.Issuer != "" {
			iss = cfg.Auth.Issuer
		}
		if len(cfg.Auth.Audience) > 0 {
			aud = cfg.Auth.Audience
		}
		if *secret == "" {
			*secret = cfg.Auth.HS256Secret
		}
	}
	if *target == "" {
		*target = "http://127.0.0.1:8181"
	}
	if *issuer != "" {
		iss = *issuer
	}
	if *audience != "" {
		aud = strings.Split(*audience, ",")
	}
	if *conc < 1 {
		return fail(errors.New("-c must be at least 1"))
	}
	if *duration <= 0 && *requests <= 0 && *scans <= 0 {
		*scans = 1
	}
	if *rounds <= 0 {
		*rounds = 1
		if *floorURL != "" {
			*rounds = 3
		}
	}

	var tokens []string
	switch {
	case *token != "":
		tokens = []string{*token}
	case *tokenFile != "":
		var err error
		if tokens, err = bench.ReadTokenFile(*tokenFile); err != nil {
			return fail(err)
		}
	case *secret != "":
		ttl := 2*time.Hour + time.Duration(*rounds*2)*(*duration+*warmup)
		var err error
		tokens, err = bench.MintHS256(bench.MintOptions{Secret: *secret, Issuer: iss, Audience: aud, Principals: *principals, Groups: *groups, TTL: ttl})
		if err != nil {
			return fail(err)
		}
	default:
		return fail(errors.New("no bearer token: use -token, -token-file, -hs256-secret or -config with auth.hs256_secret"))
	}
	w.Principals = len(tokens)

	full := bench.Target{Name: "full", URL: *target, MetricsURL: *metricsURL}
	targets := []bench.Target{full}
	if *floorURL != "" {
		targets = []bench.Target{{Name: "floor", URL: *floorURL, MetricsURL: *floorMetURL}, full}
	}
	if *alsoURL != "" {
		if *alsoName == "" || *alsoName == "full" || *alsoName == "floor" {
			return fail(fmt.Errorf("-also-name %q must name a third target (not full or floor)", *alsoName))
		}
		targets = append(targets, bench.Target{Name: *alsoName, URL: *alsoURL, MetricsURL: *alsoMetURL})
	}
	if !*allowRemote {
		for _, t := range targets {
			if err := bench.CheckLoopback(t.URL); err != nil {
				return fail(err)
			}
		}
	}
	plan, err := bench.NewPlan(w)
	if err != nil {
		return fail(err)
	}

	opts := bench.RunOptions{
		Plan: plan, Tokens: tokens, Concurrency: *conc,
		Duration: *duration, Requests: *requests, Scans: *scans,
		Timeout: *timeout, VerifyEvery: *verifyEvery, AllowRemote: *allowRemote,
	}
	if !*noProgress && bench.IsTerminal(stdout) {
		opts.Progress = stdout
	}
	rep := &bench.Report{
		Version: 1, Started: time.Now().UTC(), Machine: bench.ThisMachine(), Workload: w,
		RequestsPerScan: plan.Len(), ObjectsPerScan: plan.Objects(),
		Concurrency: *conc, Tokens: len(tokens), Stop: stopString(*duration, *requests, *scans),
	}
	fmt.Fprintf(stdout, "countersign bench: %d sign requests per scan, %d connections, %d token(s); targets: %s\n",
		plan.Len(), *conc, len(tokens), targetList(targets))

	if *warmup > 0 {
		for _, t := range targets {
			wo := opts
			wo.Duration, wo.Requests, wo.Scans, wo.NoScrape, wo.Progress, wo.Seed = *warmup, 0, 0, true, nil, 1<<32
			r, err := bench.Run(ctx, t, wo)
			if err != nil {
				return fail(fmt.Errorf("warming up %s: %w", t.URL, err))
			}
			if r.OK == 0 {
				return fail(fmt.Errorf("warming up %s: no request succeeded (%s); first error: %s", t.URL, errorSummary(r.Errors), firstSample(r)))
			}
		}
	}

	interrupted := false
	for round := 1; round <= *rounds && !interrupted; round++ {
		for _, t := range targets {
			o := opts
			o.Seed = uint64(round)<<8 | uint64(len(rep.Runs))
			r, err := bench.Run(ctx, t, o)
			if r != nil {
				r.Round = round
				rep.Runs = append(rep.Runs, r)
				fmt.Fprintf(stdout, "round %d %-5s %8.0f req/s  p50 %.2f ms  p99 %.2f ms  max %.2f ms  %d requests  %s\n",
					round, t.Name, r.OKPerSec, r.Latency.P50, r.Latency.P99, r.Latency.Max, r.Requests, errorSummary(r.Errors))
			}
			if err != nil {
				if ctx.Err() != nil {
					interrupted = true
					break
				}
				return fail(err)
			}
		}
	}
	rep.Finish()
	fmt.Fprintln(stdout)
	rep.Print(stdout)
	if *jsonOut != "" {
		b, err := json.MarshalIndent(rep, "", "  ")
		if err != nil {
			return fail(err)
		}
		if err := os.WriteFile(*jsonOut, append(b, '\n'), 0o644); err != nil {
			return fail(err)
		}
	}
	if interrupted {
		fmt.Fprintln(stderr, "countersign bench: interrupted; the report covers the runs that finished")
		return 1
	}
	return 0
}

func stopString(d time.Duration, requests int64, scans int) string {
	var parts []string
	if scans > 0 {
		parts = append(parts, fmt.Sprintf("%d scan(s)", scans))
	}
	if requests > 0 {
		parts = append(parts, fmt.Sprintf("%d requests", requests))
	}
	if d > 0 {
		parts = append(parts, d.String())
	}
	return strings.Join(parts, " or ")
}

func targetList(ts []bench.Target) string {
	s := make([]string, len(ts))
	for i, t := range ts {
		s[i] = t.Name + " " + t.URL
	}
	return strings.Join(s, ", ")
}

func errorSummary(m map[string]int64) string {
	if len(m) == 0 {
		return "no errors"
	}
	var parts []string
	for k, v := range m {
		parts = append(parts, k+":"+strconv.FormatInt(v, 10))
	}
	return "errors " + strings.Join(parts, " ")
}

func firstSample(r *bench.RunReport) string {
	for k, v := range r.ErrorSamples {
		return k + ": " + strings.TrimSpace(v)
	}
	return "none"
}

// runGenGrants is "countersign bench gen-grants": the realistic benchmark
// setup of docs/design.md, Targets — an example policy with a generated N-grant data
// document, audit keys, and two configs for serve -dev (the full path and,
// on another port, the canned-response floor).
func runGenGrants(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("bench gen-grants", flag.ContinueOnError)
	fs.SetOutput(stderr)
	w := bench.DefaultWorkload()
	n := fs.Int("n", 10000, "number of grants (group, bucket, access, prefix) in the data document")
	groups := fs.Int("groups", 100, "groups bench-g0 ... (every one gets read/write/delete/list on every bench table)")
	policyDir := fs.String("policy", "deploy/policies/combined", "example policy directory to copy, with the library beside it (../lib): their .rego files, not their tests")
	out := fs.String("out", "", "output directory (required)")
	listen := fs.String("listen", "127.0.0.1:8181", "listen address of full.yaml")
	floorListen := fs.String("floor-listen", "127.0.0.1:8182", "listen address of floor.yaml (serve it with -"+cannedFlagName+")")
	seed := fs.Uint64("seed", 1, "seed of the generated grants")
	fs.StringVar(&w.Bucket, "bucket", w.Bucket, "bucket of the bench tables")
	fs.StringVar(&w.Warehouse, "warehouse", w.Warehouse, "warehouse key prefix")
	fs.StringVar(&w.Namespace, "namespace", w.Namespace, "namespace of the bench tables")
	fs.IntVar(&w.Tables, "tables", w.Tables, "bench tables t0 ... (as countersign bench -tables)")
	fs.StringVar(&w.CatalogPrefix, "catalog-prefix", w.CatalogPrefix, "catalog prefix of the bench tables' per-table route")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if *out == "" || fs.NArg() > 0 {
		fmt.Fprintln(stderr, "usage: countersign bench gen-grants -out DIR [-n 10000] [-groups 100] [-tables 10] [-policy deploy/policies/combined]")
		return 2
	}
	fail := func(err error) int {
		fmt.Fprintln(stderr, "countersign bench gen-grants:", err)
		return 1
	}
	dir, err := filepath.Abs(*out)
	if err != nil {
		return fail(err)
	}
	count, err := bench.WritePolicy(*policyDir, filepath.Join(dir, "policy"), bench.GrantsOptions{Grants: *n, Groups: *groups, Workload: w, Seed: *seed})
	if err != nil {
		return fail(err)
	}
	keys := filepath.Join(dir, "keys")
	if err := os.MkdirAll(keys, 0o700); err != nil {
		return fail(err)
	}
	signerKey, verifierKey, hmacKey, err := audit.GenerateKeys("countersign-bench")
	if err != nil {
		return fail(err)
	}
	for name, content := range map[string]string{"checkpoint.key": signerKey, "checkpoint.pub": verifierKey, "hmac.key": hmacKey} {
		if err := os.WriteFile(filepath.Join(keys, name), []byte(content+"\n"), 0o600); err != nil {
			return fail(err)
		}
	}
	secret := randomHex(32)
	for _, c := range []struct{ file, listen, audit, note string }{
		{"full.yaml", *listen, "audit", "countersign serve -dev -config " + filepath.Join(dir, "full.yaml")},
		{"floor.yaml", *floorListen, "audit-floor", "countersign serve -dev -config " + filepath.Join(dir, "floor.yaml") + " -" + cannedFlagName},
	} {
		yaml := fmt.Sprintf(`# Written by "countersign bench gen-grants" for benchmarking only. Serve with:
#   %s
listen: %s
auth:
  issuer: countersign-bench
  audience: [countersign]
  hs256_secret: %q
policy:
  paths: [%q]
audit:
  dir: %q
  checkpoint_key_file: %q
  hmac_key_file: %q
`, c.note, c.listen, secret, filepath.Join(dir, "policy"), filepath.Join(dir, c.audit),
			filepath.Join(keys, "checkpoint.key"), filepath.Join(keys, "hmac.key"))
		if err := os.WriteFile(filepath.Join(dir, c.file), []byte(yaml), 0o600); err != nil {
			return fail(err)
		}
	}
	fmt.Fprintf(stdout, `wrote %s: policy %s with %d grants for %d groups on %d tables of s3://%s/
  serve:  countersign serve -dev -config %s
  floor:  countersign serve -dev -config %s -%s
  bench:  countersign bench -config %s -floor-url http://%s -groups %d
`, dir, *policyDir, count, *groups, w.Tables, w.Bucket,
		filepath.Join(dir, "full.yaml"), filepath.Join(dir, "floor.yaml"), cannedFlagName,
		filepath.Join(dir, "full.yaml"), *floorListen, *groups)
	return 0
}
