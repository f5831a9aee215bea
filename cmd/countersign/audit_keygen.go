package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/countersign/countersign/audit"
)

// runAuditKeygen implements `countersign audit keygen`.
func runAuditKeygen(_ context.Context, args []string, stdout, stderr io.Writer) int {
	fs := auditFlagSet("audit keygen", stderr)
	name := fs.String("name", "", "key name shown in checkpoint signatures, e.g. countersign-audit-prod (required)")
	out := fs.String("out", "", "directory to write checkpoint.key, checkpoint.pub and hmac.key into (required)")
	if !auditParseFlags(fs, args, stderr, 0) {
		return 2
	}
	if *name == "" || *out == "" {
		fmt.Fprintln(stderr, "countersign audit keygen: -name and -out are required")
		return 2
	}
	skey, vkey, hkey, err := audit.GenerateKeys(*name)
	if err != nil {
		fmt.Fprintln(stderr, "countersign audit keygen:", err)
		return 2
	}
	if err := os.MkdirAll(*out, 0o700); err != nil {
		fmt.Fprintln(stderr, "countersign audit keygen:", err)
		return 1
	}
	files := []struct {
		name, data string
		mode       os.FileMode
	}{
		{"checkpoint.key", skey, 0o600},
		{"checkpoint.pub", vkey, 0o644},
		{"hmac.key", hkey, 0o600},
	}
	for _, f := range files {
		if _, err := os.Stat(filepath.Join(*out, f.name)); err == nil {
			fmt.Fprintf(stderr, "countersign audit keygen: %s exists; not overwriting a key\n", filepath.Join(*out, f.name))
			return 1
		}
	}
	for _, f := range files {
		path := filepath.Join(*out, f.name)
		fh, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, f.mode)
		if err == nil {
			_, err = fh.WriteString(f.data + "\n")
			if cerr := fh.Close(); err == nil {
				err = cerr
			}
		}
		if err != nil {
			fmt.Fprintln(stderr, "countersign audit keygen:", err)
			return 1
		}
	}
	fmt.Fprintf(stdout, "wrote %s (audit.checkpoint_key_file), %s (audit.hmac_key_file), %s\nverifier key: %s\n",
		filepath.Join(*out, "checkpoint.key"), filepath.Join(*out, "hmac.key"), filepath.Join(*out, "checkpoint.pub"), vkey)
	return 0
}

// runAuditPubkey implements `countersign audit pubkey`.
func runAuditPubkey(_ context.Context, args []string, stdout, stderr io.Writer) int {
	fs := auditFlagSet("audit pubkey", stderr)
	key := fs.String("key", "", "checkpoint signing key file (audit.checkpoint_key_file)")
	if !auditParseFlags(fs, args, stderr, 0) {
		return 2
	}
	if *key == "" {
		fmt.Fprintln(stderr, "countersign audit pubkey: -key FILE is required")
		return 2
	}
	b, err := os.ReadFile(*key)
	if err != nil {
		fmt.Fprintln(stderr, "countersign audit pubkey:", err)
		return 1
	}
	vkey, err := audit.VerifierKey(string(b))
	if err != nil {
		fmt.Fprintln(stderr, "countersign audit pubkey:", err)
		return 1
	}
	fmt.Fprintln(stdout, vkey)
	return 0
}
