//go:build countersign_testhook_skip_decision

package server

import (
	"github.com/countersign/countersign/internal/policyinput"
	"github.com/valyala/fasthttp"
)

// testHookHeader, on a sign request to a binary built with the
// countersign_testhook_skip_decision tag (and only there: testhook_off.go),
// makes countersign sign the request without the policy's decision, with
// everything else as usual (authentication, classification, the caller's
// per-principal session, the audit record). It exists for one test: that
// with per-principal sessions the store itself refuses what the policy
// would have (e2e TestDefenseInDepth).
const testHookHeader = "X-Countersign-Test-Skip-Decision"

func skipDecision(ctx *fasthttp.RequestCtx) bool {
	return string(ctx.Request.Header.Peek(testHookHeader)) == "skip-the-policy"
}

// skippedDecisions allows every target, saying why.
func skippedDecisions(c *call) []decision {
	ds := make([]decision, len(c.req.Targets))
	for i := range ds {
		ds[i] = decision{Decision: policyinput.Decision{Allow: true, Reason: "test hook: the policy's decision was skipped (" + testHookHeader + ")"}}
	}
	return ds
}
