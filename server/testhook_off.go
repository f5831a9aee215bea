//go:build !countersign_testhook_skip_decision

package server

import "github.com/valyala/fasthttp"

// skipDecision is the defense-in-depth e2e test's hook (testhook_on.go):
// only a binary built with the countersign_testhook_skip_decision tag has
// it. In every other build, production's included, it is this constant
// false, the handler's branch on it is dead code, and the hook's header
// name is not even in the binary (e2e TestSkipDecisionHookNotInProduction
// checks the binary the e2e suite builds, as production is built).
func skipDecision(*fasthttp.RequestCtx) bool { return false }

// skippedDecisions is never called in this build.
func skippedDecisions(*call) []decision { return nil }
