// Package e2e tests countersign as users run it: the real binary, started
// with a config file, signing requests that a real S3 server (versitygw,
// which verifies SigV4 like AWS) then serves or refuses.
package e2e

import (
	"os"
	"testing"

	"github.com/countersign/countersign/testsupport"
)

// servers starts this module's countersign, versitygw and SeaweedFS processes;
// TestMain builds the binaries once per test run.
var servers = &testsupport.Servers{AccessKey: testAccessKey, SecretKey: testSecretKey, Region: testRegion}

func TestMain(m *testing.M) {
	// COUNTERSIGN_E2E_BUILDFLAGS=-race runs the server under the race
	// detector too (make e2e does).
	os.Exit(testsupport.Main(m, servers, testsupport.Build{Name: "e2e", FlagsEnv: "COUNTERSIGN_E2E_BUILDFLAGS", SeaweedFS: true}))
}
