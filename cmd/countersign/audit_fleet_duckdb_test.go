package main

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/audit"
	"golang.org/x/mod/sumdb/tlog"
)

// TestAuditFleetDuckDB: three nodes' generated logs, exported into one
// table (node=/day= partitions). DuckDB (from npm) over the export gives
// exactly the rows and counts of `audit fleet query` for the auditor's two
// questions across the fleet: every object one principal touched in the
// month, and who touched one key (and its records, node by node).
func TestAuditFleetDuckDB(t *testing.T) {
	keys := filepath.Join(t.TempDir(), "keys")
	if code, out, errOut := runAuditCmd(t, "keygen", "-name", "fleet-duckdb", "-out", keys); code != 0 {
		t.Fatalf("keygen: %d %s %s", code, out, errOut)
	}
	gen := filepath.Join(t.TempDir(), "gen")
	if code, out, errOut := runAuditCmd(t, "generate", "-out", gen, "-keys", keys, "-records", "30000", "-people", "20"); code != 0 {
		t.Fatalf("generate: %d %s %s", code, out, errOut)
	}
	export := filepath.Join(t.TempDir(), "export")
	for _, n := range []string{"node-1", "node-2", "node-3"} {
		if code, out, errOut := runAuditCmd(t, "export", "-dir", filepath.Join(gen, n), "-out", export); code != 0 {
			t.Fatalf("export %s: %d %s %s", n, code, out, errOut)
		}
	}
	// A key several principals read, on several nodes.
	var key, bucket string
	counts := map[string]map[string]bool{}
	code, out, errOut := runAuditCmd(t, "fleet", "query", "-root", gen, "-kind", "access", "-decision", "allow")
	if code != 0 {
		t.Fatalf("fleet query: %s", errOut)
	}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		r, err := audit.DecodeRecord([]byte(line))
		if err != nil {
			t.Fatal(err)
		}
		if r.Operation != "GetObject" {
			continue
		}
		k := r.Bucket + "\x00" + r.Key
		if counts[k] == nil {
			counts[k] = map[string]bool{}
		}
		counts[k][r.Principal.ID+"@"+r.Node] = true
		if key == "" || len(counts[k]) > len(counts[bucket+"\x00"+key]) {
			bucket, key = r.Bucket, r.Key
		}
	}
	if len(counts[bucket+"\x00"+key]) < 2 {
		t.Fatalf("no key read twice: %s/%s", bucket, key)
	}
	const principal = "user-000"
	table := fmt.Sprintf("read_parquet(%s, hive_partitioning = true)", sqlString(filepath.Join(export, "**", "*.parquet")))
	object := `CASE WHEN prefix IS NOT NULL THEN bucket || '/' || prefix || '*' WHEN key <> '' THEN bucket || '/' || key ELSE bucket END`
	month := `time >= TIMESTAMPTZ '2026-11-01T00:00:00Z' AND time < TIMESTAMPTZ '2026-12-01T00:00:00Z'`
	got := duckdb(t, map[string]string{
		"objects": `SELECT ` + object + ` AS k, count(*) AS records, min(time_ns) AS first, max(time_ns) AS last,
			string_agg(DISTINCT node, ',' ORDER BY node) AS nodes
			FROM ` + table + ` WHERE principal_id = ` + sqlString(principal) + ` AND ` + month + ` GROUP BY 1 ORDER BY 1`,
		"who": `SELECT principal_id AS k, count(*) AS records, min(time_ns) AS first, max(time_ns) AS last,
			string_agg(DISTINCT node, ',' ORDER BY node) AS nodes
			FROM ` + table + ` WHERE bucket = ` + sqlString(bucket) + ` AND key = ` + sqlString(key) + ` GROUP BY 1 ORDER BY 1`,
		"key_records": `SELECT node, seq, leaf_hash, time_ns, principal_id AS principal FROM ` + table + `
			WHERE bucket = ` + sqlString(bucket) + ` AND key = ` + sqlString(key) + ` ORDER BY time_ns, node, seq`,
	})
	distinct := func(args ...string) [][]string {
		code, stdout, stderr := runAuditCmd(t, append([]string{"fleet", "query", "-root", gen}, args...)...)
		if code != 0 {
			t.Fatalf("fleet query %v: %s", args, stderr)
		}
		var rows [][]string
		for _, line := range strings.Split(strings.TrimSpace(stdout), "\n") {
			var m struct {
				Principal, Object string
				Records           int
				First, Last       time.Time
				Nodes             []string
			}
			if err := json.Unmarshal([]byte(line), &m); err != nil {
				t.Fatal(err)
			}
			rows = append(rows, []string{m.Principal + m.Object, fmt.Sprint(m.Records), fmt.Sprint(m.First.UnixNano()), fmt.Sprint(m.Last.UnixNano()), strings.Join(m.Nodes, ",")})
		}
		slices.SortFunc(rows, func(a, b []string) int { return strings.Compare(a[0], b[0]) })
		return rows
	}
	compare := func(name string, want [][]string, cols ...string) {
		t.Helper()
		duckdbAgrees(t, got[name], "audit fleet query", 2, name, want, cols...)
	}
	compare("objects", distinct("-principal", principal, "-since", "2026-11-01", "-until", "2026-12-01", "-distinct", "object"), "k", "records", "first", "last", "nodes")
	compare("who", distinct("-bucket", bucket, "-key", key, "-distinct", "principal"), "k", "records", "first", "last", "nodes")
	code, out, errOut = runAuditCmd(t, "fleet", "query", "-root", gen, "-bucket", bucket, "-key", key)
	if code != 0 {
		t.Fatalf("fleet query: %s", errOut)
	}
	var want [][]string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		r, err := audit.DecodeRecord([]byte(line))
		if err != nil {
			t.Fatal(err)
		}
		leaf := tlog.RecordHash([]byte(line))
		want = append(want, []string{r.Node, fmt.Sprint(r.Seq), hex.EncodeToString(leaf[:]), fmt.Sprint(r.Time.UnixNano()), r.Principal.ID})
	}
	compare("key_records", want, "node", "seq", "leaf_hash", "time_ns", "principal")
}
