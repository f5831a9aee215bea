package main

import "testing"

// Every override reaches its field through loadConfig, with a file and
// without one (serve -dev), and no secret reaches the configuration's
// digest.
func TestEnvOverrides(t *testing.T) {
	checkTestEnv(t)
	path := writeTemp(t, "listen: 127.0.0.1:8181\n")
	plain, err := loadConfig(path, Config{})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range envOverrides(&Config{}) {
		t.Setenv(o.name, "from-"+o.name)
	}
	for _, p := range []string{path, ""} {
		cfg, err := loadConfig(p, Config{})
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range envOverrides(&cfg) {
			if *o.field != "from-"+o.name {
				t.Errorf("file %q: %s did not reach its field (%q)", p, o.name, *o.field)
			}
		}
		if string(cfg.Audit.hmacKey()) != "from-COUNTERSIGN_AUDIT_HMAC_KEY" {
			t.Errorf("file %q: audit HMAC key %q", p, cfg.Audit.hmacKey())
		}
		// The access key id is no secret: the digest may name it.
		if cfg.Credentials.AccessKeyID = ""; p == path && cfg.digest() != plain.digest() {
			t.Errorf("the digest changes with the secrets from the environment")
		}
	}
	if (&AuditConfig{}).hmacKey() != nil {
		t.Error("no COUNTERSIGN_AUDIT_HMAC_KEY must leave audit.hmac_key_file in force")
	}
}
