package manifests

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

const dashboardFile = "../../grafana/countersign-dashboard.json"

// dashboardMetrics are the only metric names the dashboard may query.
// pending: not exported by countersign yet (the rest of the audit issue's
// metrics: queue depth, failures, checkpoint age, upload; the names are
// the dashboard's proposal: rename here and in the dashboard if the audit
// package settles on others). Every name not
// pending must be a string literal somewhere in countersign's Go code, so
// a renamed metric breaks this test instead of a panel.
var dashboardMetrics = map[string]bool{
	"countersign_requests_total":       false,
	"countersign_decisions_total":      false,
	"countersign_auth_failures_total":  false,
	"countersign_policy_reloads_total": false,
	"countersign_policy_revision":      false,
	"countersign_stage_seconds":        false, // histogram: _bucket, _sum, _count
	"countersign_audit_records_total":  false,
	"countersign_audit_batches_total":  false,
	"countersign_audit_batch_records":  false, // histogram
	"countersign_audit_fsync_seconds":  false, // histogram

	"countersign_audit_queue_depth":                       true,
	"countersign_audit_failures_total":                    true,
	"countersign_audit_last_checkpoint_timestamp_seconds": true,
	"countersign_audit_segments_pending_upload":           true,
	"countersign_audit_uploads_total":                     true,
}

// metricFamily maps a histogram series (_bucket, _sum, _count) to its
// histogram's name, and any other name to itself.
func metricFamily(name string) string {
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(name, suffix); ok {
			if _, known := dashboardMetrics[base]; known {
				return base
			}
		}
	}
	return name
}

var (
	promString   = regexp.MustCompile(`"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|` + "`[^`]*`")
	promMatchers = regexp.MustCompile(`\{[^{}]*\}`)
	promRange    = regexp.MustCompile(`\[[^\]]*\]`)
	promGrouping = regexp.MustCompile(`\b(by|without|on|ignoring|group_left|group_right)\s*\([^()]*\)`)
	promVariable = regexp.MustCompile(`\$\{[^}]*\}|\$\w+`)
	promIdent    = regexp.MustCompile(`[A-Za-z_:][A-Za-z0-9_:]*`)
	promKeywords = []string{"by", "without", "on", "ignoring", "group_left", "group_right", "and", "or", "unless", "bool", "offset", "inf", "nan", "atan2"}
)

// promMetricNames returns the metric names a PromQL expression selects:
// identifiers outside strings, label matchers, ranges and grouping
// clauses that are neither function calls nor keywords.
func promMetricNames(expr string) []string {
	s := promVariable.ReplaceAllString(expr, " ")
	s = promString.ReplaceAllString(s, `""`)
	for prev := ""; prev != s; {
		prev = s
		s = promMatchers.ReplaceAllString(s, " ")
	}
	s = promRange.ReplaceAllString(s, " ")
	s = promGrouping.ReplaceAllString(s, " ")
	var names []string
	for _, loc := range promIdent.FindAllStringIndex(s, -1) {
		id := s[loc[0]:loc[1]]
		if slices.Contains(promKeywords, strings.ToLower(id)) {
			continue
		}
		if loc[0] > 0 && (s[loc[0]-1] >= '0' && s[loc[0]-1] <= '9' || s[loc[0]-1] == '.') {
			continue // a number's exponent or unit, e.g. 1e3
		}
		rest := strings.TrimLeft(s[loc[1]:], " \t\n")
		if strings.HasPrefix(rest, "(") {
			continue // a function or aggregation
		}
		names = append(names, id)
	}
	return names
}

