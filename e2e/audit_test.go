package e2e

import (
	"testing"

	"github.com/countersign/countersign/testsupport"
)

// newAuditDir makes an audit directory's keys, named for this module.
func newAuditDir(t testing.TB) *testsupport.AuditDir {
	t.Helper()
	return testsupport.NewAuditDir(t, "countersign-e2e")
}
