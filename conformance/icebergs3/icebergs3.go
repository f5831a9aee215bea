// Package icebergs3 gives iceberg-go (v0.7.0, which has no remote signing of
// its own and refuses s3.remote-signing-enabled) remote S3 request signing:
// it re-registers iceberg-go's "s3" IO scheme so that every S3 request of a
// table, catalog or scan is signed by a remote signer such as countersign.
//
// The seam: iceberg-go's own S3 FileIO (io/gocloud/s3, which stays
// registered for "s3a" and "s3n") takes its aws.Config from the context
// (utils.WithAwsConfig) when one is there. The "s3" factory registered here
// builds an aws.Config with anonymous credentials whose Finalize "Signing"
// step is replaced by a remotesigning.Client, puts it in the context, and
// hands the location to iceberg-go's factory. The S3 client, its addressing,
// multipart uploads, ranged reads and deletes are all iceberg-go's.
//
// The signer is configured from the same catalog properties the Java client
// reads (s3.signer.uri / signer.uri / uri, s3.signer.endpoint /
// signer.endpoint, token, header.*), so one catalog definition serves both.
package icebergs3

import (
	"context"
	"fmt"
	"net/url"
	"sync"

	"github.com/apache/iceberg-go/io"
	_ "github.com/apache/iceberg-go/io/gocloud/s3" // iceberg-go's S3 FileIO, for s3a
	"github.com/apache/iceberg-go/utils"
	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/countersign/countersign/conformance/remotesigning"
)

// Options tunes the signer and the S3 client built for each FileIO.
type Options struct {
	// HTTPClient sends the S3 requests (nil: iceberg-go's default).
	HTTPClient aws.HTTPClient
	// Configure may adjust the signer configuration derived from the
	// properties (for example to record exchanges).
	Configure func(props map[string]string, cfg *remotesigning.Config)
}

// delegateScheme is the scheme iceberg-go's own S3 factory stays registered
// under (io/gocloud/s3 registers s3, s3a, s3n and oss).
const delegateScheme = "s3a"

var mu sync.Mutex

// Register replaces the "s3" scheme. Locations with it are then only
// reachable through the remote signer named by the catalog properties: a
// FileIO without s3.signer.uri (or signer.uri, uri) fails instead of falling
// back to other credentials.
func Register(opts Options) {
	mu.Lock()
	defer mu.Unlock()
	io.Unregister("s3")
	io.Register("s3", func(ctx context.Context, parsed *url.URL, props map[string]string) (io.IO, error) {
		cfg, err := remotesigning.FromProperties(props)
		if err != nil {
			return nil, fmt.Errorf("s3 remote signing: %w", err)
		}
		region := props[io.S3Region]
		if region == "" {
			region = props[io.S3ClientRegion]
		}
		if region == "" {
			return nil, fmt.Errorf("s3 remote signing: %s is required", io.S3Region)
		}
		cfg.Region = region
		if opts.Configure != nil {
			opts.Configure(props, &cfg)
		}
		signer, err := remotesigning.New(cfg)
		if err != nil {
			return nil, err
		}
		awsCfg := signer.AWSConfig(region, opts.HTTPClient)
		ctx = utils.WithAwsConfig(ctx, &awsCfg)
		delegate := *parsed
		delegate.Scheme = delegateScheme
		return io.LoadFS(ctx, props, delegate.String())
	})
}