func TestPromMetricNames(t *testing.T) {
	got := promMetricNames(`histogram_quantile(0.99, sum by (le, stage) (rate(countersign_stage_seconds_bucket{namespace=~"$namespace", stage!="x{y}"}[$__rate_interval]))) / on(pod) group_left(revision) countersign_policy_revision == bool 1 and up offset 5m`)
	want := []string{"countersign_stage_seconds_bucket", "countersign_policy_revision", "up"}
	if !slices.Equal(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
}

// dashboardPanel is the part of a Grafana panel the test reads.
type dashboardPanel struct {
	ID         int              `json:"id"`
	Type       string           `json:"type"`
	Title      string           `json:"title"`
	Datasource *json.RawMessage `json:"datasource"`
	GridPos    *struct {
		H, W, X, Y int
	} `json:"gridPos"`
	Targets []struct {
		RefID string `json:"refId"`
		Expr  string `json:"expr"`
	} `json:"targets"`
	Panels []dashboardPanel `json:"panels"` // a collapsed row's panels
}

func TestGrafanaDashboard(t *testing.T) {
	data, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		UID        string           `json:"uid"`
		Title      string           `json:"title"`
		Panels     []dashboardPanel `json:"panels"`
		Templating struct {
			List []struct {
				Name  string          `json:"name"`
				Type  string          `json:"type"`
				Query json.RawMessage `json:"query"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(data, &dash); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	if dash.UID == "" || dash.Title == "" || len(dash.Panels) == 0 {
		t.Fatalf("%s: want uid, title and panels", dashboardFile)
	}

	used := map[string]bool{}
	check := func(where, expr string) {
		names := promMetricNames(expr)
		if len(names) == 0 {
			t.Errorf("%s: %q selects no metric", where, expr)
		}
		for _, n := range names {
			fam := metricFamily(n)
			if _, ok := dashboardMetrics[fam]; !ok {
				t.Errorf("%s: %q uses %s, which is not a countersign metric of this test's list", where, expr, n)
			}
			used[fam] = true
		}
	}
	ids := map[int]bool{}
	var walk func([]dashboardPanel)
	walk = func(ps []dashboardPanel) {
		for _, p := range ps {
			if ids[p.ID] {
				t.Errorf("panel %q: duplicate id %d", p.Title, p.ID)
			}
			ids[p.ID] = true
			if p.GridPos == nil || p.GridPos.W <= 0 || p.GridPos.H <= 0 || p.GridPos.X+p.GridPos.W > 24 {
				t.Errorf("panel %q: bad gridPos", p.Title)
			}
			walk(p.Panels)
			if p.Type == "row" {
				continue
			}
			if p.Datasource == nil || !strings.Contains(string(*p.Datasource), "${datasource}") {
				t.Errorf("panel %q: datasource must be the ${datasource} variable", p.Title)
			}
			if len(p.Targets) == 0 {
				t.Errorf("panel %q has no queries", p.Title)
			}
			for _, tg := range p.Targets {
				check("panel "+p.Title+" "+tg.RefID, tg.Expr)
			}
		}
	}
	walk(dash.Panels)
	for _, v := range dash.Templating.List {
		if v.Type != "query" {
			continue
		}
		var q struct {
			Query string `json:"query"`
		}
		if err := json.Unmarshal(v.Query, &q); err != nil {
			var s string
			if json.Unmarshal(v.Query, &s) != nil {
				t.Errorf("variable %s: query %s", v.Name, v.Query)
				continue
			}
			q.Query = s
		}
		inner, ok := strings.CutPrefix(q.Query, "label_values(")
		if !ok {
			t.Errorf("variable %s: query %q is not label_values(...)", v.Name, q.Query)
			continue
		}
		sel, _, _ := strings.Cut(promMatchers.ReplaceAllString(inner, ""), ",")
		check("variable "+v.Name, sel)
	}

	// The names not pending must exist in countersign's code.
	defined := definedMetrics(t)
	for name, pending := range dashboardMetrics {
		switch {
		case !pending && !defined[name]:
			t.Errorf("%s is on the dashboard but no longer defined in countersign's code", name)
		case pending && defined[name]:
			t.Logf("%s is now defined in the code: mark it not pending", name)
		case pending:
			t.Logf("dashboard metric %s: pending (not exported yet)", name)
		}
		if !used[name] {
			t.Errorf("%s is in the list but on no panel", name)
		}
	}
	for name := range defined {
		if _, ok := dashboardMetrics[name]; !ok {
			t.Logf("countersign defines %s, which no panel shows", name)
		}
	}
}

// definedMetrics collects the "countersign_..." string literals of the
// repository's non-test Go files.
func definedMetrics(t *testing.T) map[string]bool {
	t.Helper()
	lit := regexp.MustCompile(`"(countersign_[a-z0-9_]+)"`)
	found := map[string]bool{}
	err := filepath.WalkDir(repoDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); path != repoDir && (strings.HasPrefix(n, ".") || n == "testdata" || n == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range lit.FindAllSubmatch(b, -1) {
			found[string(m[1])] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return found
}
