package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
)

func TestScratch(t *testing.T) {
	for _, txt := range []string{
		"listen: x\nlimits:\n  read_timeout: 10 seconds\n",
		"listen: x\nlimits:\n  read_timeout: 10\n",
		"listen: x\nauth:\n  leeway: -1s\n",
		"listen: x\nauth:\n  jwks_file: /x\n  issuer: a\n  audience: [b]\n  foo: 1\n",
	} {
		p := filepath.Join(t.TempDir(), "c.yaml")
		os.WriteFile(p, []byte(txt), 0o600)
		var o, e bytes.Buffer
		c := runConfigCheck(context.Background(), []string{p}, &o, &e)
		t.Logf("%d %q %q", c, o.String(), e.String())
	}
	var o, e bytes.Buffer
	c := runConfigCheck(context.Background(), []string{"../../deploy/countersign.example.yaml"}, &o, &e)
	t.Logf("%d %q %q", c, o.String(), e.String())
}
