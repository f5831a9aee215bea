package policy

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/loader"
	"github.com/open-policy-agent/opa/v1/storage"
	"github.com/open-policy-agent/opa/v1/storage/inmem"
	"github.com/open-policy-agent/opa/v1/tester"
)

// TestOptions configures RunTests (countersign policy test).
type TestOptions struct {
	// Run, if set, is a regular expression selecting the tests to run by
	// their full name (data.<package>.test_<name>), like opa test -r.
	Run string
	// Verbose reports every test, not only failures, and prints the
	// evaluation trace of failures.
	Verbose bool
	// Output receives the report (opa test's format). Default: discard.
	Output io.Writer
	// Timeout bounds each test (default 5s).
	Timeout time.Duration
	// noTrace runs the tests without recording their evaluation traces
	// (a policy's load only needs pass or fail).
	noTrace bool
}

// loadTestTimeout bounds each shipped Rego test when a policy is loaded:
// generous, since a test that times out refuses the policy, and a busy
// machine (a reload under load) must not turn a passing test into a
// refused policy.
const loadTestTimeout = time.Minute

// TestSummary counts test outcomes.
type TestSummary struct {
	Pass, Fail, Error, Skip int
}

// Total is the number of tests found.
func (s TestSummary) Total() int { return s.Pass + s.Fail + s.Error + s.Skip }

// OK reports whether tests ran and none failed or errored.
func (s TestSummary) OK() bool { return s.Pass > 0 && s.Fail == 0 && s.Error == 0 }

// RunTests runs the Rego unit tests (rules named test_*, Rego v1) found in
// paths with OPA's tester, and writes a report like `opa test`. The paths
// are loaded together as one policy, _test.rego files included. A path
// ending in "/..." stands for every directory below it that contains
// *_test.rego files, each loaded and tested on its own. A directory named
// "lib" there is a library: it is tested on its own, and loaded, without
// its tests, with every other directory below its parent (as each example
// of deploy/policies is a complete policy together with
// deploy/policies/lib), so a library's tests run once.
//
// The error is for what prevents running tests at all: unreadable paths,
// parse or compile errors (with file and line), an invalid Run pattern.
// Test failures are in the summary.
func RunTests(ctx context.Context, paths []string, opts TestOptions) (TestSummary, error) {
	var sum TestSummary
	out := opts.Output
	if out == nil {
		out = io.Discard
	}
	units, err := testUnits(paths)
	if err != nil {
		return sum, err
	}
	for i, unit := range units {
		if len(units) > 1 {
			if i > 0 {
				fmt.Fprintln(out)
			}
			fmt.Fprintf(out, "=== %s\n", unit)
		}
		s, err := runTestUnit(ctx, unit, opts, out)
		if err != nil {
			return sum, err
		}
		sum.Pass += s.Pass
		sum.Fail += s.Fail
		sum.Error += s.Error
		sum.Skip += s.Skip
	}
	if len(units) > 1 {
		fmt.Fprintf(out, "\nTOTAL: %d passed, %d failed, %d errors, %d skipped\n", sum.Pass, sum.Fail, sum.Error, sum.Skip)
	}
	return sum, nil
}

// testUnit is one set of paths loaded and tested together: the tests of
// paths run, libs are loaded without their tests.
type testUnit struct {
	paths, libs []string
}

func (u testUnit) String() string {
	s := strings.Join(u.paths, " ")
	if len(u.libs) > 0 {
		s += " (with " + strings.Join(u.libs, " ") + ")"
	}
	return s
}

