// Package upload moves sealed audit segments off the node: each finished
// segment and its checkpoints file is copied to an S3 bucket (with Object
// Lock retention when configured), the copy is verified, and only then is
// the local file removed. BucketFS reads the uploaded log back as an fs.FS,
// so audit.Verify and audit.Query work on the bucket (or, with UnionFS, on
// the bucket and the local directory together).
package upload

import (
	"fmt"
	"net/url"
	"strings"
	"time"
)

// Defaults and limits.
const (
	DefaultInterval = 30 * time.Second
	// minInterval keeps a misconfigured interval from turning the uploader
	// into a tight LIST/HEAD loop against the bucket; seals wake it anyway.
	minInterval = time.Second

	// Retry backoff after a failed pass: doubling from DefaultRetryMin,
	// capped so an outage is noticed at most this long after it ends.
	DefaultRetryMin = time.Second
	DefaultRetryMax = 5 * time.Minute
)

// Object Lock modes (S3's x-amz-object-lock-mode values).
const (
	LockGovernance = "GOVERNANCE"
	LockCompliance = "COMPLIANCE"
)

// Config is the upload section, under "audit.upload:" in countersign's
// configuration. Errors name keys as audit.upload.<key>.
type Config struct {
	// Bucket receives the segments. Empty: upload is off and segments stay
	// on the node.
	Bucket string `yaml:"bucket"`
	// Prefix is prepended to every object key. Default "<node_id>/", so
	// several nodes can share a bucket without their segment names (which
	// start at seq 0 on every node) colliding.
	Prefix string `yaml:"prefix"`
	// Endpoint is a custom S3 endpoint URL (MinIO, versitygw, Ceph...).
	// Requests to it use path-style addressing, which every S3-compatible
	// server supports, unlike virtual-hosted buckets that need DNS.
	// Empty: AWS S3.
	Endpoint string `yaml:"endpoint"`
	// Region of the bucket. Default: the AWS environment's (AWS_REGION,
	// shared config); "us-east-1" with a custom endpoint.
	Region string `yaml:"region"`
	// ObjectLockMode is "", GOVERNANCE or COMPLIANCE. When set, every object
	// is written with that mode and a retain-until date Retention from now,
	// and the upload only counts as verified if the bucket reports the lock.
	// The bucket must have Object Lock enabled. Empty: no per-object
	// retention (a bucket default retention still applies).
	ObjectLockMode string `yaml:"object_lock_mode"`
	// Retention is how long each object is locked. Required with, and only
	// with, object_lock_mode. Go duration syntax: seven years is "61362h".
	Retention time.Duration `yaml:"retention"`
	// Interval between scans for finished segments not yet uploaded. Seals
	// trigger an upload at once; the scan catches what a restart or a
	// failure left behind. Default 30s, at least 1s.
	Interval time.Duration `yaml:"interval"`
	// KeepLocal keeps local segments after a verified upload (default
	// false: they are removed, only ever after verification).
	KeepLocal bool `yaml:"keep_local"`
	// AccessKeyID and SecretAccessKey are static credentials for tests and
	// development; leave both empty for the AWS default chain (environment,
	// shared files, web identity, ECS/EC2 roles). The secret can be set from
	// the environment by the caller instead of the file.
	AccessKeyID     string `yaml:"access_key_id"`
	SecretAccessKey string `yaml:"secret_access_key"`
}

// Enabled reports whether upload is configured.
func (c Config) Enabled() bool { return c.Bucket != "" }

// withDefaults fills the defaults. nodeID is the audit log's node id, for
// the default prefix.
func (c Config) withDefaults(nodeID string) Config {
	if c.Prefix == "" && nodeID != "" {
		c.Prefix = nodeID + "/"
	}
	if c.Interval == 0 {
		c.Interval = DefaultInterval
	}
	return c
}

// Validate checks the section, naming the key. Everything set is checked
// even when upload is off, so a typo shows before someone turns it on. It
// makes no network request: the bucket being reachable is the uploader's
// business at run time (an unreachable bucket must not stop signing).
func (c Config) Validate() error {
	if c.Bucket != "" && (len(c.Bucket) < 3 || len(c.Bucket) > 63 || strings.ContainsAny(c.Bucket, "/ ")) {
		return fmt.Errorf("audit.upload.bucket %q: not a bucket name", c.Bucket)
	}
	if strings.HasPrefix(c.Prefix, "/") {
		// S3 would store a key with a leading slash, but the console and
		// most tools then show an empty-named folder; it is always a mistake.
		return fmt.Errorf("audit.upload.prefix %q: must not start with '/'", c.Prefix)
	}
	if c.Endpoint != "" {
		u, err := url.Parse(c.Endpoint)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("audit.upload.endpoint %q: must be an http(s) URL", c.Endpoint)
		}
	}
	switch c.ObjectLockMode {
	case "":
		if c.Retention != 0 {
			return fmt.Errorf("audit.upload.retention is set but audit.upload.object_lock_mode is not: retention needs a lock mode (GOVERNANCE or COMPLIANCE)")
		}
	case LockGovernance, LockCompliance:
		if c.Retention < time.Second {
			return fmt.Errorf("audit.upload.retention %s: required with audit.upload.object_lock_mode, at least 1s", c.Retention)
		}
	default:
		return fmt.Errorf("audit.upload.object_lock_mode %q: use GOVERNANCE, COMPLIANCE or leave it empty", c.ObjectLockMode)
	}
	if c.Interval != 0 && c.Interval < minInterval {
		return fmt.Errorf("audit.upload.interval %s: at least %s", c.Interval, minInterval)
	}
	if (c.AccessKeyID == "") != (c.SecretAccessKey == "") {
		return fmt.Errorf("audit.upload.access_key_id and audit.upload.secret_access_key: set both or neither (neither uses the AWS default credential chain)")
	}
	return nil
}
