package conformance

import (
	"os"
	"testing"

	"github.com/countersign/countersign/testsupport"
)

// servers starts this module's countersign, versitygw and SeaweedFS processes;
// TestMain builds the binaries once per test run.
var servers = &testsupport.Servers{AccessKey: testAccessKey, SecretKey: testSecretKey, Region: testRegion}

func TestMain(m *testing.M) {
	// COUNTERSIGN_BIN runs a prebuilt countersign instead of building the
	// one in this work tree; COUNTERSIGN_CONFORMANCE_BUILDFLAGS=-race runs
	// the server under the race detector too (make conformance does).
	os.Exit(testsupport.Main(m, servers, testsupport.Build{
		Name:        "conformance",
		FlagsEnv:    "COUNTERSIGN_CONFORMANCE_BUILDFLAGS",
		PrebuiltEnv: "COUNTERSIGN_BIN",
		SeaweedFS:   true,
	}))
}
