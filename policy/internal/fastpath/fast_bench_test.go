package fastpath

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/countersign/countersign/internal/policyinput"
	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"
)

// Benchmarks of one decision on the 10,000-grant data document (genGrants):
//
//	go test -run '^$' -bench 'Authorize' -benchmem ./policy/internal/fastpath/
//
// Full: the full evaluation (rego.EvalInput over the package), what every
// decision cost before the fast path. Fast: a scan — one principal reading
// one table's files, every input a different key and Range header — with
// the scope's residual cached. Miss: every input a different scope (another
// principal each time), so the cache never helps: the full evaluation plus
// the fast path's bookkeeping.

// scanInputs are n reads of one table by one principal.
func scanInputs(n int) []*policyinput.Input {
	p := &policyinput.Principal{ID: "alice", Issuer: "https://idp.example/", Groups: []string{"analysts", "g001", "g002", "g017"},
		Claims: map[string]any{"exp": 1.7e9, "iat": 1.6999e9, "email": "alice@example.com"}}
	table := &policyinput.Table{Prefix: "prod", Namespace: []string{"db"}, Name: "t"}
	ins := make([]*policyinput.Input, n)
	for i := range ins {
		key := fmt.Sprintf("wh/db/t/data/%05d-%d-0a1b2c3d.parquet", i, i%7)
		ins[i] = &policyinput.Input{
			Version: policyinput.InputVersion, Principal: p,
			Operation: "GetObject", Action: "s3:GetObject", Access: "read",
			Resource: policyinput.Resource{Bucket: "lake", Key: key, ARN: "arn:aws:s3:::lake/" + key},
			Table:    table,
			Request: policyinput.Request{Method: "GET", Region: "us-east-1", Host: "lake.s3.us-east-1.amazonaws.com", Headers: policyinput.HeadersOf(map[string]string{
				"range":                 fmt.Sprintf("bytes=%d-%d", 4*i, 4*i+8191),
				"amz-sdk-invocation-id": fmt.Sprintf("0f6e%04x-2f0a-4c43-9a44-7e5b7a0c%04x", i, i),
				"x-amz-content-sha256":  "UNSIGNED-PAYLOAD",
				"user-agent":            "aws-sdk-java/2.29.52 Linux/6.1 OpenJDK_64-Bit_Server_VM/17",
			})},
			Source: policyinput.Source{IP: "10.0.0.7"},
		}
	}
	return ins
}

// missInputs are like scanInputs, but each in a scope of its own (another
// principal).
func missInputs(n int) []*policyinput.Input {
	ins := scanInputs(n)
	for i, in := range ins {
		p := *in.Principal
		p.ID = fmt.Sprintf("user-%d", i)
		in.Principal = &p
	}
	return ins
}

func benchEngines(b *testing.B) map[string]*Engine {
	big := genGrants(10000)
	return map[string]*Engine{
		"grants-10k":   testEngine(b, filepath.Join(examplesRoot, "grants"), big, Options{}),
		"combined-10k": testEngine(b, filepath.Join(examplesRoot, "combined"), big, Options{}),
	}
}

func benchDecide(b *testing.B, ins []*policyinput.Input, decide func(context.Context, *policyinput.Input) (policyinput.Decision, error)) {
	benchDecideWant(b, ins, true, decide)
}

func benchDecideWant(b *testing.B, ins []*policyinput.Input, allow bool, decide func(context.Context, *policyinput.Input) (policyinput.Decision, error)) {
	ctx := context.Background()
	b.ReportAllocs()
	cpu := startCPU()
	i := 0
	for b.Loop() {
		d, err := decide(ctx, ins[i%len(ins)])
		if err != nil || d.Allow != allow || !allow && d.Reason == "" {
			b.Fatalf("%+v %v", d, err)
		}
		i++
	}
	cpu.report(b)
}

// cpuClock reports the process's CPU time per operation (user and system,
// GC included): on a shared machine wall time per operation includes
// waiting for a core.
type cpuClock struct{ start time.Duration }

func startCPU() cpuClock { return cpuClock{processCPU()} }

func (c cpuClock) report(b *testing.B) {
	b.ReportMetric(float64(processCPU()-c.start)/float64(b.N), "cpu-ns/op")
}

