package fastpath

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/countersign/countersign/internal/policyinput"
	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/util"
)

// The policy differential: random policies (policyGen), each decided for
// random inputs by the fast path and by rego's own evaluation, which must
// agree on every decision (Allow, Reason, and whether there is an error).
// FuzzGeneratedPolicies lets the fuzzer drive the generator;
// TestGeneratedPoliciesDifferential runs a fixed number of policies from a
// seed that changes every run (printed, and settable with
// COUNTERSIGN_TEST_SEED to repeat a failure).

// genCounts are what one policy's run compared.
type genCounts struct {
	policies, skipped    int // compiled and compared; did not compile
	decisions, residual  int // compared; of those, decided by a residual
	fallbacks, noResidue int // objects and scopes the fast path gave up on
	noFast               int // policies without a fast path
}

func (c *genCounts) add(o genCounts) {
	c.policies += o.policies
	c.skipped += o.skipped
	c.decisions += o.decisions
	c.residual += o.residual
	c.fallbacks += o.fallbacks
	c.noResidue += o.noResidue
	c.noFast += o.noFast
}

func (c genCounts) String() string {
	return fmt.Sprintf("%d policies (%d more did not compile, %d without a fast path), %d decisions compared, %d of them by a residual, %d object fallbacks, %d unsupported scopes",
		c.policies, c.skipped, c.noFast, c.decisions, c.residual, c.fallbacks, c.noResidue)
}

var genData = sync.OnceValue(func() map[string]any {
	var v map[string]any
	if err := util.UnmarshalJSON([]byte(genDataDoc), &v); err != nil {
		panic(err)
	}
	return v
})

var genGrantsOnce = sync.OnceValue(func() map[string]any {
	g, err := loadExampleGrants()
	if err != nil {
		panic(err)
	}
	return g
})

// genInputs are a policy's random inputs: scan-like bursts of objects per
// scope, some with numeric key segments, each followed by its header
// sibling (the same object, other header values).
func genInputs(seed uint64, n int) []*policyinput.Input {
	g := newInputGen(seed, genGrantsOnce())
	out := make([]*policyinput.Input, 0, 2*n)
	i := 0
	g.stream(n, func(in *policyinput.Input) {
		if g.r.IntN(3) == 0 && in.Resource.Prefix == nil && in.Operation != "HeadBucket" {
			k := numericKeys[g.r.IntN(len(numericKeys))]
			in.Resource.Key, in.Resource.ARN = k, "arn:aws:s3:::"+in.Resource.Bucket+"/"+k
		}
		out = append(out, in, headerSibling(in, i))
		i++
	})
	return out
}

// runGenerated generates the policy of data, compiles it (a policy that
// does not compile is skipped), and compares every decision. It reports
// each difference through errorf.
func runGenerated(data []byte, inputs int, errorf func(format string, args ...any)) genCounts {
	var c genCounts
	src := (&policyGen{src: newGenSource(data)}).policy()
	m, err := ast.ParseModuleWithOpts("gen.rego", src, ast.ParserOptions{RegoVersion: ast.RegoV1})
	if err != nil {
		c.skipped++
		return c
	}
	ctx := context.Background()
	e, err := newEngine(ctx, "gen", []module{{name: "gen.rego", raw: []byte(src), parsed: m}}, genData(), "", Options{})
	if err != nil {
		c.skipped++
		return c
	}
	c.policies++
	forceBuild(e)
	if e.fast == nil {
		c.noFast++
	}
	seed := binary.LittleEndian.Uint64(append(append([]byte(nil), data...), make([]byte, 8)...)[:8])
	for _, in := range genInputs(seed^uint64(len(data)), inputs) {
		want, werr := e.authorizeRego(ctx, in)
		hits := uint64(0)
		if e.fast != nil {
			hits = e.fast.stats.hits.Load()
		}
		got, gerr := e.Authorize(ctx, in)
		c.decisions++
		if e.fast != nil && e.fast.stats.hits.Load() > hits {
			c.residual++
		}
		if (werr != nil) != (gerr != nil) || got != want {
			errorf("fast path differs from OPA\npolicy:\n%s\ninput: %s\nfast: %+v err %v\nopa:  %+v err %v", src, describeInput(in), got, gerr, want, werr)
			return c
		}
	}
	if e.fast != nil {
		st := &e.fast.stats
		c.fallbacks = int(st.fallbacks.Load())
		c.noResidue = int(st.failed.Load())
	}
	return c
}

