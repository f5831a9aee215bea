package fastpath

import (
	"testing"

	"github.com/countersign/countersign/internal/policyinput"
)

// For the tests of package fastpath_test (policy_test.go), which decide
// through package policy: what they need of this package's tests.

// BuildAtFirstSighting makes every Cache created during the (non-parallel)
// test build a scope's residual at its first sighting, on the deciding
// goroutine.
func BuildAtFirstSighting(t *testing.T) {
	h := func(f *Cache) { f.syncBuild, f.admitAfter = true, 1 }
	testHookFastPath.Store(&h)
	t.Cleanup(func() { testHookFastPath.Store(nil) })
}

// ScanInputs are n reads of one table by one principal (scanInputs).
func ScanInputs(n int) []*policyinput.Input { return scanInputs(n) }

// GeneratedInputs are n random inputs for the example policies' grants,
// from seed.
func GeneratedInputs(t *testing.T, seed uint64, n int) []*policyinput.Input {
	var ins []*policyinput.Input
	newInputGen(seed, exampleGrants(t)).stream(n, func(in *policyinput.Input) { ins = append(ins, in) })
	return ins
}

// ExamplesRoot is the example policies' directory.
const ExamplesRoot = examplesRoot
