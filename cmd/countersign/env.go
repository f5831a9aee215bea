package main

import "os"

// envOverride is an environment variable that may carry a secret instead
// of the configuration file, and the field it sets.
type envOverride struct {
	name  string
	field *string
}

// envOverrides lists every such variable: the one place they are read
// (loadConfig applies them to every configuration it returns).
func envOverrides(cfg *Config) []envOverride {
	return []envOverride{
		{"COUNTERSIGN_ACCESS_KEY_ID", &cfg.Credentials.AccessKeyID},
		{"COUNTERSIGN_SECRET_ACCESS_KEY", &cfg.Credentials.SecretAccessKey},
		{"COUNTERSIGN_SESSION_TOKEN", &cfg.Credentials.SessionToken},
		{"COUNTERSIGN_AUDIT_UPLOAD_SECRET_ACCESS_KEY", &cfg.Audit.Upload.SecretAccessKey},
		{"COUNTERSIGN_AUDIT_HMAC_KEY", &cfg.Audit.HMACKey},
		{"COUNTERSIGN_AUTH_HS256_SECRET", &cfg.Auth.HS256Secret},
	}
}

// applyEnv sets each field whose variable is set and not empty.
func applyEnv(cfg *Config) {
	for _, o := range envOverrides(cfg) {
		if v := os.Getenv(o.name); v != "" {
			*o.field = v
		}
	}
}