func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkAuthorizeFull: rego is the input as rego.EvalInput converts it
// (a JSON round trip), ast the input built as an AST directly.
func BenchmarkAuthorizeFull(b *testing.B) {
	ins := scanInputs(4096)
	for _, name := range []string{"grants-10k", "combined-10k"} {
		e := benchEngines(b)[name]
		b.Run(name+"/rego", func(b *testing.B) { benchDecide(b, ins, e.authorizeRego) })
		b.Run(name+"/ast", func(b *testing.B) { benchDecide(b, ins, e.authorizeFull) })
	}
}

func BenchmarkAuthorizeFast(b *testing.B) {
	ins := scanInputs(4096)
	for _, name := range []string{"grants-10k", "combined-10k"} {
		e := benchEngines(b)[name]
		forceBuild(e)
		e.fast.noMemo = true // the inputs repeat every 4,096
		if d, err := e.Authorize(context.Background(), ins[0]); err != nil || !d.Allow {
			b.Fatal(d, err)
		}
		b.Run(name, func(b *testing.B) {
			benchDecide(b, ins, e.Authorize)
			if st := &e.fast.stats; st.hits.Load() < uint64(b.N) {
				b.Fatalf("only %d fast decisions", st.hits.Load())
			}
		})
	}
}

// BenchmarkAuthorizeFastTwoReads is the scan as engines read: each file's
// footer, then a column chunk (another Range): the second decision is
// remembered.
func BenchmarkAuthorizeFastTwoReads(b *testing.B) {
	ins := scanInputs(4096)
	pairs := make([]*policyinput.Input, 0, 2*len(ins))
	for _, in := range ins {
		col := *in
		col.Request.Headers = in.Request.Headers.With("range", "bytes=100-8291")
		pairs = append(pairs, in, &col)
	}
	for _, name := range []string{"grants-10k", "combined-10k"} {
		e := benchEngines(b)[name]
		forceBuild(e)
		if d, err := e.Authorize(context.Background(), ins[0]); err != nil || !d.Allow {
			b.Fatal(d, err)
		}
		b.Run(name, func(b *testing.B) {
			ctx := context.Background()
			st := &e.fast.stats
			hits0 := st.memoHits.Load()
			b.ReportAllocs()
			cpu := startCPU()
			i := 0
			for b.Loop() {
				if i%len(pairs) == 0 {
					// Forget the last pass: its footers would be remembered.
					for j := range e.fast.memo {
						e.fast.memo[j].Store(nil)
					}
				}
				if d, err := e.Authorize(ctx, pairs[i%len(pairs)]); err != nil || !d.Allow {
					b.Fatal(d, err)
				}
				i++
			}
			cpu.report(b)
			if hits := st.memoHits.Load() - hits0; hits < uint64(b.N)*2/5 || hits > uint64(b.N)/2+1 {
				b.Fatalf("%d of %d decisions remembered, want about half", hits, b.N)
			}
		})
	}
}

// missOffset keeps the inputs of BenchmarkAuthorizeFastMiss's runs apart: a
// scope seen again would be built.
var missOffset int

// BenchmarkAuthorizeFastDenied is the scan of a table the principal has no
// grant for: every object denied, with its reason.
func BenchmarkAuthorizeFastDenied(b *testing.B) {
	ins := scanInputs(4096)
	for _, in := range ins {
		in.Resource.Key = strings.Replace(in.Resource.Key, "wh/db/t/", "wh/db/t_old/", 1)
		in.Resource.ARN = "arn:aws:s3:::lake/" + in.Resource.Key
		in.Table = nil
	}
	for _, name := range []string{"grants-10k", "combined-10k"} {
		e := benchEngines(b)[name]
		forceBuild(e)
		e.fast.noMemo = true
		b.Run(name+"/full", func(b *testing.B) { benchDecideWant(b, ins, false, e.authorizeFull) })
		b.Run(name+"/fast", func(b *testing.B) { benchDecideWant(b, ins, false, e.Authorize) })
	}
}

