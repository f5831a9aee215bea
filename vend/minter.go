package vend

import (
	"context"

	"github.com/countersign/countersign/session"
)

// Minter mints temporary credentials under a session policy (STS
// AssumeRole: *session.STS). Its Request names the principal
// (RoleSessionName, SourceIdentity, session tags) and carries the session
// policy; an error means nothing was minted, and the mint is answered 503.
type Minter interface {
	Mint(ctx context.Context, r session.Request) (session.Credentials, error)
}
