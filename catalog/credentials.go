package catalog

import "strings"

// allowedConfigKey reports whether a config key of a catalog answer (a
// table's config, a view's, /v1/config's defaults and overrides) may pass
// to clients. It is an allow-list of Iceberg's documented client
// properties that carry no credential and do not change how an engine
// reaches storage (S3FileIOProperties, AwsClientProperties, GCPProperties,
// AzureProperties, RESTCatalogProperties, CatalogProperties, PyIceberg's
// and iceberg-go's S3 settings); every other key is dropped, so that a
// catalog's credential under any name (adls.account-key,
// fs.s3a.secret.key, a vendor's own) fails closed. Dropped on purpose,
// though not credentials: the client factories, credential providers and
// refresh endpoints (they let an engine reach storage around
// countersign's signatures), the catalog's own uri and token (a client
// would follow them past the front), header.* (they could set
// Authorization), custom SSE keys, access points, and table-default.* /
// table-override.* (table properties a catalog could fill with anything).
// The keys the front writes itself (remote signing, the refresh endpoint
// of vended credentials) are set after this filter.
func allowedConfigKey(k string) bool {
	if allowedConfigKeys[k] {
		return true
	}
	for _, p := range []string{"s3.write.tags.", "s3.delete.tags."} {
		if rest, ok := strings.CutPrefix(k, p); ok && rest != "" {
			return true
		}
	}
	return false
}

var allowedConfigKeys = map[string]bool{
	// Catalog (REST) client properties.
	"prefix": true, "namespace-separator": true, "warehouse": true,
	"rest-page-size": true, "rest-metrics-reporting-enabled": true, "view-endpoints-supported": true,
	"snapshot-loading-mode": true, "scan-planning-mode": true, "rest-scan-planning.poll-timeout-ms": true,
	"rest-table-cache.expire-after-write-ms": true, "rest-table-cache.max-entries": true,
	"cache-enabled": true, "cache.expiration-interval-ms": true,
	// S3FileIO and the AWS client (Java), PyIceberg, iceberg-go.
	"s3.endpoint": true, "s3.path-style-access": true, "s3.region": true, "client.region": true,
	"s3.force-virtual-addressing": true, "s3.sse.type": true, "s3.acl": true,
	"s3.multipart.num-threads": true, "s3.multipart.part-size-bytes": true, "s3.multipart.threshold": true,
	"s3.use-arn-region-enabled": true, "s3.checksum-enabled": true, "s3.chunked-encoding-enabled": true,
	"s3.delete.batch-size": true, "s3.delete.num-threads": true, "s3.delete-enabled": true,
	"s3.write.table-tag-enabled": true, "s3.write.namespace-tag-enabled": true, "s3.write.storage-class": true,
	"s3.acceleration-enabled": true, "s3.dualstack-enabled": true, "s3.cross-region-access-enabled": true,
	"s3.preload-client-enabled": true, "s3.retry.num-retries": true, "s3.retry.min-wait-ms": true,
	"s3.retry.max-wait-ms": true, "s3.crt.enabled": true, "s3.crt.max-concurrency": true,
	"s3.analytics-accelerator.enabled": true, "s3.connect-timeout": true, "s3.request-timeout": true,
	"client.legacy-md5-plugin-enabled": true,
	// GCSFileIO.
	"gcs.project-id": true, "gcs.service.host": true, "gcs.user-project": true,
	"gcs.channel.read.chunk-size-bytes": true, "gcs.channel.write.chunk-size-bytes": true,
	"gcs.delete.batch-size": true, "gcs.analytics-core.enabled": true,
	// ADLSFileIO.
	"adls.read.block-size-bytes": true, "adls.write.block-size-bytes": true,
}
