package main

import (
	"crypto/tls"
	"flag"
	"log/slog"

	"github.com/countersign/countersign/metrics"
	"github.com/countersign/countersign/remotesign"
	"github.com/countersign/countersign/server"
)

// cannedFlagName turns on serve's benchmark-only canned-response mode, the
// floor "countersign bench -floor-url" compares the full path with. It is a
// command-line flag only: there is no configuration key and -dev does not
// imply it, so no config file or default can ever turn it on.
const cannedFlagName = "bench-canned-responses-i-know-this-signs-nothing"

// cannedFlag registers the canned-response flag on serve's flag set.
func cannedFlag(fs *flag.FlagSet) *bool {
	return fs.Bool(cannedFlagName, false,
		"BENCHMARK ONLY: answer every well-formed sign request with a canned, FAKE signature; "+
			"authentication, policy, audit and signing are all skipped (the floor for countersign bench)")
}

// buildCannedServer builds the benchmark floor: the real HTTP server,
// routing, request decoding, classifier (the configured endpoints) and
// response encoding, and server.CannedStages for the rest. Its /readyz
// always fails.
func buildCannedServer(cfg Config, tlsConfig *tls.Config, log *slog.Logger) (*server.Server, func() error, error) {
	for range 3 {
		log.Error("BENCHMARK CANNED-RESPONSE MODE (-" + cannedFlagName + "): " +
			"no authentication, no policy, no audit, FAKE signatures. For measuring countersign's floor only; never route real traffic here.")
	}
	classifier, err := newClassifier(cfg)
	if err != nil {
		return nil, nil, err
	}
	h, err := server.NewHandler(server.CannedStages(classifier), server.Options{
		BasePaths:      cfg.BasePaths,
		Metrics:        metrics.New(),
		RequestTimeout: cfg.Limits.RequestTimeout,
		Limits:         remotesign.Limits{MaxHeaders: cfg.Limits.MaxHeaders},
	}, log)
	if err != nil {
		return nil, nil, err
	}
	return server.New(h, cfg.Limits.serverConfig(tlsConfig), server.CannedReadiness()), func() error { return nil }, nil
}