func BenchmarkAuthorizeFastMiss(b *testing.B) {
	for _, name := range []string{"grants-10k", "combined-10k"} {
		e := benchEngines(b)[name]
		b.Run(name, func(b *testing.B) {
			ins := missInputs(missOffset + b.N)[missOffset:]
			missOffset += b.N
			b.ResetTimer()
			ctx := context.Background()
			b.ReportAllocs()
			cpu := startCPU()
			for i := 0; i < b.N; i++ {
				if d, err := e.Authorize(ctx, ins[i]); err != nil || !d.Allow {
					b.Fatal(d, err)
				}
			}
			cpu.report(b)
			if st := &e.fast.stats; st.hits.Load() != 0 || st.builds.Load() != 0 {
				b.Fatalf("%d hits, %d builds", st.hits.Load(), st.builds.Load())
			}
		})
	}
}

// BenchmarkAuthorizeFastParallel is the scan from every core, the engine
// behind an atomic pointer as policy.Manager holds it: the hot path takes
// no lock.
func BenchmarkAuthorizeFastParallel(b *testing.B) {
	ins := scanInputs(4096)
	e := benchEngines(b)["combined-10k"]
	forceBuild(e)
	e.fast.noMemo = true
	var m atomic.Pointer[Engine]
	m.Store(e)
	ctx := context.Background()
	if _, err := m.Load().Authorize(ctx, ins[0]); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	cpu := startCPU()
	defer cpu.report(b)
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			if d, err := m.Load().Authorize(ctx, ins[i%len(ins)]); err != nil || !d.Allow {
				b.Error(d, err)
				return
			}
			i++
		}
	})
}

// BenchmarkScopeBuild is the cost of a cache miss that builds: partial
// evaluation for the scope and compilation of the residual (in the
// background, never on a request).
func BenchmarkScopeBuild(b *testing.B) {
	known, err := newKnownInput(scanInputs(1)[0])
	if err != nil {
		b.Fatal(err)
	}
	for _, name := range []string{"grants-10k", "combined-10k"} {
		e := benchEngines(b)[name]
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			cpu := startCPU()
			for b.Loop() {
				if _, err := e.fast.compileScope(known); err != nil {
					b.Fatal(err)
				}
			}
			cpu.report(b)
		})
	}
}

// BenchmarkAlternatives measures the designs the fast path was chosen
// over, on the scan workload and the combined policy with the 10,000-grant
// document:
//
//   - opa-residual: the same residual (partial evaluation per scope), but
//     evaluated per object by OPA (a prepared query over the residual's
//     modules, the input as an AST) instead of the interpreter;
//   - shallow: partial evaluation with shallow inlining (every rule kept,
//     which preserves conflicts without the analysis) and the interpreter.
func BenchmarkAlternatives(b *testing.B) {
	ins := scanInputs(4096)
	ctx := context.Background()
	b.Run("opa-residual", func(b *testing.B) {
		e := benchEngines(b)["combined-10k"]
		known, err := newKnownInput(ins[0])
		if err != nil {
			b.Fatal(err)
		}
		pqs, err := e.fast.partial(known)
		if err != nil {
			b.Fatal(err)
		}
		opts := []func(*rego.Rego){rego.Query("data." + queryPackage + ".out")}
		for _, m := range pqs.Support {
			opts = append(opts, rego.ParsedModule(m))
		}
		var src strings.Builder
		fmt.Fprintf(&src, "package %s\n\n", queryPackage)
		for range pqs.Queries {
			src.WriteString("out contains [x0, x1] if { true }\n")
		}
		qm := ast.MustParseModuleWithOpts(src.String(), ast.ParserOptions{RegoVersion: ast.RegoV1})
		for i, q := range pqs.Queries {
			qm.Rules[i].Body = q.Copy()
		}
		pq, err := rego.New(append(opts, rego.ParsedModule(qm))...).PrepareForEval(ctx)
		if err != nil {
			b.Fatal(err)
		}
		decide := func(ctx context.Context, in *policyinput.Input) (policyinput.Decision, error) {
			v, _ := InputValue(in)
			rs, err := pq.Eval(ctx, rego.EvalParsedInput(v))
			if err != nil {
				return policyinput.Decision{}, err
			}
			tuples := rs[0].Expressions[0].Value.([]any)
			t := tuples[0].([]any)
			return policyinput.Decision{Allow: t[0] == true}, nil
		}
		benchDecide(b, ins, decide)
	})
	b.Run("shallow", func(b *testing.B) {
		e := benchEngines(b)["combined-10k"]
		forceBuild(e)
		e.fast.shallow = true
		if d, err := e.Authorize(ctx, ins[0]); err != nil || !d.Allow {
			b.Fatal(d, err)
		}
		benchDecide(b, ins, e.Authorize)
		if e.fast.stats.hits.Load() < uint64(b.N) {
			b.Fatal("not decided by the fast path")
		}
	})
}

