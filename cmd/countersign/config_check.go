package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"reflect"
	"strings"
	"time"

	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"

	"github.com/countersign/countersign/policy"
	"github.com/countersign/countersign/signer"
)

const configCheckUsage = `Usage:
  countersign config check [-load-policy] FILE

  Validates FILE as "serve -config FILE" would, without starting anything:
  strict YAML decoding (unknown keys are errors naming key and line), the
  environment overrides (COUNTERSIGN_*), then every section's checks
  (listen, admin_listen, auth, endpoints, credentials keys, policy source,
  audit, tls). Prints "ok" and exits 0, or prints the error naming the
  offending key and exits 1.

  Nothing is contacted over the network: the JWKS is not fetched, signing
  credentials are not retrieved, the policy is not loaded (unless
  -load-policy) and the audit directory and keys are not opened. Local
  files named by tls.* are read (as serve does before listening).
`

// runConfigCmd implements `countersign config check`.
func runConfigCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return commands{prog: "countersign config", usage: configCheckUsage, table: map[string]command{
		"check": runConfigCheck,
	}}.run(ctx, args, stdout, stderr)
}

// runConfigCheck implements "countersign config check [-load-policy] FILE"
// (args are what follows "check").
func runConfigCheck(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("config check", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, configCheckUsage, "\nFlags:\n"); fs.PrintDefaults() }
	loadPolicy := fs.Bool("load-policy", false, "also load and compile the policy (reads policy.paths or policy.bundle.file; downloads policy.bundle.url)")
	pos, ok := parseInterspersed(fs, args)
	if !ok {
		return 2
	}
	if len(pos) != 1 {
		fmt.Fprintln(stderr, "countersign config check: give exactly one configuration FILE")
		fs.Usage()
		return 2
	}
	if err := checkConfigFile(ctx, pos[0], *loadPolicy); err != nil {
		fmt.Fprintln(stderr, "countersign config check:", err)
		return 1
	}
	fmt.Fprintln(stdout, "ok")
	return 0
}

// checkConfigFile runs serve's configuration path up to, but not
// including, anything that contacts the network or starts work: errors
// are the ones serve would stop with, each naming its key.
func checkConfigFile(ctx context.Context, path string, loadPolicy bool) error {
	cfg, err := loadConfig(path, Config{})
	if err != nil {
		return err
	}
	if err := cfg.validate(false); err != nil {
		return err
	}
	// serve fails on these only when it listens: check the form here.
	for _, l := range []struct{ key, addr string }{{"listen", cfg.Listen}, {"admin_listen", cfg.AdminListen}} {
		if l.addr == "" {
			continue
		}
		if _, port, err := net.SplitHostPort(l.addr); err != nil || port == "" {
			return fmt.Errorf("config: %s %q must be host:port (e.g. 0.0.0.0:8181)", l.key, l.addr)
		}
	}
	// validate runs the auth, policy and audit checks; running them again
	// keeps this check complete should validate ever stop doing so (they
	// are idempotent: they only fill defaults). serve checks endpoints in
	// s3req.New, credentials in signer.NewCredentials.
	if err := cfg.Auth.Validate(); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	for i := range cfg.Endpoints {
		ep := &cfg.Endpoints[i]
		if err := ep.Validate(); err != nil {
			return fmt.Errorf("config: endpoints[%d]: %w", i, err)
		}
	}
	if err := cfg.Policy.Validate(); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	if err := cfg.Audit.Validate(); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	// NewCredentials checks the credentials.* keys for the chosen source
	// and builds the provider; it fetches nothing (serve's readiness check
	// does). For "default" and "assume-role" it reads the AWS environment
	// (AWS_* variables, shared config files) of the machine running the
	// check, as serve would of its own.
	if _, err := signer.NewCredentials(ctx, cfg.Credentials); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	if _, err := cfg.TLS.build(); err != nil {
		return err
	}
	if loadPolicy {
		pm, err := policy.NewManager(ctx, cfg.Policy, policy.ManagerOptions{})
		if err != nil {
			return fmt.Errorf("config policy: %w", err)
		}
		pm.Close()
	}
	return nil
}

var checkDurationType = reflect.TypeFor[time.Duration]()

// locateDurationError finds the first duration key of Config in the YAML
// document data whose value time.ParseDuration refuses, and returns an
// error naming its position and key path ("[12:17] limits.read_timeout:
// ..."); nil when there is none (or data does not parse).
func locateDurationError(data []byte) error {
	f, err := parser.ParseBytes(data, 0)
	if err != nil || len(f.Docs) == 0 {
		return nil
	}
	return walkDurations(reflect.TypeFor[Config](), f.Docs[0].Body, "")
}

func walkDurations(t reflect.Type, n ast.Node, path string) error {
	for {
		switch v := n.(type) {
		case *ast.AnchorNode:
			n = v.Value
			continue
		case *ast.TagNode:
			n = v.Value
			continue
		}
		break
	}
	if n == nil {
		return nil
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t == checkDurationType:
		pos := n.GetToken().Position
		switch v := n.(type) {
		case *ast.NullNode:
			return nil
		case *ast.StringNode:
			if _, err := time.ParseDuration(v.Value); err != nil {
				return fmt.Errorf("[%d:%d] %s: %w (use a Go duration such as 500ms, 10s, 2m, 1h)", pos.Line, pos.Column, path, err)
			}
			return nil
		default:
			return fmt.Errorf("[%d:%d] %s: %q is not a duration (use a Go duration such as 500ms, 10s, 2m, 1h)", pos.Line, pos.Column, path, n.GetToken().Value)
		}
	case t.Kind() == reflect.Struct:
		var pairs []*ast.MappingValueNode
		switch v := n.(type) {
		case *ast.MappingNode:
			pairs = v.Values
		case *ast.MappingValueNode:
			pairs = []*ast.MappingValueNode{v}
		}
		// Inline structs (audit.Config inside AuditConfig) share the mapping.
		for i := range t.NumField() {
			if sf := t.Field(i); strings.Contains(sf.Tag.Get("yaml"), ",inline") {
				if err := walkDurations(sf.Type, n, path); err != nil {
					return err
				}
			}
		}
		for _, kv := range pairs {
			if kv.Key == nil {
				continue
			}
			name := kv.Key.GetToken().Value
			for i := range t.NumField() {
				sf := t.Field(i)
				tag, _, _ := strings.Cut(sf.Tag.Get("yaml"), ",")
				if tag == "" {
					tag = strings.ToLower(sf.Name)
				}
				if tag != name {
					continue
				}
				key := name
				if path != "" {
					key = path + "." + name
				}
				if err := walkDurations(sf.Type, kv.Value, key); err != nil {
					return err
				}
			}
		}
	case t.Kind() == reflect.Slice:
		if seq, ok := n.(*ast.SequenceNode); ok {
			for i, e := range seq.Values {
				if err := walkDurations(t.Elem(), e, fmt.Sprintf("%s[%d]", path, i)); err != nil {
					return err
				}
			}
		}
	}
	return nil
}
