package catalog

import "strings"

// credentialKey reports whether a config key carries a credential, or
// settings that let an engine reach storage other than through
// countersign's signatures: an engine that has them can bypass signing.
// The list covers Iceberg's FileIO properties for S3, GCS and ADLS and the
// AWS client factory's (docs/design.md, "Catalog front"); any key whose
// last part names a secret, a token, a key or a password is treated as
// one too, so that a catalog's own additions fail closed.
func credentialKey(k string) bool {
	switch k {
	case "s3.access-key-id", "s3.secret-access-key", "s3.session-token",
		"s3.session-token-expires-at-ms", "s3.refresh-credentials-endpoint",
		"s3.refresh-credentials-enabled", "s3.profile-name",
		"gcs.oauth2.token", "gcs.oauth2.token-expires-at",
		"gcs.oauth2.refresh-credentials-endpoint", "gcs.oauth2.refresh-credentials-enabled",
		"adls.refresh-credentials-endpoint", "adls.refresh-credentials-enabled",
		"client.refresh-credentials-endpoint", "client.refresh-credentials-enabled",
		"client.credentials-provider", "client.factory":
		return true
	}
	for _, p := range []string{
		"adls.sas-token", "adls.auth.shared-key", "adls.token",
		"client.assume-role.", "client.credentials-provider.", "client.credential",
		"s3.signer", "signer.", "s3.remote-signing", "rest.remote-signing.",
	} {
		if strings.HasPrefix(k, p) {
			return true
		}
	}
	last := k[strings.LastIndexByte(k, '.')+1:]
	for _, s := range []string{"secret", "password", "access-key", "session-token", "sas-token", "shared-key", "private-key"} {
		if strings.Contains(last, s) {
			return true
		}
	}
	return false
}
