// Package generate writes realistic multi-node audit logs quickly, for
// measuring the audit tools at scale (countersign audit generate). It is
// not on the serving path. The logs are real: every record goes through
// audit.Log (the real encoder, Merkle tree, signed checkpoints, seals and
// segment rotation); only the clock is simulated (a month of requests in
// seconds) and fdatasync is skipped (the output is a fixture, not a log
// of record). Each node's log is written to <Out>/<node>/, which is the
// layout the audit uploader gives the audit bucket (<node_id>/seg-...).
package generate

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/countersign/countersign/audit"
)

// Options configures Run.
type Options struct {
	// Out is the directory that receives one log directory per node.
	Out string
	// Nodes are the node ids (default node-1, node-2, node-3).
	Nodes []string
	// Records is the number of access records, over all nodes (the log
	// adds its own lifecycle records: start, seals, heartbeats, stop).
	Records int
	// Seed makes the workload reproducible (record ids are drawn by the
	// log and differ between runs).
	Seed uint64
	// Start and Span are the simulated time range (default 2026-11-01,
	// 30 days). A node whose log exists already continues it: give a
	// Start after its last record.
	Start time.Time
	Span  time.Duration
	// People is the number of non-service principals (default 200).
	People int
	// Audit is the log configuration for every node: segment size and age
	// (default 24h: a month is about 30 segments per node, more when they
	// fill first), checkpoint interval (default 1 minute) and heartbeat
	// interval, all in simulated time. Dir and NodeID are set per node.
	Audit audit.Config
	// CheckpointKey and HMACKey are the log's keys (audit.Options).
	CheckpointKey string
	HMACKey       []byte
	// OnSeal, if set, is called for each sealed segment (the uploader's
	// Notify). It must not block.
	OnSeal func(node string, seg audit.SegmentInfo)
}

// NodeResult is what one node's run wrote.
type NodeResult struct {
	Node    string
	Dir     string
	Records int // access records appended
	Stats   audit.Stats
}

// DefaultNodes are the node ids without Options.Nodes.
var defaultNodes = []string{"node-1", "node-2", "node-3"}

// chunkMax bounds the records of one Append: they share one time, so a
// chunk also ends when the simulated time moves on by chunkSpan.
const (
	chunkMax  = 64
	chunkSpan = 100 * time.Millisecond
)

// Run writes every node's log, the nodes in parallel.
func Run(ctx context.Context, opts Options) ([]NodeResult, error) {
	if opts.Out == "" {
		return nil, errors.New("generate: no output directory")
	}
	if opts.Records < 1 {
		return nil, errors.New("generate: records must be at least 1")
	}
	if len(opts.Nodes) == 0 {
		opts.Nodes = defaultNodes
	}
	if opts.Start.IsZero() {
		opts.Start = time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	}
	if opts.Span <= 0 {
		opts.Span = 30 * 24 * time.Hour
	}
	if opts.People <= 0 {
		opts.People = 200
	}
	if opts.Audit.SegmentMaxAge == 0 {
		opts.Audit.SegmentMaxAge = 24 * time.Hour
	}
	if opts.Audit.CheckpointInterval == 0 {
		opts.Audit.CheckpointInterval = time.Minute
	}
	if opts.Audit.HeartbeatInterval == 0 {
		opts.Audit.HeartbeatInterval = 10 * time.Minute
	}
	res := make([]NodeResult, len(opts.Nodes))
	errs := make([]error, len(opts.Nodes))
	var wg sync.WaitGroup
	for i, node := range opts.Nodes {
		share := opts.Records / len(opts.Nodes)
		if i < opts.Records%len(opts.Nodes) {
			share++
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			res[i], errs[i] = runNode(ctx, opts, node, uint64(i), share)
		}()
	}
	wg.Wait()
	return res, errors.Join(errs...)
}

func runNode(ctx context.Context, opts Options, node string, index uint64, records int) (NodeResult, error) {
	res := NodeResult{Node: node, Dir: filepath.Join(opts.Out, node)}
	var clock atomic.Int64
	clock.Store(opts.Start.UnixNano())
	cfg := opts.Audit
	cfg.Dir, cfg.NodeID = res.Dir, node
	lopts := audit.Options{
		Now:           func() time.Time { return time.Unix(0, clock.Load()).UTC() },
		OpenFile:      openUnsynced,
		CheckpointKey: opts.CheckpointKey,
		HMACKey:       opts.HMACKey,
	}
	if opts.OnSeal != nil {
		lopts.OnSeal = func(seg audit.SegmentInfo) { opts.OnSeal(node, seg) }
	}
	l, err := audit.Open(cfg, lopts)
	if err != nil {
		return res, fmt.Errorf("node %s: %w", node, err)
	}
	s := newSim(opts.Seed*1000003+index, opts.People, opts.Start, opts.Span, records)
	rq := newRequester(node, s.principals)
	var chunk, next []*audit.Record
	var chunkAt time.Time
	flush := func() error {
		if len(chunk) == 0 {
			return nil
		}
		if t := chunkAt.UnixNano(); t > clock.Load() {
			clock.Store(t)
		}
		err := l.Append(ctx, chunk...)
		res.Records += len(chunk)
		chunk = chunk[:0]
		return err
	}
	for res.Records+len(chunk) < records && err == nil {
		j, at := s.step()
		next = rq.records(next[:0], s, j, at)
		if len(chunk) > 0 && (len(chunk)+len(next) > chunkMax || at.Sub(chunkAt) > chunkSpan) {
			err = flush()
		}
		if len(chunk) == 0 {
			chunkAt = at
		}
		if over := res.Records + len(chunk) + len(next) - records; over > 0 {
			next = next[:len(next)-over]
		}
		chunk = append(chunk, next...)
		if len(chunk) >= chunkMax {
			err = flush()
		}
	}
	if err == nil {
		err = flush()
	}
	res.Stats = l.Stats()
	if cerr := l.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return res, fmt.Errorf("node %s: %w", node, err)
	}
	return res, nil
}

// unsyncedFile is an audit.File whose Sync does nothing: the generator's
// output is a fixture, written at memory speed and left to the page cache.
type unsyncedFile struct{ *os.File }

func (unsyncedFile) Sync() error { return nil }

func openUnsynced(name string, flag int, perm os.FileMode) (audit.File, error) {
	f, err := os.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return unsyncedFile{f}, nil
}
