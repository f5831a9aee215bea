package main

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/countersign/countersign/audit"
)

// buildSigningServer closes what it opened, whether it fails part way
// (here at the credentials, after the audit log and the policy) or the
// server is shut down: the audit log's directory lock is free again.
func TestBuildSigningServerClosesWhatItOpened(t *testing.T) {
	cfg := devConfig()
	if err := fillDevSecrets(&cfg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(filepath.Dir(cfg.Audit.Dir)) })
	reopen := func(when string) {
		t.Helper()
		l, err := audit.Open(cfg.Audit.Config, audit.Options{})
		if err != nil {
			t.Fatalf("%s: the audit log was left open: %v", when, err)
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
	log := slog.New(slog.DiscardHandler)

	bad := cfg
	bad.Credentials.SecretAccessKey = ""
	if _, _, err := buildSigningServer(context.Background(), bad, nil, true, log); err == nil || !strings.Contains(err.Error(), "config credentials") {
		t.Fatalf("got %v, want the credentials error", err)
	}
	reopen("after a failed build")

	srv, closeAll, err := buildSigningServer(context.Background(), cfg, nil, true, log)
	if err != nil || srv == nil {
		t.Fatalf("build: %v", err)
	}
	if err := closeAll(); err != nil {
		t.Fatalf("close: %v", err)
	}
	reopen("after closing")
}

// TestClassifierOfBothServers: the signing server and the canned floor
// build their classifier with newClassifier, so a config both refuse for
// its endpoints is refused the same way by each.
func TestClassifierOfBothServers(t *testing.T) {
	cfg := devConfig()
	if err := fillDevSecrets(&cfg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(filepath.Dir(cfg.Audit.Dir)) })
	log := slog.New(slog.DiscardHandler)
	bad := cfg
	bad.Endpoints = nil
	_, _, errSigning := buildSigningServer(context.Background(), bad, nil, true, log)
	_, _, errCanned := buildCannedServer(bad, nil, log)
	want := "config endpoints: s3req: at least one endpoint must be configured"
	if errSigning == nil || errCanned == nil || errSigning.Error() != want || errCanned.Error() != want {
		t.Fatalf("signing server: %v; canned: %v; want %q from both", errSigning, errCanned, want)
	}
	if _, _, err := buildCannedServer(cfg, nil, log); err != nil {
		t.Fatalf("canned server of the dev config: %v", err)
	}
}
