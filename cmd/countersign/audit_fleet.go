package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/countersign/countersign/audit"
	"github.com/countersign/countersign/audit/fleet"
	"github.com/countersign/countersign/audit/upload"
)

// runAuditFleet implements `countersign audit fleet verify|query`.
func runAuditFleet(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return commands{prog: "countersign audit fleet", usage: auditUsage, table: map[string]command{
		"verify": runAuditFleetVerify,
		"query":  runAuditFleetQuery,
	}}.run(ctx, args, stdout, stderr)
}

// auditFleetFlags say where the fleet's logs are: the audit bucket (from a
// configuration's audit.upload), local copies laid out like it, and nodes'
// own audit directories.
type auditFleetFlags struct {
	config string
	roots  stringList
	dirs   stringList
}

func (a *auditFleetFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&a.config, "config", "", "countersign configuration whose audit.upload names the audit bucket: every node under it")
	fs.Var(&a.roots, "root", "a directory laid out like the audit bucket, <node_id>/seg-... (repeatable)")
	fs.Var(&a.dirs, "dir", "NODE=DIR: a node's own audit directory, read before the bucket (repeatable)")
}

// bucketRoot is the key prefix under which every node uploads: the
// configured prefix without its last element ("node-1/" and "" give "",
// "prod/node-1/" gives "prod/").
func bucketRoot(prefix string) string {
	p := strings.TrimSuffix(prefix, "/")
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[:i+1]
	}
	return ""
}

// nodes discovers the fleet's nodes; client is the bucket's S3 client
// (nil without -config), for listing object versions.
func (a *auditFleetFlags) nodes(ctx context.Context) (nodes []fleet.Node, client *s3.Client, bucket, prefix string, err error) {
	var roots []fleet.Root
	if a.config != "" {
		cfg, err := loadConfig(a.config, Config{})
		if err != nil {
			return nil, nil, "", "", err
		}
		up := cfg.Audit.Upload
		if !up.Enabled() {
			return nil, nil, "", "", fmt.Errorf("%s has no audit.upload.bucket", a.config)
		}
		if err := up.Validate(); err != nil {
			return nil, nil, "", "", err
		}
		if client, err = upload.NewClient(ctx, up); err != nil {
			return nil, nil, "", "", err
		}
		bucket, prefix = up.Bucket, bucketRoot(up.Prefix)
		bfs, err := upload.BucketFS(ctx, client, bucket, prefix)
		if err != nil {
			return nil, nil, "", "", err
		}
		roots = append(roots, fleet.Root{Name: "s3://" + bucket + "/" + prefix, FS: bfs})
	}
	for _, r := range a.roots {
		fsys, err := audit.DirFS(r)
		if err != nil {
			return nil, nil, "", "", err
		}
		roots = append(roots, fleet.Root{Name: strings.TrimSuffix(r, "/") + "/", FS: fsys})
	}
	dirs := map[string][]fleet.Layer{}
	for _, d := range a.dirs {
		node, dir, ok := strings.Cut(d, "=")
		if !ok || node == "" || dir == "" {
			return nil, nil, "", "", fmt.Errorf("-dir %q: NODE=DIR", d)
		}
		fsys, err := audit.DirFS(dir)
		if err != nil {
			return nil, nil, "", "", err
		}
		dirs[node] = append(dirs[node], fleet.Layer{Name: strings.TrimSuffix(dir, "/") + "/", FS: fsys})
	}
	if len(roots) == 0 && len(dirs) == 0 {
		return nil, nil, "", "", fmt.Errorf("say where the logs are: -config (the audit bucket), -root DIR or -dir NODE=DIR")
	}
	nodes, err = fleet.Discover(roots, dirs)
	return nodes, client, bucket, prefix, err
}
