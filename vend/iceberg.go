package vend

import "strconv"

// IcebergConfig is the config of an Iceberg StorageCredential (a
// LoadCredentialsResponse's or a LoadTableResult's storage-credentials)
// for c: the S3FileIO properties of the credentials, plus client.region
// and s3.endpoint when set.
func IcebergConfig(c *Credentials, region, endpoint string) map[string]string {
	config := map[string]string{
		"s3.access-key-id":               c.AccessKeyID,
		"s3.secret-access-key":           c.SecretAccessKey,
		"s3.session-token":               c.SessionToken,
		"s3.session-token-expires-at-ms": strconv.FormatInt(c.Expires.UnixMilli(), 10),
	}
	if region != "" {
		config["client.region"] = region
	}
	if endpoint != "" {
		config["s3.endpoint"] = endpoint
	}
	return config
}
