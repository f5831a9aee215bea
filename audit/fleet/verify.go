package fleet

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"

	"golang.org/x/mod/sumdb/note"

	"github.com/countersign/countersign/audit"
)

// VerifyOptions configures Verify.
type VerifyOptions struct {
	// Verifiers are the checkpoint verifier keys of every node (required).
	Verifiers note.Verifiers
	// Partial accepts node logs that start after seq 0.
	Partial bool
	// Parallel is how many nodes are verified at once. Default: every node
	// (up to maxParallel), so that the CPUs stay busy to the end: with 3
	// nodes on 2 CPUs, verifying 2 then 1 would leave a CPU idle for the
	// last third. Each costs little memory (a read buffer and the tree
	// hashes since the last checkpoint).
	Parallel int
	// Versions, if set, lists the other versions of a node's files (a
	// versioned, Object Lock bucket keeps every version): each is one more
	// copy that must agree.
	Versions VersionLister
}

// VersionLister returns the copies of a node's files other than the ones
// its layers show: in a versioned bucket, the noncurrent versions and the
// delete markers.
type VersionLister interface {
	Versions(ctx context.Context, node string) ([]Copy, error)
}

// maxParallel bounds the default Parallel.
const maxParallel = 16

// NodeReport is one node's verification.
type NodeReport struct {
	Node   string
	Layers []string
	// Result is audit.Verify's over the node's layers together; Err its
	// first problem (an *audit.VerifyError names the segment, line and
	// seq), nil if the log verified.
	Result *audit.VerifyResult
	Err    error
	// Conflicts are copies of one file that disagree (a fork of the
	// checkpoint chain, an altered or overwritten copy, a deleted one).
	Conflicts []Conflict
}

// OK reports whether the node's log verified and every copy agreed.
func (r *NodeReport) OK() bool { return r.Err == nil && len(r.Conflicts) == 0 }

// Verify checks every node: its layers together with audit.Verify (origin
// countersign/<node>), and every file that has several copies (in several
// layers, or several versions) for agreement. Nodes are verified in
// parallel; the reports are in the nodes' order.
func Verify(ctx context.Context, nodes []Node, opts VerifyOptions) ([]NodeReport, error) {
	if opts.Verifiers == nil {
		return nil, errors.New("fleet verify: no verifier key")
	}
	par := opts.Parallel
	if par <= 0 {
		par = min(max(len(nodes), runtime.GOMAXPROCS(0)), maxParallel)
	}
	reports := make([]NodeReport, len(nodes))
	sem := make(chan struct{}, par)
	var wg sync.WaitGroup
	for i, n := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				reports[i] = NodeReport{Node: n.ID, Err: ctx.Err()}
				return
			}
			defer func() { <-sem }()
			reports[i] = verifyNode(ctx, n, opts)
		}()
	}
	wg.Wait()
	return reports, ctx.Err()
}

func verifyNode(ctx context.Context, n Node, opts VerifyOptions) NodeReport {
	rep := NodeReport{Node: n.ID}
	for _, l := range n.Layers {
		rep.Layers = append(rep.Layers, l.Name)
	}
	copies, err := layerCopies(n)
	if err != nil {
		rep.Err = err
		return rep
	}
	if opts.Versions != nil {
		more, err := opts.Versions.Versions(ctx, n.ID)
		if err != nil {
			rep.Err = fmt.Errorf("listing versions: %w", err)
			return rep
		}
		copies = append(copies, more...)
	}
	rep.Conflicts = compareCopies(copies, opts.Verifiers)
	fsys := nodeFS(n)
	rep.Result, rep.Err = audit.Verify(fsys, audit.VerifyOptions{
		Verifiers: opts.Verifiers, Origin: audit.OriginPrefix + n.ID, Partial: opts.Partial,
	})
	return rep
}
