package e2e

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/mod/sumdb/note"
)

// auditDir is a countersign audit directory with its keys.
type auditDir struct {
	dir           string
	signerKeyFile string
	hmacKeyFile   string
	verifierKey   string
	verifierFile  string
}

// newAuditDir makes keys the way `countersign audit keygen` does (an
// Ed25519 note key and 32 random bytes for the token HMAC).
func newAuditDir(t testing.TB) *auditDir {
	t.Helper()
	base := t.TempDir()
	skey, vkey, err := note.GenerateKey(rand.Reader, "countersign-e2e")
	if err != nil {
		t.Fatal(err)
	}
	var h [32]byte
	rand.Read(h[:])
	a := &auditDir{
		dir:           filepath.Join(base, "audit"),
		signerKeyFile: filepath.Join(base, "checkpoint.key"),
		hmacKeyFile:   filepath.Join(base, "hmac.key"),
		verifierFile:  filepath.Join(base, "checkpoint.pub"),
		verifierKey:   vkey,
	}
	for name, content := range map[string]string{a.signerKeyFile: skey, a.hmacKeyFile: hex.EncodeToString(h[:]), a.verifierFile: vkey} {
		if err := os.WriteFile(name, []byte(content+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return a
}
