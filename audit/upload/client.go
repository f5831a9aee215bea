package upload

import (
	"context"
	"fmt"
	"net/http"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// defaultEndpointRegion is the region used with a custom endpoint when none
// is configured: S3-compatible servers mostly ignore it, but SigV4 needs one.
const defaultEndpointRegion = "us-east-1"

// NewClient returns an S3 client for cfg: the AWS default credential chain
// unless static keys are configured, path-style requests to a custom
// endpoint. It makes no request.
func NewClient(ctx context.Context, cfg Config) (*s3.Client, error) {
	return newClient(ctx, cfg, nil)
}

func newClient(ctx context.Context, cfg Config, httpClient *http.Client) (*s3.Client, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	var load []func(*awsconfig.LoadOptions) error
	if cfg.Region != "" {
		load = append(load, awsconfig.WithRegion(cfg.Region))
	}
	if cfg.AccessKeyID != "" {
		load = append(load, awsconfig.WithCredentialsProvider(
			credentials.NewStaticCredentialsProvider(cfg.AccessKeyID, cfg.SecretAccessKey, "")))
	}
	awsCfg, err := awsconfig.LoadDefaultConfig(ctx, load...)
	if err != nil {
		return nil, fmt.Errorf("audit.upload: loading AWS configuration: %w", err)
	}
	if awsCfg.Region == "" {
		if cfg.Endpoint == "" {
			return nil, fmt.Errorf("audit.upload.region: not set, and the AWS environment names none (AWS_REGION)")
		}
		awsCfg.Region = defaultEndpointRegion
	}
	return s3.NewFromConfig(awsCfg, func(o *s3.Options) {
		if cfg.Endpoint != "" {
			o.BaseEndpoint = aws.String(cfg.Endpoint)
			o.UsePathStyle = true
		}
		if httpClient != nil {
			// Set here rather than in LoadDefaultConfig, which refuses a
			// plain *http.Client when AWS_CA_BUNDLE is set: a caller's own
			// client brings its own TLS configuration.
			o.HTTPClient = httpClient
		}
		// Ranged GETs (BucketFS.ReadAt) have no checksum to validate; the
		// SDK would log a line for each one.
		o.DisableLogOutputChecksumValidationSkipped = true
	}), nil
}
