package metrics

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestAuditMetrics(t *testing.T) {
	m := New()
	m.WatchAudit(func() AuditState {
		return AuditState{Healthy: true, QueueDepth: 3, Failures: 2, TreeSize: 10, LastCheckpoint: time.Unix(1700000000, 0)}
	})
	m.AuditBatch(4, time.Millisecond)
	m.CountAuditDecision("deny")
	m.SetPolicyRevision("a")
	m.SetPolicyRevision("b")
	want := `
# HELP countersign_audit_queue_depth Records waiting for the audit writer.
# TYPE countersign_audit_queue_depth gauge
countersign_audit_queue_depth 3
# HELP countersign_audit_failures_total Audit write/sync failures; each stops signing until recovery.
# TYPE countersign_audit_failures_total counter
countersign_audit_failures_total 2
# HELP countersign_audit_last_checkpoint_timestamp_seconds Unix time of the newest signed checkpoint.
# TYPE countersign_audit_last_checkpoint_timestamp_seconds gauge
countersign_audit_last_checkpoint_timestamp_seconds 1.7e+09
# HELP countersign_audit_records_total Audit records made durable.
# TYPE countersign_audit_records_total counter
countersign_audit_records_total 4
# HELP countersign_audit_records_by_decision_total Durable access records by decision.
# TYPE countersign_audit_records_by_decision_total counter
countersign_audit_records_by_decision_total{decision="deny"} 1
# HELP countersign_policy_revision 1 for the policy revision currently deciding.
# TYPE countersign_policy_revision gauge
countersign_policy_revision{revision="b"} 1
`
	err := testutil.GatherAndCompare(m.Registry, strings.NewReader(want),
		"countersign_audit_queue_depth", "countersign_audit_failures_total", "countersign_audit_last_checkpoint_timestamp_seconds",
		"countersign_audit_records_total", "countersign_audit_records_by_decision_total", "countersign_policy_revision")
	if err != nil {
		t.Fatal(err)
	}
}

func TestNilMetricsRecordNothing(t *testing.T) {
	var m *Metrics
	m.AuditBatch(0, 0)
	m.CountAuditDecision("allow")
	m.SetPolicyRevision("x")
	m.PolicyReloaded(nil)
	m.WatchAudit(nil)
}

func TestScopeFallbacks(t *testing.T) {
	m := New()
	m.ScopeFallback("read")
	m.ScopeFallback("read")
	m.ScopeFallback("")
	want := `
# HELP countersign_scope_fallbacks_total Session-policy scopes granted bucket-wide because the policy is not expressible as key prefixes, by access class.
# TYPE countersign_scope_fallbacks_total counter
countersign_scope_fallbacks_total{access=""} 1
countersign_scope_fallbacks_total{access="read"} 2
`
	if err := testutil.GatherAndCompare(m.Registry, strings.NewReader(want), "countersign_scope_fallbacks_total"); err != nil {
		t.Fatal(err)
	}
	var nilM *Metrics
	nilM.ScopeFallback("read")
}

// TestCountAuditDecision: every decision is counted under its own label,
// the resolved ones (allow, deny) as the others.
func TestCountAuditDecision(t *testing.T) {
	m := New()
	for _, d := range []string{"allow", "allow", "deny", "error", "allow"} {
		m.CountAuditDecision(d)
	}
	for d, want := range map[string]float64{"allow": 3, "deny": 1, "error": 1} {
		if got := testutil.ToFloat64(m.AuditDecisions.WithLabelValues(d)); got != want {
			t.Errorf("%s: %v, want %v", d, got, want)
		}
	}
}
