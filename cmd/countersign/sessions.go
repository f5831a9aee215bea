package main

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/countersign/countersign/metrics"
	"github.com/countersign/countersign/session"
	"github.com/countersign/countersign/signer"
)

// sessionRenewInterval is how often the per-principal session cache looks
// for sessions due for renewal (besides when a request nudges it).
const sessionRenewInterval = 30 * time.Second

// newSessionCache builds the per-principal session cache of
// credentials.per_principal (nil when it is off) and registers it in
// purge, which the policy manager's reload empties. Session policies are
// compiled from scopes' scope compiler (scopedPolicies).
func newSessionCache(ctx context.Context, cfg signer.CredentialsConfig, scopes policyScoper, m *metrics.Metrics, log *slog.Logger, purge *atomic.Pointer[session.Cache]) (*session.Cache, error) {
	if !cfg.PerPrincipal {
		return nil, nil
	}
	minter, err := signer.NewSessionMinter(ctx, cfg)
	if err != nil {
		return nil, err
	}
	var sm *metrics.SessionMetrics
	c, err := session.NewCache(session.CacheOptions{
		Minter: minter, Policies: scopedPolicies{scopes}, Duration: cfg.Duration, Logger: log,
		OnMint: func(cr session.Credentials, renewal, ok bool) {
			sm.Minted(renewal, ok)
			if ok {
				log.Info("per-principal session minted", "access_key_id", cr.AccessKeyID, "source_identity", cr.SourceIdentity,
					"session_name", cr.SessionName, "expires", cr.Expires, "renewal", renewal)
			}
		},
	})
	if err != nil {
		return nil, fmt.Errorf("credentials.per_principal: %w", err)
	}
	sm = m.WatchSessions(c.Len)
	purge.Store(c)
	c.Start(sessionRenewInterval)
	return c, nil
}
