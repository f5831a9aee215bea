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
	var base Config
	if *dev {
		base = devConfig()
	}
	cfg, err := loadConfig(*configPath, base)
	if err != nil {
		fmt.Fprintln(stderr, "countersign:", err)
		return 1
	}
	if *dev {
		if err := fillDevSecrets(&cfg); err != nil {
			fmt.Fprintln(stderr, "countersign: dev setup:", err)
			return 1
		}
	}
	if err := cfg.validate(*dev); err != nil {
		fmt.Fprintln(stderr, "countersign:", err)
		return 1
	}

	tlsConfig, err := cfg.TLS.build()
	if err != nil {
		fmt.Fprintln(stderr, "countersign:", err)
		return 1
	}
	cfg.Runtime.apply(log)
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
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		fmt.Fprintf(stderr, "countersign: listen: %v\n", err)
		return 1
	}
	defer func() {
		// A log that could not be sealed (a full disk) is a failed stop:
		// the exit code says so, as the log line does.
		if err := closeStages(); err != nil && code == 0 {
			code = 1
		}
	}()
	if *dev {
		if err := printDevBanner(stdout, cfg, ln.Addr().String()); err != nil {
			fmt.Fprintln(stderr, "countersign:", err)
			return 1
		}
	}
	log.Info("countersign serving", "addr", ln.Addr().String(), "tls", tlsConfig != nil, "version", version, "dev", *dev)

	errc := make(chan error, 2)
	go func() { errc <- srv.Serve(ln) }()
	if cfg.AdminListen != "" {
		srv.DisableMetricsOnSignListener()
		adminLn, err := net.Listen("tcp", cfg.AdminListen)
		if err != nil {
			fmt.Fprintf(stderr, "countersign: admin_listen: %v\n", err)
			return 1
		}
		admin := &http.Server{Handler: srv.AdminHandler(), ReadHeaderTimeout: 10 * time.Second}
		defer admin.Close()
		go func() { errc <- admin.Serve(adminLn) }()
		log.Info("admin endpoints serving", "addr", adminLn.Addr().String())
	}
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
