package metrics

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestSessionMetrics(t *testing.T) {
	m := New()
	s := m.WatchSessions(func() int { return 3 })
	s.Minted(false, true)
	s.Minted(false, true)
	s.Minted(true, true)
	s.Minted(true, false)
	want := `
# HELP countersign_session_mints_total STS AssumeRole calls for per-principal sessions, by kind (mint, renewal) and result (ok, error).
# TYPE countersign_session_mints_total counter
countersign_session_mints_total{kind="mint",result="ok"} 2
countersign_session_mints_total{kind="renewal",result="error"} 1
countersign_session_mints_total{kind="renewal",result="ok"} 1
# HELP countersign_sessions_cached Per-principal sessions in the cache.
# TYPE countersign_sessions_cached gauge
countersign_sessions_cached 3
`
	if err := testutil.GatherAndCompare(m.Registry, strings.NewReader(want), "countersign_session_mints_total", "countersign_sessions_cached"); err != nil {
		t.Fatal(err)
	}
	var nilM *Metrics
	nilM.WatchSessions(func() int { return 0 }).Minted(true, true) // records nothing, no panic
}
