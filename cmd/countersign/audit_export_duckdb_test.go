package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/audit"
	"golang.org/x/mod/sumdb/tlog"
)

// TestAuditExportDuckDB asks DuckDB (installed with npm: its engine ships
// in the npm package) the questions audit query answers, over the export,
// and requires the same rows and counts. It fails, not skips, without
// node or npm: they are on every machine that runs make test.
func TestAuditExportDuckDB(t *testing.T) {
	_, dir := exportFixture(t, 300)
	out := filepath.Join(t.TempDir(), "export")
	if code, stdout, stderr := runAuditCmd(t, "export", "-dir", dir, "-out", out); code != 0 {
		t.Fatalf("export: %d\n%s%s", code, stdout, stderr)
	}
	table := fmt.Sprintf("read_parquet(%s, hive_partitioning = true)", sqlString(filepath.Join(out, "**", "*.parquet")))
	object := `CASE WHEN kind = 'lifecycle' THEN '-'
		WHEN prefix IS NOT NULL THEN bucket || '/' || prefix || '*'
		WHEN key <> '' AND version_id IS NOT NULL THEN bucket || '/' || key || '?versionId=' || version_id
		WHEN key <> '' THEN bucket || '/' || key
		WHEN bucket <> '' THEN bucket ELSE '-' END`
	since, until := "2026-11-30T23:30:00Z", "2026-12-01T02:00:00Z"
	queries := map[string]string{
		"principals": `SELECT coalesce(principal_id, '-') AS k, count(*) AS records, min(time_ns) AS first, max(time_ns) AS last
			FROM ` + table + ` GROUP BY 1 ORDER BY min(seq)`,
		"alice_objects": `SELECT ` + object + ` AS k, count(*) AS records, min(time_ns) AS first, max(time_ns) AS last
			FROM ` + table + ` WHERE principal_id = 'alice' GROUP BY 1 ORDER BY min(seq)`,
		"key_records": `SELECT seq, id, leaf_hash, time_ns, coalesce(principal_id, '-') AS principal, decision
			FROM ` + table + ` WHERE bucket = 'lake' AND key = ` + sqlString(oddKey) + ` ORDER BY seq`,
		// A time window, pruned by the day partition (a segment is in the
		// day it started: the day before the window's start is read too).
		"bob_window": `SELECT seq, id, leaf_hash, time_ns, coalesce(principal_id, '-') AS principal, decision
			FROM ` + table + ` WHERE day BETWEEN '2026-11-29' AND '2026-12-01' AND principal_id = 'bob'
			AND time >= TIMESTAMPTZ '` + since + `' AND time < TIMESTAMPTZ '` + until + `' ORDER BY seq`,
		// NULL exactly when absent: an empty list or string is not NULL.
		"empties": `SELECT count(*) FILTER (WHERE principal_groups = []) AS empty_groups,
			count(*) FILTER (WHERE principal_groups IS NULL) AS null_groups,
			count(*) FILTER (WHERE prefix = '') AS empty_prefix,
			count(*) FILTER (WHERE prefix IS NULL) AS null_prefix FROM ` + table,
		"all": `SELECT count(*) AS records, count(DISTINCT seq) AS seqs, min(seq) AS first, max(seq) AS last,
			string_agg(DISTINCT node, ',' ORDER BY node) AS nodes, string_agg(DISTINCT day::VARCHAR, ',' ORDER BY day::VARCHAR) AS days FROM ` + table,
	}
	got := duckdb(t, queries)

	// The same questions, through audit query.
	distinct := func(args ...string) [][]string {
		code, stdout, stderr := runAuditCmd(t, append([]string{"query", "-dir", dir}, args...)...)
		if code != 0 {
			t.Fatalf("query %v: %s", args, stderr)
		}
		var rows [][]string
		for _, line := range strings.Split(strings.TrimSpace(stdout), "\n") {
			var m map[string]any
			if err := json.Unmarshal([]byte(line), &m); err != nil {
				t.Fatal(err)
			}
			first, _ := time.Parse(time.RFC3339Nano, m["first"].(string))
			last, _ := time.Parse(time.RFC3339Nano, m["last"].(string))
			k := m["principal"]
			if k == nil {
				k = m["object"]
			}
			rows = append(rows, []string{k.(string), fmt.Sprint(m["records"]), fmt.Sprint(first.UnixNano()), fmt.Sprint(last.UnixNano())})
		}
		return rows
	}
	records := func(args ...string) [][]string {
		code, stdout, stderr := runAuditCmd(t, append([]string{"query", "-dir", dir}, args...)...)
		if code != 0 {
			t.Fatalf("query %v: %s", args, stderr)
		}
		var rows [][]string
		for _, line := range strings.Split(strings.TrimSpace(stdout), "\n") {
			r, err := audit.DecodeRecord([]byte(line))
			if err != nil {
				t.Fatal(err)
			}
			leaf := tlog.RecordHash([]byte(line))
			rows = append(rows, []string{fmt.Sprint(r.Seq), r.ID, hex.EncodeToString(leaf[:]), fmt.Sprint(r.Time.UnixNano()), auditPrincipal(r), string(r.Decision)})
		}
		return rows
	}
	compare := func(name string, want [][]string, cols ...string) {
		t.Helper()
		duckdbAgrees(t, got[name], "audit query", 1, name, want, cols...)
	}
	compare("principals", distinct("-distinct", "principal"), "k", "records", "first", "last")
	compare("alice_objects", distinct("-principal", "alice", "-distinct", "object"), "k", "records", "first", "last")
	compare("key_records", records("-bucket", "lake", "-key", oddKey), "seq", "id", "leaf_hash", "time_ns", "principal", "decision")
	compare("bob_window", records("-principal", "bob", "-since", since, "-until", until), "seq", "id", "leaf_hash", "time_ns", "principal", "decision")
	all := records()
	var empties [4]int
	err := audit.Query(context.Background(), os.DirFS(dir), audit.Filter{}, func(r *audit.Record, _ []byte) error {
		switch {
		case r.Principal == nil:
			empties[1]++
		case len(r.Principal.Groups) == 0:
			empties[0]++
		}
		switch {
		case r.Prefix == nil:
			empties[3]++
		case *r.Prefix == "":
			empties[2]++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if empties[0] == 0 || empties[2] == 0 {
		t.Fatalf("the log has no empty groups or prefix to test: %v", empties)
	}
	compare("empties", [][]string{{fmt.Sprint(empties[0]), fmt.Sprint(empties[1]), fmt.Sprint(empties[2]), fmt.Sprint(empties[3])}},
		"empty_groups", "null_groups", "empty_prefix", "null_prefix")
	compare("all", [][]string{{fmt.Sprint(len(all)), fmt.Sprint(len(all)), "0", fmt.Sprint(len(all) - 1), "node-1", "2026-11-30,2026-12-01"}},
		"records", "seqs", "first", "last", "nodes", "days")
}

// duckdbAgrees fails unless DuckDB's rows for query name, read in cols,
// are want, what source (the audit command) answered, with at least
// minRows rows (a comparison of nothing proves nothing).
func duckdbAgrees(t *testing.T, rows []map[string]any, source string, minRows int, name string, want [][]string, cols ...string) {
	t.Helper()
	var have [][]string
	for _, row := range rows {
		var cells []string
		for _, c := range cols {
			cells = append(cells, fmt.Sprint(row[c]))
		}
		have = append(have, cells)
	}
	if len(want) < minRows || fmt.Sprint(have) != fmt.Sprint(want) {
		t.Fatalf("%s: DuckDB returned\n%v\n%s\n%v", name, have, source, want)
	}
	t.Logf("%s: %d rows agree", name, len(want))
}

// sqlString quotes s as an SQL string literal.
func sqlString(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// duckdb runs the queries with node over @duckdb/node-api, installed
// (npm ci, from testdata/duckdb's lock file) into the user's cache
// directory once per lock file.
func duckdb(t *testing.T, queries map[string]string) map[string][]map[string]any {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal("node is required (Node.js 20 or later, with npm): DuckDB's engine is installed from npm")
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		t.Fatal("npm is required (it comes with Node.js): DuckDB's engine is installed from npm")
	}
	lock, err := os.ReadFile(filepath.Join("testdata", "duckdb", "package-lock.json"))
	if err != nil {
		t.Fatal(err)
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		t.Fatalf("no cache directory for the DuckDB install (set HOME or XDG_CACHE_HOME): %v", err)
	}
	sum := sha256.Sum256(lock)
	home := filepath.Join(cache, "countersign", "duckdb-node-"+hex.EncodeToString(sum[:6]))
	if _, err := os.Stat(filepath.Join(home, "node_modules", "@duckdb", "node-api", "package.json")); err != nil {
		if err := os.MkdirAll(filepath.Dir(home), 0o755); err != nil {
			t.Fatal(err)
		}
		tmp, err := os.MkdirTemp(filepath.Dir(home), ".install-")
		if err != nil {
			t.Fatal(err)
		}
		defer os.RemoveAll(tmp)
		for _, f := range []string{"package.json", "package-lock.json"} {
			b, err := os.ReadFile(filepath.Join("testdata", "duckdb", f))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(tmp, f), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		cmd := exec.Command(npm, "ci", "--no-audit", "--no-fund")
		cmd.Dir = tmp
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("npm ci of testdata/duckdb: %v\n%s", err, b)
		}
		// A concurrent run may have installed it first: either is fine.
		if err := os.Rename(tmp, home); err != nil {
			if _, serr := os.Stat(filepath.Join(home, "node_modules")); serr != nil {
				t.Fatal(err)
			}
		}
	}
	// The script runs from the install so that its import resolves there.
	script, err := os.ReadFile(filepath.Join("testdata", "duckdb", "query.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	scriptPath := filepath.Join(home, fmt.Sprintf("query-%d.mjs", os.Getpid()))
	if err := os.WriteFile(scriptPath, script, 0o644); err != nil {
		t.Fatal(err)
	}
	defer os.Remove(scriptPath)
	qb, _ := json.Marshal(queries)
	qpath := filepath.Join(work, "queries.json")
	if err := os.WriteFile(qpath, qb, 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(node, scriptPath, qpath)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("node %s: %v\n%s", scriptPath, err, stderr.Bytes())
	}
	var res map[string][]map[string]any
	dec := json.NewDecoder(&stdout)
	dec.UseNumber()
	if err := dec.Decode(&res); err != nil {
		t.Fatalf("DuckDB's answer: %v", err)
	}
	return res
}
