package conformance

import (
	"sync"

	"github.com/countersign/countersign/testsupport"
)

const (
	testIssuer   = "https://idp.conformance.test"
	testAudience = "countersign"
	testKID      = "conformance-key-1"
)

// testIdP is the identity provider countersign trusts in these tests.
var testIdP = testsupport.IdP{Issuer: testIssuer, Audience: testAudience, KID: testKID}

// defaultToken is the principal most tests sign as.
var defaultToken = sync.OnceValue(func() string { return testIdP.Mint("lake-writer", []string{"lakehouse-writers"}, nil) })
