package conformance

import (
	"testing"

	"github.com/countersign/countersign/testsupport"
)

// iamGateway is a versitygw S3 gateway backed by versitygw's standalone IAM
// service (testsupport.IAMGateway, whose comment says how temporary
// credentials that versitygw validates are made), with the gateway as this
// module's s3Server.
type iamGateway struct {
	*s3Server
	*testsupport.IAMGateway
}

func startS3WithIAM(t testing.TB) *iamGateway {
	t.Helper()
	g := servers.StartS3WithIAM(t)
	return &iamGateway{&s3Server{g.S3}, g}
}
