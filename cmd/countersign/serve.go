package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/countersign/countersign/internal/lograte"
	"github.com/countersign/countersign/server"
)

// logBurst is how many lines of one warning or error message serve logs
// per second; three, so the canned mode's triple warning shows whole.
const logBurst = 3

func runServe(ctx context.Context, args []string, stdout, stderr io.Writer) (code int) {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	configPath := fs.String("config", "", "YAML configuration file")
	dev := fs.Bool("dev", false, "development mode: embedded defaults, example policy, generated credentials; NOT for production")
	canned := cannedFlag(fs)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	// Warnings and errors repeat per request while a dependency is down
	// (a full audit disk refuses every request): at most logBurst lines a
	// second of each message, the rest counted (lograte).
	logs := lograte.New(slog.NewJSONHandler(stderr, nil), lograte.Options{Interval: time.Second, Burst: logBurst})
	defer logs.Flush(context.Background()) // runs last: the counts of the shutdown too
	log := slog.New(logs)

	if *configPath == "" && !*dev {
		fmt.Fprintln(stderr, "countersign serve: -config FILE is required (or -dev for a local development setup)")
		return 2
	}
	cfg, err := loadServeConfig(*configPath, *dev)
	if err != nil {
		fmt.Fprintln(stderr, "countersign:", err)
		return 1
	}

	tlsConfig, err := cfg.TLS.build()
	if err != nil {
		fmt.Fprintln(stderr, "countersign:", err)
		return 1
	}
	// The floor has no audit writer: it keeps the runtime's own GOMAXPROCS.
	cfg.Runtime.apply(log, !*canned && cfg.Audit.KeepsP())
	var srv *server.Server
	var closeStages func() error
	if *canned {
		srv, closeStages, err = buildCannedServer(cfg, tlsConfig, log)
	} else {
		srv, closeStages, err = buildSigningServer(ctx, cfg, tlsConfig, *dev, log)
	}
	if err != nil {
		fmt.Fprintln(stderr, "countersign:", err)
		return 1
	}
	defer func() {
		// A log that could not be sealed (a full disk) is a failed stop:
		// the exit code says so, as the log line does.
		if err := closeStages(); err != nil && code == 0 {
			code = 1
		}
	}()
	// Both listeners open before either serves: a failure leaves nothing
	// serving while the stages close.
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		fmt.Fprintf(stderr, "countersign: listen: %v\n", err)
		return 1
	}
	var adminLn net.Listener
	if cfg.AdminListen != "" {
		if adminLn, err = net.Listen("tcp", cfg.AdminListen); err != nil {
			ln.Close()
			fmt.Fprintf(stderr, "countersign: admin_listen: %v\n", err)
			return 1
		}
	}
	if *dev {
		if err := printDevBanner(stdout, cfg, ln.Addr().String()); err != nil {
			fmt.Fprintln(stderr, "countersign:", err)
			return 1
		}
	}
	log.Info("countersign serving", "addr", ln.Addr().String(), "tls", tlsConfig != nil, "version", version, "dev", *dev)

	errc := make(chan error, 2)
	if adminLn != nil {
		srv.DisableMetricsOnSignListener()
		admin := &http.Server{Handler: srv.AdminHandler(), ReadHeaderTimeout: 10 * time.Second}
		defer admin.Close()
		go func() { errc <- admin.Serve(adminLn) }()
		log.Info("admin endpoints serving", "addr", adminLn.Addr().String())
	}
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		log.Error("server stopped", "err", err)
		return 1
	case <-ctx.Done():
	}
	log.Info("shutting down")
	done := make(chan error, 1)
	go func() { done <- srv.Shutdown() }()
	grace := cfg.Limits.shutdownGrace()
	select {
	case err := <-done:
		if err != nil {
			log.Error("shutdown", "err", err)
			return 1
		}
	case <-time.After(grace):
		log.Error("shutdown grace period expired with requests in flight")
		return 1
	}
	return 0
}

// loadServeConfig is serve's configuration: the file (or -dev's embedded
// defaults, or both), the environment, -dev's generated secrets, checked.
func loadServeConfig(path string, dev bool) (Config, error) {
	var base Config
	if dev {
		base = devConfig()
	}
	cfg, err := loadConfig(path, base)
	if err != nil {
		return cfg, err
	}
	if dev {
		if err := fillDevSecrets(&cfg); err != nil {
			return cfg, fmt.Errorf("dev setup: %w", err)
		}
	}
	return cfg, cfg.validate(dev)
}
