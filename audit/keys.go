package audit

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"golang.org/x/mod/sumdb/note"
)

// Keys are files an operator manages: the checkpoint signer key (an
// Ed25519 note key in golang.org/x/mod/sumdb/note's text form, so any note
// tool verifies countersign's checkpoints) and the HMAC key for tokens.

// GenerateKeys returns a new checkpoint signer key, its verifier key, and
// an HMAC key (32 random bytes, hex). name is the key name shown in
// checkpoint signatures, e.g. "countersign-audit-prod".
func GenerateKeys(name string) (signerKey, verifierKey, hmacKey string, err error) {
	signerKey, verifierKey, err = note.GenerateKey(rand.Reader, name)
	if err == nil {
		// GenerateKey writes any name; one with a space or a '+' makes a
		// key nothing can read back.
		_, err = note.NewSigner(signerKey)
	}
	if err != nil {
		return "", "", "", fmt.Errorf("audit: key name %q: a key name is printable, without spaces or '+' (%w)", name, err)
	}
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", "", "", err
	}
	return signerKey, verifierKey, hex.EncodeToString(b[:]), nil
}

// VerifierKey derives the verifier (public) key from a note signer key.
func VerifierKey(signerKey string) (string, error) {
	signerKey = strings.TrimSpace(signerKey)
	// PRIVATE+KEY+<name>+<hash>+<base64(alg || seed)>, as note.GenerateKey
	// writes it; note.NewSigner checks the name, hash and algorithm.
	s, err := note.NewSigner(signerKey)
	if err != nil {
		return "", fmt.Errorf("audit: not a note signer key: %w", err)
	}
	// The key is the fifth field; base64 may itself contain '+'.
	parts := strings.SplitN(signerKey, "+", 5)
	if len(parts) != 5 {
		return "", errors.New("audit: not a note signer key")
	}
	raw, err := base64.StdEncoding.DecodeString(parts[4])
	if err != nil || len(raw) != 1+ed25519.SeedSize || raw[0] != 1 {
		return "", errors.New("audit: not an Ed25519 note signer key")
	}
	pub := ed25519.NewKeyFromSeed(raw[1:]).Public().(ed25519.PublicKey)
	vkey, err := note.NewEd25519VerifierKey(s.Name(), pub)
	if err != nil {
		return "", err
	}
	if v, err := note.NewVerifier(vkey); err != nil || v.KeyHash() != s.KeyHash() {
		return "", errors.New("audit: derived verifier key does not match the signer key")
	}
	return vkey, nil
}

// ParseVerifiers parses verifier keys (one per line or argument; blank
// lines and lines starting with '#' skipped) into the set verify accepts.
// Several keys verify a log whose checkpoint key was rotated.
func ParseVerifiers(keys ...string) (note.Verifiers, error) {
	var list []note.Verifier
	for _, k := range keys {
		n := 0
		for line := range strings.Lines(k) {
			n++
			line = strings.TrimSpace(line)
			if line == "" || strings.HasPrefix(line, "#") {
				continue
			}
			// The text is never quoted: what is not a verifier key may be
			// a secret given by mistake (the signer key, the HMAC key).
			if strings.HasPrefix(line, "PRIVATE+KEY+") {
				return nil, fmt.Errorf("audit: line %d is a checkpoint signer (private) key, not a verifier key: give its verifier key (countersign audit pubkey -key FILE) and keep the signer key secret", n)
			}
			v, err := note.NewVerifier(line)
			if err != nil {
				return nil, fmt.Errorf("audit: line %d is not a checkpoint verifier key (NAME+HASH+KEY, as countersign audit pubkey prints it): %w", n, err)
			}
			list = append(list, v)
		}
	}
	if len(list) == 0 {
		return nil, errors.New("audit: no verifier key")
	}
	return note.VerifierList(list...), nil
}

// loadSigner reads the checkpoint key: Options.CheckpointKey, else the
// configured file.
func loadSigner(cfg Config, opts Options, log *slog.Logger) (note.Signer, error) {
	text := opts.CheckpointKey
	if text == "" {
		if cfg.CheckpointKeyFile == "" {
			return nil, errors.New("audit.checkpoint_key_file is required (create one with: countersign audit keygen -name NAME -out DIR)")
		}
		b, err := readSecretFile(cfg.CheckpointKeyFile, "audit.checkpoint_key_file", log)
		if err != nil {
			return nil, err
		}
		text = string(b)
	}
	s, err := note.NewSigner(strings.TrimSpace(text))
	if err != nil {
		return nil, fmt.Errorf("audit.checkpoint_key_file: not a note signer key: %w", err)
	}
	return s, nil
}

// loadHMACKey reads the token HMAC key: Options.HMACKey, else the file.
func loadHMACKey(cfg Config, opts Options, log *slog.Logger) ([]byte, error) {
	key := opts.HMACKey
	if key == nil {
		if cfg.HMACKeyFile == "" {
			return nil, errors.New("audit.hmac_key_file is required (create one with: countersign audit keygen -name NAME -out DIR)")
		}
		b, err := readSecretFile(cfg.HMACKeyFile, "audit.hmac_key_file", log)
		if err != nil {
			return nil, err
		}
		key = bytes.TrimSpace(b)
	}
	if len(key) < minHMACKeyLen {
		return nil, fmt.Errorf("audit.hmac_key_file: key is %d bytes, at least %d required", len(key), minHMACKeyLen)
	}
	return key, nil
}

// readSecretFile reads a key file and warns when others may read it.
func readSecretFile(path, name string, log *slog.Logger) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if fi, err := os.Stat(path); err == nil && fi.Mode().Perm()&0o077 != 0 {
		log.Warn("audit key file is readable by others", "key", name, "path", path, "mode", fi.Mode().Perm().String())
	}
	return b, nil
}
