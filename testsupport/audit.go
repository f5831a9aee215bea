package testsupport

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/mod/sumdb/note"
)

// AuditDir is a countersign audit directory with its keys, for the
// audit.dir, audit.checkpoint_key_file and audit.hmac_key_file settings.
type AuditDir struct {
	Dir             string // not created: countersign creates it
	SignerKeyFile   string
	VerifierKeyFile string // for countersign audit verify -pubkey
	HMACKeyFile     string
}

// NewAuditDir makes keys the way `countersign audit keygen` does: an
// Ed25519 note key named keyName and 32 random bytes for the token HMAC.
func NewAuditDir(t testing.TB, keyName string) *AuditDir {
	t.Helper()
	base := t.TempDir()
	skey, vkey, err := note.GenerateKey(rand.Reader, keyName)
	if err != nil {
		t.Fatal(err)
	}
	var h [32]byte
	rand.Read(h[:])
	a := &AuditDir{
		Dir:             filepath.Join(base, "audit"),
		SignerKeyFile:   filepath.Join(base, "checkpoint.key"),
		VerifierKeyFile: filepath.Join(base, "checkpoint.pub"),
		HMACKeyFile:     filepath.Join(base, "hmac.key"),
	}
	for name, content := range map[string]string{a.SignerKeyFile: skey, a.VerifierKeyFile: vkey, a.HMACKeyFile: hex.EncodeToString(h[:])} {
		if err := os.WriteFile(name, []byte(content+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return a
}
