package fleet

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/countersign/countersign/audit"
	"github.com/countersign/countersign/audit/generate"
)

func genFleet(t *testing.T, records int) (string, string) {
	t.Helper()
	s, v, h, err := audit.GenerateKeys("fleet-test")
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	if _, err := generate.Run(context.Background(), generate.Options{Out: out, Records: records, CheckpointKey: s, HMACKey: []byte(h)}); err != nil {
		t.Fatal(err)
	}
	return out, v
}

// TestQueryMerged: the fleet query gives exactly every node's matches,
// in time order, each with its node.
func TestQueryMerged(t *testing.T) {
	out, _ := genFleet(t, 9000)
	nodes, err := Discover([]Root{{Name: out, FS: os.DirFS(out)}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(nodes) != 3 {
		t.Fatalf("%d nodes", len(nodes))
	}
	f := audit.Filter{Principal: "spark-etl"}
	var want []string
	for _, n := range nodes {
		err := audit.Query(context.Background(), os.DirFS(filepath.Join(out, n.ID)), f, func(r *audit.Record, line []byte) error {
			want = append(want, string(line))
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	var last Hit
	err = Query(context.Background(), nodes, f, audit.QueryOptions{}, func(h Hit) error {
		if last.Record != nil && before(h, last) {
			t.Fatalf("%s seq %d after %s seq %d: not in time order", h.Node, h.Record.Seq, last.Node, last.Record.Seq)
		}
		if h.Record.Node != h.Node {
			t.Fatalf("record of %s reported as %s's", h.Record.Node, h.Node)
		}
		last = h
		got = append(got, string(h.Line))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(want) < 1000 {
		t.Fatalf("only %d matches", len(want))
	}
	slices.Sort(want)
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("fleet query gave %d records, the nodes' queries %d", len(got), len(want))
	}
}

// TestVerifyCopies: a node's disk and a copy of its uploads agree; a
// segment altered in one copy is named with the line, in that node only.
func TestVerifyCopies(t *testing.T) {
	out, v := genFleet(t, 6000)
	vs, err := audit.ParseVerifiers(v)
	if err != nil {
		t.Fatal(err)
	}
	node2 := filepath.Join(out, "node-2")
	copyDir := t.TempDir()
	ents, _ := os.ReadDir(node2)
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(node2, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(copyDir, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	nodes, err := Discover([]Root{{Name: out + "/", FS: os.DirFS(out)}}, map[string][]Layer{"node-2": {{Name: copyDir + "/", FS: os.DirFS(copyDir)}}})
	if err != nil {
		t.Fatal(err)
	}
	reps, err := Verify(context.Background(), nodes, VerifyOptions{Verifiers: vs})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range reps {
		if !r.OK() {
			t.Fatalf("%s: %v %v", r.Node, r.Err, r.Conflicts)
		}
	}
	if len(reps[1].Layers) != 2 {
		t.Fatalf("node-2 layers %v", reps[1].Layers)
	}
	segs, _ := audit.ListSegments(os.DirFS(copyDir))
	name := segs[2].Name
	b, _ := os.ReadFile(filepath.Join(copyDir, name))
	lines := strings.SplitAfter(string(b), "\n")
	lines[3] = strings.Replace(lines[3], `"status":200`, `"status":201`, 1)
	os.WriteFile(filepath.Join(copyDir, name), []byte(strings.Join(lines, "")), 0o644)
	reps, err = Verify(context.Background(), nodes, VerifyOptions{Verifiers: vs})
	if err != nil {
		t.Fatal(err)
	}
	if !reps[0].OK() || !reps[2].OK() || reps[1].OK() {
		t.Fatalf("reports: %+v", reps)
	}
	if len(reps[1].Conflicts) != 1 || reps[1].Conflicts[0].File != name || !strings.Contains(reps[1].Conflicts[0].Msg, "differ from line 4 on") {
		t.Fatalf("conflicts: %v", reps[1].Conflicts)
	}
	var ve *audit.VerifyError
	if reps[1].Err == nil || !asVerifyError(reps[1].Err, &ve) || ve.File != name {
		t.Fatalf("node-2 verify: %v", reps[1].Err)
	}
}

func asVerifyError(err error, ve **audit.VerifyError) bool {
	e, ok := err.(*audit.VerifyError)
	*ve = e
	return ok
}