// testUnits groups paths into the sets loaded together: all plain paths in
// one, and one per test directory found under each "dir/..." pattern, with
// the libraries it is loaded with.
func testUnits(paths []string) ([]testUnit, error) {
	var plain []string
	var units []testUnit
	for _, p := range paths {
		root, ok := strings.CutSuffix(filepath.ToSlash(p), "/...")
		if !ok && p != "..." {
			plain = append(plain, p)
			continue
		}
		if p == "..." {
			root = "."
		}
		found, err := testDirs(filepath.FromSlash(root))
		if err != nil {
			return nil, err
		}
		if len(found) == 0 {
			return nil, fmt.Errorf("policy: no *_test.rego files under %s", root)
		}
		for _, d := range found {
			libs, err := libraries(filepath.FromSlash(root), d)
			if err != nil {
				return nil, err
			}
			units = append(units, testUnit{paths: []string{d}, libs: libs})
		}
	}
	if len(plain) > 0 {
		units = append([]testUnit{{paths: plain}}, units...)
	}
	if len(units) == 0 {
		return nil, errors.New("policy: no test paths given")
	}
	return units, nil
}

// libDir is the name of a library directory under a "dir/..." pattern.
const libDir = "lib"

// libraries lists the library directories dir is loaded with: a directory
// named lib beside dir or beside one of its parents up to root, nearest
// last. A library itself has none.
func libraries(root, dir string) ([]string, error) {
	if filepath.Base(dir) == libDir {
		return nil, nil
	}
	var libs []string
	for d := dir; ; {
		parent := filepath.Dir(d)
		if lib := filepath.Join(parent, libDir); lib != d {
			switch info, err := os.Stat(lib); {
			case err == nil && info.IsDir():
				libs = append([]string{lib}, libs...)
			case err != nil && !errors.Is(err, fs.ErrNotExist):
				return nil, err
			}
		}
		if filepath.Clean(d) == filepath.Clean(root) || parent == d {
			return libs, nil
		}
		d = parent
	}
}

// testDirs lists the directories under root that directly contain a
// *_test.rego file, skipping hidden directories and the subtrees of
// directories already listed.
func testDirs(root string) ([]string, error) {
	var dirs []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		if path != root && strings.HasPrefix(d.Name(), ".") {
			return filepath.SkipDir
		}
		entries, err := os.ReadDir(path)
		if err != nil {
			return err
		}
		for _, e := range entries {
			if !e.IsDir() && isTestFile(e.Name()) {
				dirs = append(dirs, path)
				return filepath.SkipDir
			}
		}
		return nil
	})
	return dirs, err
}

func runTestUnit(ctx context.Context, unit testUnit, opts TestOptions, out io.Writer) (TestSummary, error) {
	// The loader calls the filter with the paths as given, joined with
	// the names below them.
	filter := func(path string, info fs.FileInfo, depth int) bool {
		if skipHidden(path, info, depth) {
			return true
		}
		if info.IsDir() || !isTestFile(info.Name()) {
			return false
		}
		for _, lib := range unit.libs {
			if rel, err := filepath.Rel(lib, path); err == nil && filepath.IsLocal(rel) {
				return true // a library's tests run in its own unit
			}
		}
		return false
	}
	paths := append(slices.Clone(unit.libs), unit.paths...)
	modules, store, err := tester.LoadWithRegoVersion(paths, filter, ast.RegoV1)
	if err != nil {
		return TestSummary{}, fmt.Errorf("policy: loading %s: %w", strings.Join(paths, ", "), err)
	}
	sum, _, err := runTestModules(ctx, strings.Join(paths, ", "), modules, store, opts, out)
	return sum, err
}

// runTests runs the snapshot's _test.rego files against its policy, from
// the snapshot's bytes, and is an error if any test fails or errors: a
// policy directory that ships tests is loaded only when they pass.
func (s *snapshot) runTests(ctx context.Context) error {
	where := strings.Join(s.paths, ", ")
	res, err := loader.NewFileLoader().WithRegoVersion(ast.RegoV1).WithProcessAnnotation(true).
		WithFS(s.fsys()).Filtered(s.paths, skipHidden)
	if err != nil {
		return fmt.Errorf("policy: loading the tests of %s: %w", where, err)
	}
	modules := make(map[string]*ast.Module, len(res.Modules))
	for _, m := range res.Modules {
		modules[m.Name] = m.Parsed
	}
	var report strings.Builder
	sum, failed, err := runTestModules(ctx, where, modules, inmem.NewFromObject(res.Documents), TestOptions{Timeout: loadTestTimeout, noTrace: true}, &report)
	switch {
	case err != nil:
		return err
	case sum.Fail+sum.Error > 0:
		const show = 5
		names := failed
		if len(names) > show {
			names = append(names[:show:show], fmt.Sprintf("and %d more", len(failed)-show))
		}
		return fmt.Errorf("policy: %d of %d Rego tests shipped with the policy failed (%s); `countersign policy test %s` shows why",
			sum.Fail+sum.Error, sum.Total(), strings.Join(names, ", "), strings.Join(s.paths, " "))
	}
	return nil
}

