package fleet

import (
	"context"
	"io"
	"path"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// S3Versions lists the versions of a node's objects in a versioned bucket
// (Object Lock buckets always are). The uploader writes every key once
// and never overwrites or deletes a locked version, so any noncurrent
// version is a copy that was replaced, and a delete marker a deleted
// segment: both are copies Verify compares with the current one.
type S3Versions struct {
	Client *s3.Client
	Bucket string
	Prefix string // the fleet's root prefix; the node's keys are Prefix+node+"/"
}

// Versions returns the noncurrent versions and the delete markers under
// the node's prefix.
func (v *S3Versions) Versions(ctx context.Context, node string) ([]Copy, error) {
	prefix := v.Prefix + node + "/"
	var out []Copy
	var keyMarker, versionMarker *string
	for {
		page, err := v.Client.ListObjectVersions(ctx, &s3.ListObjectVersionsInput{
			Bucket: aws.String(v.Bucket), Prefix: aws.String(prefix), KeyMarker: keyMarker, VersionIdMarker: versionMarker,
		})
		if err != nil {
			return nil, err
		}
		for _, o := range page.Versions {
			if aws.ToBool(o.IsLatest) {
				continue // the layer reads it
			}
			key, id := aws.ToString(o.Key), aws.ToString(o.VersionId)
			out = append(out, Copy{Name: path.Base(key), Where: "s3://" + v.Bucket + "/" + key + "?versionId=" + id, Open: func() (io.ReadCloser, error) {
				obj, err := v.Client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(v.Bucket), Key: aws.String(key), VersionId: aws.String(id)})
				if err != nil {
					return nil, err
				}
				return obj.Body, nil
			}})
		}
		for _, m := range page.DeleteMarkers {
			if !aws.ToBool(m.IsLatest) {
				continue
			}
			key := aws.ToString(m.Key)
			out = append(out, Copy{Name: path.Base(key), Where: "a delete marker on s3://" + v.Bucket + "/" + key, Deleted: true})
		}
		if !aws.ToBool(page.IsTruncated) {
			return out, nil
		}
		keyMarker, versionMarker = page.NextKeyMarker, page.NextVersionIdMarker
	}
}
