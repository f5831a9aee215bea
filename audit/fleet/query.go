package fleet

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"sync"

	"github.com/countersign/countersign/audit"
	"github.com/countersign/countersign/audit/upload"
)

// Hit is one matching record and the node whose log holds it.
type Hit struct {
	Node   string
	Record *audit.Record
	Line   []byte
}

// hitBuffer is how far one node's scan may run ahead of the merge.
const hitBuffer = 1024

// Query runs audit.Query with f on every node's log at once and calls fn
// with the matching records of all nodes merged in time order (ties by
// node id, then seq), so fn sees the fleet's records as one timeline. fn
// is called from one goroutine. It stops at the first error (a node's
// log unreadable, ctx done, or fn's).
func Query(ctx context.Context, nodes []Node, f audit.Filter, opts audit.QueryOptions, fn func(Hit) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type stream struct {
		ch   chan Hit
		err  error
		head Hit
		ok   bool
	}
	streams := make([]*stream, len(nodes))
	stats := make([]audit.QueryStats, len(nodes))
	if total := opts.Stats; total != nil {
		defer func() {
			for _, s := range stats {
				total.Segments += s.Segments
				total.Indexed += s.Indexed
				total.Blocks += s.Blocks
				total.BlocksRead += s.BlocksRead
				total.BytesRead += s.BytesRead
				total.SegmentsSkipped += s.SegmentsSkipped
				total.Unreadable += s.Unreadable
			}
		}()
	}
	var wg sync.WaitGroup
	for i, n := range nodes {
		s := &stream{ch: make(chan Hit, hitBuffer)}
		streams[i] = s
		nopts := opts
		nopts.Stats = &stats[i]
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer close(s.ch)
			s.err = audit.QueryWith(ctx, nodeFS(n), f, nopts, func(rec *audit.Record, line []byte) error {
				select {
				case s.ch <- Hit{Node: n.ID, Record: rec, Line: append([]byte(nil), line...)}:
					return nil
				case <-ctx.Done():
					return ctx.Err()
				}
			})
			if s.err != nil {
				s.err = fmt.Errorf("node %s: %w", n.ID, s.err)
			}
		}()
	}
	fail := func(err error) error {
		cancel()
		wg.Wait()
		return err
	}
	for _, s := range streams {
		s.head, s.ok = <-s.ch
	}
	for {
		best := -1
		for i, s := range streams {
			if !s.ok {
				continue
			}
			if best < 0 || before(s.head, streams[best].head) {
				best = i
			}
		}
		if best < 0 {
			break
		}
		s := streams[best]
		if err := fn(s.head); err != nil {
			return fail(err)
		}
		s.head, s.ok = <-s.ch
	}
	wg.Wait()
	var errs []error
	for _, s := range streams {
		if s.err != nil && !errors.Is(s.err, context.Canceled) {
			errs = append(errs, s.err)
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	return ctx.Err()
}

func before(a, b Hit) bool {
	if !a.Record.Time.Equal(b.Record.Time) {
		return a.Record.Time.Before(b.Record.Time)
	}
	if a.Node != b.Node {
		return a.Node < b.Node
	}
	return a.Record.Seq < b.Record.Seq
}

// nodeFS is a node's layers as one log.
func nodeFS(n Node) fs.FS {
	if len(n.Layers) == 1 {
		return n.Layers[0].FS
	}
	layers := make([]fs.FS, len(n.Layers))
	for i, l := range n.Layers {
		layers[i] = l.FS
	}
	return upload.UnionFS(layers...)
}