// BenchmarkScopeKey is the scope key of a scan's input with a JWT's
// claims: encoded at every decision (unkeyed), or with the principal's
// Key, encoded once by auth (keyed).
func BenchmarkScopeKey(b *testing.B) {
	in := scanInputs(1)[0]
	p := *in.Principal
	p.Claims = map[string]any{"iss": p.Issuer, "sub": p.ID, "aud": "countersign", "exp": json.Number("1764650000"),
		"iat": json.Number("1764646400"), "jti": "b1c2", "groups": []any{"analysts", "g001", "g002", "g017"}}
	in.Principal = &p
	keyed := *in
	kp := p
	kp.SetKey()
	keyed.Principal = &kp
	for name, in := range map[string]*policyinput.Input{"unkeyed": in, "keyed": &keyed} {
		b.Run(name, func(b *testing.B) {
			var buf [512]byte
			b.ReportAllocs()
			for b.Loop() {
				if _, ok := appendScopeKey(buf[:0], in); !ok {
					b.Fatal("not encoded")
				}
			}
		})
	}
}

// BenchmarkHeaderRuleMemo is BenchmarkAuthorizeFast on combined-10k with
// the header rules remembered by header names (on, the default) and
// evaluated for every object (off).
func BenchmarkHeaderRuleMemo(b *testing.B) {
	ins := scanInputs(4096)
	e := benchEngines(b)["combined-10k"]
	forceBuild(e)
	e.fast.noMemo = true
	if d, err := e.Authorize(context.Background(), ins[0]); err != nil || !d.Allow {
		b.Fatal(d, err)
	}
	for _, on := range []bool{true, false} {
		name := map[bool]string{true: "on", false: "off"}[on]
		b.Run(name, func(b *testing.B) {
			e.fast.noHeaderMemo = !on
			hits := e.fast.stats.headerHits.Load()
			benchDecide(b, ins, e.Authorize)
			if got := e.fast.stats.headerHits.Load() > hits; got != on {
				b.Fatalf("header rules remembered: %v", got)
			}
		})
	}
}

// BenchmarkCompiledSets is BenchmarkAuthorizeFast (the memo off) with the
// residual's compiled rule sets (compiled.go) checked by Go code (on, the
// default) and by the interpreter (off).
func BenchmarkCompiledSets(b *testing.B) {
	ins := scanInputs(4096)
	engines := benchEngines(b)
	for _, name := range []string{"grants-10k", "combined-10k"} {
		e := engines[name]
		forceBuild(e)
		e.fast.noMemo = true
		if d, err := e.Authorize(context.Background(), ins[0]); err != nil || !d.Allow {
			b.Fatal(d, err)
		}
		for _, on := range []bool{true, false} {
			b.Run(name+"/"+map[bool]string{true: "on", false: "off"}[on], func(b *testing.B) {
				e.fast.noCompiled = !on
				benchDecide(b, ins, e.Authorize)
			})
		}
	}
}

// BenchmarkHeaderNames is the header part of a decision's object key
// (appendValidHeaderNames) for a scan read's four headers: in order, as
// the server gives them, or out of order (a literal), normalized first.
//
//	go test -run '^$' -bench HeaderNames -benchmem ./policy/internal/fastpath/
func BenchmarkHeaderNames(b *testing.B) {
	in := scanInputs(1)[0]
	for _, order := range []string{"in-order", "reversed"} {
		b.Run(order, func(b *testing.B) {
			x := *in
			if order == "reversed" {
				x.Request.Headers = slices.Clone(in.Request.Headers)
				slices.Reverse(x.Request.Headers)
			}
			b.ReportAllocs()
			var buf [256]byte
			for b.Loop() {
				if _, valid := appendValidHeaderNames(buf[:0], &x); !valid {
					b.Fatal("invalid")
				}
			}
		})
	}
}