// genStats, when COUNTERSIGN_FUZZ_STATS names a file, receives one line of
// counts per policy the fuzzer ran (its workers are processes of their
// own): sum them with
//
//	awk '{p+=$1; s+=$2; d+=$3; r+=$4} END {print p, "policies,", s, "skipped,", d, "decisions,", r, "by a residual"}' FILE
var genStats = sync.OnceValue(func() *os.File {
	name := os.Getenv("COUNTERSIGN_FUZZ_STATS")
	if name == "" {
		return nil
	}
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil
	}
	return f
})

// FuzzGeneratedPolicies: the fuzzer's bytes drive the policy generator
// (and seed the inputs); every decision must be OPA's.
//
//	COUNTERSIGN_FUZZ_STATS=/tmp/counts go test -run '^$' -fuzz '^FuzzGeneratedPolicies$' -fuzztime 10m ./policy/internal/fastpath/
func FuzzGeneratedPolicies(f *testing.F) {
	for i := range 16 {
		b := make([]byte, 8)
		binary.LittleEndian.PutUint64(b, uint64(i)*0x9e3779b97f4a7c15)
		f.Add(b)
	}
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 512 {
			return // the PRNG takes over after the bytes: longer inputs add nothing
		}
		c := runGenerated(data, 12, t.Errorf)
		if out := genStats(); out != nil {
			fmt.Fprintf(out, "%d %d %d %d\n", c.policies, c.skipped, c.decisions, c.residual)
		}
	})
}

// runSeed is the seed of this run of a differential test:
// COUNTERSIGN_TEST_SEED, or the clock, so that every run draws other
// inputs. It is logged (go test prints it with a failure).
func runSeed(t *testing.T) uint64 {
	t.Helper()
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("COUNTERSIGN_TEST_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("COUNTERSIGN_TEST_SEED: %v", err)
		}
		seed = v
	}
	t.Logf("seed %d (COUNTERSIGN_TEST_SEED=%d to repeat)", seed, seed)
	return seed
}

// generatedPolicies is how many policies TestGeneratedPoliciesDifferential
// runs.
func generatedPolicies() int {
	switch {
	case raceEnabled:
		return 60
	case testing.Short():
		return 200
	}
	return 600
}

func TestGeneratedPoliciesDifferential(t *testing.T) {
	seed := runSeed(t)
	var total genCounts
	var mu sync.Mutex
	var failed atomic.Bool
	n := generatedPolicies()
	const workers = 2
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n && !failed.Load(); i += workers {
				// 16 bytes of a PRNG of (seed, i): every choice varies
				r := rand.New(rand.NewPCG(seed, uint64(i)))
				data := binary.LittleEndian.AppendUint64(binary.LittleEndian.AppendUint64(nil, r.Uint64()), r.Uint64())
				c := runGenerated(data, 12, func(format string, args ...any) {
					failed.Store(true)
					t.Errorf("policy %d of seed %d (COUNTERSIGN_TEST_SEED=%d): "+format, append([]any{i, seed, seed}, args...)...)
				})
				mu.Lock()
				total.add(c)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	t.Logf("%v", total)
	// The generator must exercise the fast path, not only the full
	// evaluation.
	if total.policies < n/2 {
		t.Errorf("only %d of %d generated policies compiled", total.policies, n)
	}
	// A policy's decisions go to its residual or not as one, so the share
	// varies with the seed: 11-33% over 41 seeds of the race run's 60
	// policies (four below 1/8), narrower with the 600 of a plain run.
	floor := total.decisions / 8
	if n < 200 {
		floor = total.decisions / 16
	}
	if total.residual < floor {
		t.Errorf("only %d of %d decisions were the residual's", total.residual, total.decisions)
	}
}

// TestFunctionConflictReproducers: the policies in which
// FuzzGeneratedPolicies found partial evaluation losing a function's
// conflict (a function that does not depend on the object, whose two
// definitions gave two values for the same arguments: an error in OPA, so
// a denial; the first was allowed on the fast path). Every decision must be
// OPA's, and the conflicting scopes must have been given up
// (functionConflictTracer), not decided.
func TestFunctionConflictReproducers(t *testing.T) {
	for _, data := range [][]byte{
		[]byte("\x11)\xc8\xd1vk\xc5\xd1\b"),
		[]byte("ilt|\x9f`'\x1a\x1a\x1a\x1a\x1a\x1a\x17"),
	} {
		c := runGenerated(data, 12, t.Errorf)
		if c.noResidue == 0 {
			t.Errorf("reproducer %q: no scope was given up for its function conflict (%v)", data, c)
		}
	}
}
