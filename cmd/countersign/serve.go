package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"time"

	"github.com/countersign/countersign/deploy/policies"
	"github.com/countersign/countersign/policy"
	"github.com/countersign/countersign/remotesign"
	"github.com/countersign/countersign/s3req"
	"github.com/countersign/countersign/server"
	"github.com/countersign/countersign/signer"
)

func runServe(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	configPath := fs.String("config", "", "YAML configuration file")
	dev := fs.Bool("dev", false, "development mode: embedded defaults, example policy, generated credentials; NOT for production")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	log := slog.New(slog.NewJSONHandler(stderr, nil))

	var cfg Config
	if *dev {
		cfg = devConfig()
	}
	if *configPath != "" {
		var err error
		if cfg, err = loadConfig(*configPath, cfg); err != nil {
			fmt.Fprintln(stderr, "countersign:", err)
			return 1
		}
	} else if !*dev {
		fmt.Fprintln(stderr, "countersign serve: -config FILE is required (or -dev for a local development setup)")
		return 2
	}
	applyEnv(&cfg)
	if *dev && cfg.Credentials.Source == "static" && cfg.Credentials.AccessKeyID == "" {
		cfg.Credentials.AccessKeyID, cfg.Credentials.SecretAccessKey = generateDevKeys()
	}
	if err := cfg.validate(*dev); err != nil {
		fmt.Fprintln(stderr, "countersign:", err)
		return 1
	}

	srv, err := build(ctx, cfg, *dev, log)
	if err != nil {
		fmt.Fprintln(stderr, "countersign:", err)
		return 1
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		fmt.Fprintf(stderr, "countersign: listen: %v\n", err)
		return 1
	}
	if *dev {
		printDevBanner(stdout, cfg, ln.Addr().String())
	}
	log.Info("countersign serving", "addr", ln.Addr().String(), "version", version, "dev", *dev)

	errc := make(chan error, 1)
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
	grace := cfg.Limits.ShutdownGracePeriod
	if grace <= 0 {
		grace = 30 * time.Second
	}
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

// build wires the stages of the signing pipeline from configuration.
func build(ctx context.Context, cfg Config, dev bool, log *slog.Logger) (*server.Server, error) {
	classifier, err := s3req.New(s3req.Options{
		Endpoints:       cfg.Endpoints,
		AllowUnsafeKeys: cfg.Keys.AllowUnsafe,
		MaxDeleteKeys:   cfg.Limits.MaxDeleteKeys,
	})
	if err != nil {
		return nil, fmt.Errorf("config endpoints: %w", err)
	}

	popts := policy.Options{Paths: cfg.Policy.Paths}
	if dev && len(cfg.Policy.Paths) == 0 {
		popts = policy.Options{FS: policies.Dev()}
	}
	engine, err := policy.Load(ctx, popts)
	if err != nil {
		return nil, fmt.Errorf("config policy: %w", err)
	}
	log.Info("policy loaded", "revision", engine.Revision())

	creds, err := signer.NewCredentials(ctx, cfg.Credentials)
	if err != nil {
		return nil, fmt.Errorf("config credentials: %w", err)
	}
	sign := signer.New(creds, signer.Options{})

	h, err := server.NewHandler(classifier, engine, sign, server.Options{
		BasePaths:      cfg.BasePaths,
		CacheableReads: cfg.CacheableReads,
		Limits:         remotesign.Limits{MaxHeaders: cfg.Limits.MaxHeaders},
	}, log)
	if err != nil {
		return nil, err
	}
	return server.New(h, server.Config{
		MaxBodyBytes:   cfg.Limits.MaxBodyBytes,
		ReadTimeout:    cfg.Limits.ReadTimeout,
		WriteTimeout:   cfg.Limits.WriteTimeout,
		IdleTimeout:    cfg.Limits.IdleTimeout,
		MaxConcurrency: cfg.Limits.MaxConcurrency,
	}), nil
}

// devConfig is serve -dev's embedded default: a local S3-compatible server
// on port 7070 (e.g. versitygw), path-style or virtual-hosted under
// localhost, region us-east-1, the embedded dev policy.
func devConfig() Config {
	return Config{
		Listen: "127.0.0.1:8181",
		Endpoints: []s3req.Endpoint{
			{Name: "dev", Scheme: "http", Host: "localhost", Port: 7070, Regions: []string{"us-east-1"}},
			{Name: "dev-ip", Scheme: "http", Host: "127.0.0.1", Port: 7070, Addressing: s3req.AddressingPath, Regions: []string{"us-east-1"}},
		},
		Credentials: signer.CredentialsConfig{Source: "static"},
	}
}

// generateDevKeys makes throwaway credentials so -dev never needs a secret.
// Point a dev S3 server at them (they are printed once at startup).
func generateDevKeys() (accessKeyID, secret string) {
	b := make([]byte, 30)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return "CSDEV" + strings.ToUpper(hex.EncodeToString(b[:8])), hex.EncodeToString(b[10:])
}

func printDevBanner(w io.Writer, cfg Config, addr string) {
	ep := cfg.Endpoints[0]
	fmt.Fprintf(w, `
countersign is running in DEVELOPMENT mode. Do not use it in production:
it signs with development credentials under an example policy that lets
any caller use the "warehouse" bucket.

  sign endpoint : http://%[1]s/v1/aws/s3/sign
  S3 endpoint   : %[2]s://%[3]s:%[4]d (regions %[5]s)
`, addr, ep.Scheme, ep.Host, ep.Port, strings.Join(ep.Regions, ","))
	if strings.HasPrefix(cfg.Credentials.AccessKeyID, "CSDEV") {
		fmt.Fprintf(w, `
Generated signing credentials (start your dev S3 server with them):
  access key id : %s
  secret key    : %s
  e.g. versitygw --access %[1]s --secret %[2]s --port 127.0.0.1:%[3]d posix /tmp/s3data
`, cfg.Credentials.AccessKeyID, cfg.Credentials.SecretAccessKey, ep.Port)
	}
	fmt.Fprintf(w, `
Iceberg catalog properties (Spark/Java):
  s3.remote-signing-enabled=true
  s3.signer.uri=http://%[1]s
  s3.endpoint=%[2]s://%[3]s:%[4]d
  s3.path-style-access=true
PyIceberg:
  s3.signer=S3V4RestSigner
  s3.signer.uri=http://%[1]s
  s3.endpoint=%[2]s://%[3]s:%[4]d

`, addr, ep.Scheme, ep.Host, ep.Port)
}