// runTestModules runs the test rules among modules and reports them to out.
// It returns the counts and the names (file:line name) of the tests that
// failed or errored.
func runTestModules(ctx context.Context, where string, modules map[string]*ast.Module, store storage.Store, opts TestOptions, out io.Writer) (TestSummary, []string, error) {
	var sum TestSummary
	txn, err := store.NewTransaction(ctx, storage.WriteParams)
	if err != nil {
		return sum, nil, err
	}
	defer store.Abort(ctx, txn)

	compiler := ast.NewCompiler().
		WithPathConflictsCheck(storage.NonEmpty(ctx, store, txn)).
		WithEnablePrintStatements(true).
		WithCapabilities(ast.CapabilitiesForThisVersion()).
		WithUseTypeCheckAnnotations(true).
		WithRewriteTestRules(true).
		WithDefaultRegoVersion(ast.RegoV1)
	runner := tester.NewRunner().
		SetCompiler(compiler).
		SetStore(store).
		SetDefaultRegoVersion(ast.RegoV1).
		CapturePrintOutput(true).
		EnableTracing(!opts.noTrace).
		StackTraces(true).
		SetModules(modules).
		SetTimeout(cmp.Or(opts.Timeout, 5*time.Second)).
		Filter(opts.Run)
	ch, err := runner.RunTests(ctx, txn)
	if err != nil {
		return sum, nil, fmt.Errorf("policy: compiling %s: %w", where, err)
	}

	// Results arrive in any order (tests run in parallel): report them in
	// file and line order so the output is stable.
	var results []*tester.Result
	for r := range ch {
		results = append(results, r)
	}
	slices.SortFunc(results, func(a, b *tester.Result) int {
		if a.Location != nil && b.Location != nil {
			if c := cmp.Compare(a.Location.File, b.Location.File); c != 0 {
				return c
			}
			if c := cmp.Compare(a.Location.Row, b.Location.Row); c != 0 {
				return c
			}
		}
		return cmp.Compare(a.Package+"."+a.Name, b.Package+"."+b.Name)
	})
	var failed []string
	for _, r := range results {
		switch {
		case r.Skip:
			sum.Skip++
		case r.Error != nil:
			sum.Error++
		case r.Fail:
			sum.Fail++
		default:
			sum.Pass++
			continue
		}
		if !r.Skip {
			name := r.Package + "." + r.Name
			if r.Location != nil {
				name = fmt.Sprintf("%s:%d %s", r.Location.File, r.Location.Row, name)
			}
			failed = append(failed, name)
		}
	}
	if len(results) == 0 {
		fmt.Fprintf(out, "no tests found in %s\n", where)
		return sum, nil, nil
	}
	rch := make(chan *tester.Result, len(results))
	for _, r := range results {
		rch <- r
	}
	close(rch)
	rep := tester.PrettyReporter{Output: out, Verbose: opts.Verbose, FailureLine: true, LocalVars: true}
	if err := rep.Report(rch); err != nil {
		return sum, failed, err
	}
	return sum, failed, nil
}

// skipHidden keeps hidden entries below the given paths out of tests, as
// Load does.
func skipHidden(_ string, info fs.FileInfo, depth int) bool {
	return depth > 0 && strings.HasPrefix(info.Name(), ".")
}
