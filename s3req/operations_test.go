package s3req

import (
	"slices"
	"strings"
	"testing"

	"github.com/countersign/countersign/remotesign"
)

// s3Operation is one operation of the S3 API reference, in the request
// shape the AWS SDKs send it (method, subresource and query parameters as
// aws-sdk-go-v2's serializers write them), with the operation, IAM action
// and access class countersign must decide it as.
type s3Operation struct {
	api       string // the S3 API reference's name for it
	method    string
	pathQuery string // under bucket "lake": "/k..." for the object k, "?..." or "" for the bucket; "//..." for the service host
	headers   remotesign.Headers
	op        string // OperationUnknown for those countersign does not name
	action    string
	access    Access
}

// s3Operations is the whole S3 API, object and bucket, general purpose and
// directory buckets: every operation of the API reference's list, each in
// every form that changes its IAM action (a versionId, a copy source).
// Operations countersign does not name must be Unknown (s3:Unknown,
// admin), which no grant matches.
var s3Operations = []s3Operation{
	// Objects: the data path.
	{"GetObject", "GET", "/k?x-id=GetObject", nil, "GetObject", "s3:GetObject", AccessRead},
	{"GetObject", "GET", "/k?partNumber=1&response-content-type=text%2Fplain&x-id=GetObject", nil, "GetObject", "s3:GetObject", AccessRead},
	{"GetObject (version)", "GET", "/k?versionId=v1&x-id=GetObject", nil, "GetObject", "s3:GetObjectVersion", AccessRead},
	{"HeadObject", "HEAD", "/k", nil, "HeadObject", "s3:GetObject", AccessRead},
	{"HeadObject (version)", "HEAD", "/k?versionId=null", nil, "HeadObject", "s3:GetObjectVersion", AccessRead},
	{"PutObject", "PUT", "/k?x-id=PutObject", nil, "PutObject", "s3:PutObject", AccessWrite},
	{"CopyObject", "PUT", "/k?x-id=CopyObject", hdrs("x-amz-copy-source", "lake/src"), "CopyObject", "s3:PutObject", AccessWrite},
	{"CopyObject (source version)", "PUT", "/k?x-id=CopyObject", hdrs("x-amz-copy-source", "lake/src?versionId=v1"), "CopyObject", "s3:PutObject", AccessWrite},
	{"DeleteObject", "DELETE", "/k?x-id=DeleteObject", nil, "DeleteObject", "s3:DeleteObject", AccessDelete},
	{"DeleteObject (version)", "DELETE", "/k?versionId=v1&x-id=DeleteObject", nil, "DeleteObject", "s3:DeleteObjectVersion", AccessDeleteVersion},
	{"RenameObject", "PUT", "/k?renameObject", nil, "RenameObject", "s3:PutObject", AccessAdmin},
	// Multipart uploads.
	{"CreateMultipartUpload", "POST", "/k?uploads", nil, "CreateMultipartUpload", "s3:PutObject", AccessWrite},
	{"UploadPart", "PUT", "/k?partNumber=1&uploadId=u&x-id=UploadPart", nil, "UploadPart", "s3:PutObject", AccessWrite},
	{"UploadPartCopy", "PUT", "/k?partNumber=1&uploadId=u&x-id=UploadPartCopy", hdrs("x-amz-copy-source", "lake/src"), "UploadPartCopy", "s3:PutObject", AccessWrite},
	{"UploadPartCopy (source version)", "PUT", "/k?partNumber=1&uploadId=u&x-id=UploadPartCopy", hdrs("x-amz-copy-source", "lake/src?versionId=v1"), "UploadPartCopy", "s3:PutObject", AccessWrite},
	{"CompleteMultipartUpload", "POST", "/k?uploadId=u", nil, "CompleteMultipartUpload", "s3:PutObject", AccessWrite},
	{"AbortMultipartUpload", "DELETE", "/k?uploadId=u&x-id=AbortMultipartUpload", nil, "AbortMultipartUpload", "s3:AbortMultipartUpload", AccessWrite},
	{"ListParts", "GET", "/k?max-parts=10&part-number-marker=1&uploadId=u&x-id=ListParts", nil, "ListParts", "s3:ListMultipartUploadParts", AccessRead},
	{"ListMultipartUploads", "GET", "?uploads&delimiter=%2F&key-marker=a&max-uploads=5&prefix=wh&upload-id-marker=u", nil, "ListMultipartUploads", "s3:ListBucketMultipartUploads", AccessAdmin},
	// Object tagging.
	{"GetObjectTagging", "GET", "/k?tagging", nil, "GetObjectTagging", "s3:GetObjectTagging", AccessRead},
	{"GetObjectTagging (version)", "GET", "/k?tagging&versionId=v1", nil, "GetObjectTagging", "s3:GetObjectVersionTagging", AccessRead},
	{"PutObjectTagging", "PUT", "/k?tagging", nil, "PutObjectTagging", "s3:PutObjectTagging", AccessWrite},
	{"PutObjectTagging (version)", "PUT", "/k?tagging&versionId=v1", nil, "PutObjectTagging", "s3:PutObjectVersionTagging", AccessWrite},
	{"DeleteObjectTagging", "DELETE", "/k?tagging", nil, "DeleteObjectTagging", "s3:DeleteObjectTagging", AccessWrite},
	{"DeleteObjectTagging (version)", "DELETE", "/k?tagging&versionId=v1", nil, "DeleteObjectTagging", "s3:DeleteObjectVersionTagging", AccessWrite},
	// Object ACLs, attributes, lock, restore, select, torrent.
	{"GetObjectAcl", "GET", "/k?acl", nil, "GetObjectAcl", "s3:GetObjectAcl", AccessAdmin},
	{"GetObjectAcl (version)", "GET", "/k?acl&versionId=v1", nil, "GetObjectAcl", "s3:GetObjectVersionAcl", AccessAdmin},
	{"PutObjectAcl", "PUT", "/k?acl", nil, "PutObjectAcl", "s3:PutObjectAcl", AccessAdmin},
	{"PutObjectAcl (version)", "PUT", "/k?acl&versionId=v1", nil, "PutObjectAcl", "s3:PutObjectVersionAcl", AccessAdmin},
	{"GetObjectAttributes", "GET", "/k?attributes", nil, "GetObjectAttributes", "s3:GetObjectAttributes", AccessAdmin},
	{"GetObjectAttributes (version)", "GET", "/k?attributes&versionId=v1", nil, "GetObjectAttributes", "s3:GetObjectVersionAttributes", AccessAdmin},
	{"GetObjectRetention", "GET", "/k?retention", nil, "GetObjectRetention", "s3:GetObjectRetention", AccessAdmin},
	{"GetObjectRetention (version)", "GET", "/k?retention&versionId=v1", nil, "GetObjectRetention", "s3:GetObjectRetention", AccessAdmin},
	{"PutObjectRetention", "PUT", "/k?retention", nil, "PutObjectRetention", "s3:PutObjectRetention", AccessAdmin},
	{"PutObjectRetention (version)", "PUT", "/k?retention&versionId=v1", nil, "PutObjectRetention", "s3:PutObjectRetention", AccessAdmin},
	{"GetObjectLegalHold", "GET", "/k?legal-hold", nil, "GetObjectLegalHold", "s3:GetObjectLegalHold", AccessAdmin},
	{"GetObjectLegalHold (version)", "GET", "/k?legal-hold&versionId=v1", nil, "GetObjectLegalHold", "s3:GetObjectLegalHold", AccessAdmin},
	{"PutObjectLegalHold", "PUT", "/k?legal-hold", nil, "PutObjectLegalHold", "s3:PutObjectLegalHold", AccessAdmin},
	{"PutObjectLegalHold (version)", "PUT", "/k?legal-hold&versionId=v1", nil, "PutObjectLegalHold", "s3:PutObjectLegalHold", AccessAdmin},
	{"RestoreObject", "POST", "/k?restore", nil, "RestoreObject", "s3:RestoreObject", AccessAdmin},
	{"RestoreObject (version)", "POST", "/k?restore&versionId=v1", nil, "RestoreObject", "s3:RestoreObject", AccessAdmin},
	{"SelectObjectContent", "POST", "/k?select&select-type=2", nil, "SelectObjectContent", "s3:GetObject", AccessAdmin},
	{"GetObjectTorrent", "GET", "/k?torrent", nil, "GetObjectTorrent", "s3:GetObjectTorrent", AccessAdmin},
	// Object operations countersign does not name: Unknown.
	{"GetObjectAnnotation", "GET", "/k?annotation&annotationName=a&x-id=GetObjectAnnotation", nil, OperationUnknown, ActionUnknown, AccessAdmin},
	{"PutObjectAnnotation", "PUT", "/k?annotation&annotationName=a", nil, OperationUnknown, ActionUnknown, AccessAdmin},
	{"DeleteObjectAnnotation", "DELETE", "/k?annotation&annotationName=a", nil, OperationUnknown, ActionUnknown, AccessAdmin},
	{"ListObjectAnnotations", "GET", "/k?annotation&x-id=ListObjectAnnotations", nil, OperationUnknown, ActionUnknown, AccessAdmin},
	{"UpdateObjectEncryption", "PUT", "/k?encryption", nil, OperationUnknown, ActionUnknown, AccessAdmin},

	// Buckets: listing and existence.
	{"ListObjectsV2", "GET", "?list-type=2&prefix=wh%2F&delimiter=%2F&max-keys=10&continuation-token=t&start-after=a&encoding-type=url&fetch-owner=true", nil, "ListObjectsV2", "s3:ListBucket", AccessList},
	{"ListObjects", "GET", "?delimiter=%2F&encoding-type=url&marker=m&max-keys=10&prefix=wh", nil, "ListObjects", "s3:ListBucket", AccessList},
	{"ListObjectVersions", "GET", "?versions&delimiter=%2F&encoding-type=url&key-marker=k&max-keys=10&prefix=wh&version-id-marker=v", nil, "ListObjectVersions", "s3:ListBucketVersions", AccessAdmin},
	{"HeadBucket", "HEAD", "", nil, "HeadBucket", "s3:ListBucket", AccessList},
	{"GetBucketLocation", "GET", "?location", nil, "GetBucketLocation", "s3:GetBucketLocation", AccessList},
	{"DeleteObjects", "POST", "?delete", nil, "DeleteObjects", "s3:DeleteObject", AccessDelete},
	{"CreateBucket", "PUT", "", nil, "CreateBucket", "s3:CreateBucket", AccessAdmin},
	{"DeleteBucket", "DELETE", "", nil, "DeleteBucket", "s3:DeleteBucket", AccessAdmin},
	// Directory buckets (S3 Express One Zone).
	{"CreateSession", "GET", "?session", nil, "CreateSession", "s3express:CreateSession", AccessAdmin},
	// Bucket configuration.
	{"GetBucketAcl", "GET", "?acl", nil, "GetBucketAcl", "s3:GetBucketAcl", AccessAdmin},
	{"PutBucketAcl", "PUT", "?acl", nil, "PutBucketAcl", "s3:PutBucketAcl", AccessAdmin},
	{"GetBucketPolicy", "GET", "?policy", nil, "GetBucketPolicy", "s3:GetBucketPolicy", AccessAdmin},
	{"PutBucketPolicy", "PUT", "?policy", nil, "PutBucketPolicy", "s3:PutBucketPolicy", AccessAdmin},
	{"DeleteBucketPolicy", "DELETE", "?policy", nil, "DeleteBucketPolicy", "s3:DeleteBucketPolicy", AccessAdmin},
	{"GetBucketPolicyStatus", "GET", "?policyStatus", nil, "GetBucketPolicyStatus", "s3:GetBucketPolicyStatus", AccessAdmin},
	{"GetBucketCors", "GET", "?cors", nil, "GetBucketCors", "s3:GetBucketCORS", AccessAdmin},
	{"PutBucketCors", "PUT", "?cors", nil, "PutBucketCors", "s3:PutBucketCORS", AccessAdmin},
	{"DeleteBucketCors", "DELETE", "?cors", nil, "DeleteBucketCors", "s3:PutBucketCORS", AccessAdmin},
	{"GetBucketLifecycleConfiguration", "GET", "?lifecycle", nil, "GetBucketLifecycleConfiguration", "s3:GetLifecycleConfiguration", AccessAdmin},
	{"GetBucketLifecycle (deprecated, same request)", "GET", "?lifecycle", nil, "GetBucketLifecycleConfiguration", "s3:GetLifecycleConfiguration", AccessAdmin},
	{"PutBucketLifecycleConfiguration", "PUT", "?lifecycle", nil, "PutBucketLifecycleConfiguration", "s3:PutLifecycleConfiguration", AccessAdmin},
	{"DeleteBucketLifecycle", "DELETE", "?lifecycle", nil, "DeleteBucketLifecycle", "s3:PutLifecycleConfiguration", AccessAdmin},
	{"GetBucketVersioning", "GET", "?versioning", nil, "GetBucketVersioning", "s3:GetBucketVersioning", AccessAdmin},
	{"PutBucketVersioning", "PUT", "?versioning", nil, "PutBucketVersioning", "s3:PutBucketVersioning", AccessAdmin},
	{"GetBucketWebsite", "GET", "?website", nil, "GetBucketWebsite", "s3:GetBucketWebsite", AccessAdmin},
	{"PutBucketWebsite", "PUT", "?website", nil, "PutBucketWebsite", "s3:PutBucketWebsite", AccessAdmin},
	{"DeleteBucketWebsite", "DELETE", "?website", nil, "DeleteBucketWebsite", "s3:DeleteBucketWebsite", AccessAdmin},
	{"GetBucketReplication", "GET", "?replication", nil, "GetBucketReplication", "s3:GetReplicationConfiguration", AccessAdmin},
	{"PutBucketReplication", "PUT", "?replication", nil, "PutBucketReplication", "s3:PutReplicationConfiguration", AccessAdmin},
	{"DeleteBucketReplication", "DELETE", "?replication", nil, "DeleteBucketReplication", "s3:PutReplicationConfiguration", AccessAdmin},
	{"GetBucketNotificationConfiguration", "GET", "?notification", nil, "GetBucketNotificationConfiguration", "s3:GetBucketNotification", AccessAdmin},
	{"PutBucketNotificationConfiguration", "PUT", "?notification", nil, "PutBucketNotificationConfiguration", "s3:PutBucketNotification", AccessAdmin},
	{"GetBucketLogging", "GET", "?logging", nil, "GetBucketLogging", "s3:GetBucketLogging", AccessAdmin},
	{"PutBucketLogging", "PUT", "?logging", nil, "PutBucketLogging", "s3:PutBucketLogging", AccessAdmin},
	{"GetBucketEncryption", "GET", "?encryption", nil, "GetBucketEncryption", "s3:GetEncryptionConfiguration", AccessAdmin},
	{"PutBucketEncryption", "PUT", "?encryption", nil, "PutBucketEncryption", "s3:PutEncryptionConfiguration", AccessAdmin},
	{"DeleteBucketEncryption", "DELETE", "?encryption", nil, "DeleteBucketEncryption", "s3:PutEncryptionConfiguration", AccessAdmin},
	{"GetBucketTagging", "GET", "?tagging", nil, "GetBucketTagging", "s3:GetBucketTagging", AccessAdmin},
	{"PutBucketTagging", "PUT", "?tagging", nil, "PutBucketTagging", "s3:PutBucketTagging", AccessAdmin},
	{"DeleteBucketTagging", "DELETE", "?tagging", nil, "DeleteBucketTagging", "s3:PutBucketTagging", AccessAdmin},
	{"GetObjectLockConfiguration", "GET", "?object-lock", nil, "GetObjectLockConfiguration", "s3:GetBucketObjectLockConfiguration", AccessAdmin},
	{"PutObjectLockConfiguration", "PUT", "?object-lock", nil, "PutObjectLockConfiguration", "s3:PutBucketObjectLockConfiguration", AccessAdmin},
	{"GetPublicAccessBlock", "GET", "?publicAccessBlock", nil, "GetPublicAccessBlock", "s3:GetBucketPublicAccessBlock", AccessAdmin},
	{"PutPublicAccessBlock", "PUT", "?publicAccessBlock", nil, "PutPublicAccessBlock", "s3:PutBucketPublicAccessBlock", AccessAdmin},
	{"DeletePublicAccessBlock", "DELETE", "?publicAccessBlock", nil, "DeletePublicAccessBlock", "s3:PutBucketPublicAccessBlock", AccessAdmin},
	{"GetBucketOwnershipControls", "GET", "?ownershipControls", nil, "GetBucketOwnershipControls", "s3:GetBucketOwnershipControls", AccessAdmin},
	{"PutBucketOwnershipControls", "PUT", "?ownershipControls", nil, "PutBucketOwnershipControls", "s3:PutBucketOwnershipControls", AccessAdmin},
	{"DeleteBucketOwnershipControls", "DELETE", "?ownershipControls", nil, "DeleteBucketOwnershipControls", "s3:PutBucketOwnershipControls", AccessAdmin},
	{"GetBucketAccelerateConfiguration", "GET", "?accelerate", nil, "GetBucketAccelerateConfiguration", "s3:GetAccelerateConfiguration", AccessAdmin},
	{"PutBucketAccelerateConfiguration", "PUT", "?accelerate", nil, "PutBucketAccelerateConfiguration", "s3:PutAccelerateConfiguration", AccessAdmin},
	{"GetBucketRequestPayment", "GET", "?requestPayment", nil, "GetBucketRequestPayment", "s3:GetBucketRequestPayment", AccessAdmin},
	{"PutBucketRequestPayment", "PUT", "?requestPayment", nil, "PutBucketRequestPayment", "s3:PutBucketRequestPayment", AccessAdmin},
	// Configurations kept per id.
	{"GetBucketAnalyticsConfiguration", "GET", "?analytics&id=a&x-id=GetBucketAnalyticsConfiguration", nil, "GetBucketAnalyticsConfiguration", "s3:GetAnalyticsConfiguration", AccessAdmin},
	{"ListBucketAnalyticsConfigurations", "GET", "?analytics&continuation-token=t&x-id=ListBucketAnalyticsConfigurations", nil, "ListBucketAnalyticsConfigurations", "s3:GetAnalyticsConfiguration", AccessAdmin},
	{"PutBucketAnalyticsConfiguration", "PUT", "?analytics&id=a", nil, "PutBucketAnalyticsConfiguration", "s3:PutAnalyticsConfiguration", AccessAdmin},
	{"DeleteBucketAnalyticsConfiguration", "DELETE", "?analytics&id=a", nil, "DeleteBucketAnalyticsConfiguration", "s3:PutAnalyticsConfiguration", AccessAdmin},
	{"GetBucketInventoryConfiguration", "GET", "?inventory&id=a&x-id=GetBucketInventoryConfiguration", nil, "GetBucketInventoryConfiguration", "s3:GetInventoryConfiguration", AccessAdmin},
	{"ListBucketInventoryConfigurations", "GET", "?inventory&x-id=ListBucketInventoryConfigurations", nil, "ListBucketInventoryConfigurations", "s3:GetInventoryConfiguration", AccessAdmin},
	{"PutBucketInventoryConfiguration", "PUT", "?inventory&id=a", nil, "PutBucketInventoryConfiguration", "s3:PutInventoryConfiguration", AccessAdmin},
	{"DeleteBucketInventoryConfiguration", "DELETE", "?inventory&id=a", nil, "DeleteBucketInventoryConfiguration", "s3:PutInventoryConfiguration", AccessAdmin},
	{"GetBucketMetricsConfiguration", "GET", "?metrics&id=a&x-id=GetBucketMetricsConfiguration", nil, "GetBucketMetricsConfiguration", "s3:GetMetricsConfiguration", AccessAdmin},
	{"ListBucketMetricsConfigurations", "GET", "?metrics&x-id=ListBucketMetricsConfigurations", nil, "ListBucketMetricsConfigurations", "s3:GetMetricsConfiguration", AccessAdmin},
	{"PutBucketMetricsConfiguration", "PUT", "?metrics&id=a", nil, "PutBucketMetricsConfiguration", "s3:PutMetricsConfiguration", AccessAdmin},
	{"DeleteBucketMetricsConfiguration", "DELETE", "?metrics&id=a", nil, "DeleteBucketMetricsConfiguration", "s3:PutMetricsConfiguration", AccessAdmin},
	{"GetBucketIntelligentTieringConfiguration", "GET", "?intelligent-tiering&id=a&x-id=GetBucketIntelligentTieringConfiguration", nil, "GetBucketIntelligentTieringConfiguration", "s3:GetIntelligentTieringConfiguration", AccessAdmin},
	{"ListBucketIntelligentTieringConfigurations", "GET", "?intelligent-tiering&x-id=ListBucketIntelligentTieringConfigurations", nil, "ListBucketIntelligentTieringConfigurations", "s3:GetIntelligentTieringConfiguration", AccessAdmin},
	{"PutBucketIntelligentTieringConfiguration", "PUT", "?intelligent-tiering&id=a", nil, "PutBucketIntelligentTieringConfiguration", "s3:PutIntelligentTieringConfiguration", AccessAdmin},
	{"DeleteBucketIntelligentTieringConfiguration", "DELETE", "?intelligent-tiering&id=a", nil, "DeleteBucketIntelligentTieringConfiguration", "s3:PutIntelligentTieringConfiguration", AccessAdmin},
	// S3 Metadata.
	{"CreateBucketMetadataTableConfiguration", "POST", "?metadataTable", nil, "CreateBucketMetadataTableConfiguration", "s3:CreateBucketMetadataTableConfiguration", AccessAdmin},
	{"GetBucketMetadataTableConfiguration", "GET", "?metadataTable", nil, "GetBucketMetadataTableConfiguration", "s3:GetBucketMetadataTableConfiguration", AccessAdmin},
	{"DeleteBucketMetadataTableConfiguration", "DELETE", "?metadataTable", nil, "DeleteBucketMetadataTableConfiguration", "s3:DeleteBucketMetadataTableConfiguration", AccessAdmin},
	{"CreateBucketMetadataConfiguration", "POST", "?metadataConfiguration", nil, "CreateBucketMetadataConfiguration", "s3:CreateBucketMetadataTableConfiguration", AccessAdmin},
	{"GetBucketMetadataConfiguration", "GET", "?metadataConfiguration", nil, "GetBucketMetadataConfiguration", "s3:GetBucketMetadataTableConfiguration", AccessAdmin},
	{"DeleteBucketMetadataConfiguration", "DELETE", "?metadataConfiguration", nil, "DeleteBucketMetadataConfiguration", "s3:DeleteBucketMetadataTableConfiguration", AccessAdmin},
	{"UpdateBucketMetadataInventoryTableConfiguration", "PUT", "?metadataInventoryTable", nil, "UpdateBucketMetadataInventoryTableConfiguration", "s3:UpdateBucketMetadataInventoryTableConfiguration", AccessAdmin},
	{"UpdateBucketMetadataJournalTableConfiguration", "PUT", "?metadataJournalTable", nil, "UpdateBucketMetadataJournalTableConfiguration", "s3:UpdateBucketMetadataJournalTableConfiguration", AccessAdmin},
	// Bucket operations countersign does not name: Unknown.
	{"UpdateBucketMetadataAnnotationTableConfiguration", "PUT", "?metadataAnnotationTable", nil, OperationUnknown, ActionUnknown, AccessAdmin},
	{"GetBucketAbac", "GET", "?abac", nil, OperationUnknown, ActionUnknown, AccessAdmin},
	{"PutBucketAbac", "PUT", "?abac", nil, OperationUnknown, ActionUnknown, AccessAdmin},

	// The service host.
	{"ListBuckets", "GET", "//", nil, "ListBuckets", "s3:ListAllMyBuckets", AccessAdmin},
	{"ListBuckets", "GET", "//?bucket-region=us-east-1&continuation-token=t&max-buckets=10&prefix=l&x-id=ListBuckets", nil, "ListBuckets", "s3:ListAllMyBuckets", AccessAdmin},
	{"ListDirectoryBuckets", "GET", "//?continuation-token=t&max-directory-buckets=10&x-id=ListDirectoryBuckets", nil, "ListDirectoryBuckets", "s3express:ListAllMyDirectoryBuckets", AccessAdmin},
}

// TestEveryS3Operation classifies every operation of the S3 API in the
// shape the SDKs send it, path-style and virtual-hosted.
func TestEveryS3Operation(t *testing.T) {
	c := testClassifier(t)
	for _, tc := range s3Operations {
		for _, style := range []string{"path", "virtual"} {
			uri, pq := "http://localhost:7070/lake", tc.pathQuery
			service := strings.HasPrefix(pq, "//")
			switch {
			case service:
				uri, pq = "http://localhost:7070", pq[1:]
			case style == "virtual":
				uri = "http://lake.localhost:7070"
				if pq == "" || pq[0] == '?' {
					pq = "/" + pq
				}
			}
			in := req(tc.method, uri+pq, tc.headers)
			if tc.op == "DeleteObjects" {
				in.Body, in.HasBody = deleteBody("wh/a"), true
			}
			t.Run(style+" "+tc.api, func(t *testing.T) {
				r, err := c.Classify(in)
				if err != nil {
					t.Fatalf("%s %s: %v", tc.method, uri+pq, err)
				}
				if r.Operation != tc.op {
					t.Fatalf("%s %s: operation %s, want %s", tc.method, uri+pq, r.Operation, tc.op)
				}
				m := r.Targets[0]
				if m.Operation != tc.op || m.Action != tc.action || m.Access != tc.access {
					t.Fatalf("%s %s: target %s %s %s, want %s %s %s", tc.method, uri+pq, m.Operation, m.Action, m.Access, tc.op, tc.action, tc.access)
				}
				if tc.headers.Has("x-amz-copy-source") {
					src := r.Targets[1]
					want := "s3:GetObject"
					if strings.Contains(tc.headers[0].Values[0], "versionId=") {
						want = "s3:GetObjectVersion"
					}
					if src.Role != "copy-source" || src.Action != want || src.Access != AccessRead {
						t.Fatalf("copy source target %+v, want %s", src, want)
					}
				}
			})
			if service {
				break // one host, one form
			}
		}
	}
}

// TestUnknownShapes: near misses of the table's rows — a parameter an
// operation does not take, a version where none is possible, an x-id
// naming another operation, two markers — are Unknown, never a
// neighbouring operation.
func TestUnknownShapes(t *testing.T) {
	c := testClassifier(t)
	for _, tc := range []struct{ method, pathQuery string }{
		{"GET", "/k?x-id=PutObject"},
		{"PUT", "/k?x-id=GetObject"},
		{"PUT", "/k?x-id=CopyObject"}, // no x-amz-copy-source: not a copy
		{"GET", "/k?acl&tagging"},
		{"GET", "/k?torrent&versionId=v1"},
		{"POST", "/k?select&versionId=v1"},
		{"POST", "/k?select&select-type=1"},
		{"PUT", "/k?renameObject&versionId=v1"},
		{"PUT", "/k?versionId=v1"},
		{"POST", "/k?uploads&versionId=v1"},
		{"PUT", "/k?partNumber=1&uploadId=u&versionId=v1"},
		{"GET", "?versionId=v1"},
		{"DELETE", "?versionId=v1"},
		{"GET", "?versions&versionId=v1"},
		{"GET", "?analytics&id=a&x-id=ListBucketAnalyticsConfigurations"},
		{"PUT", "?analytics"},
		{"DELETE", "?inventory"},
		{"POST", "?metrics&id=a"},
		{"GET", "?session&versionId=v1"},
		{"PUT", "?session"},
		{"GET", "?metadataTable&id=a"},
		{"GET", "?x-id=ListBuckets"}, // a bucket, not the service
		{"GET", "/k?analytics"},
	} {
		uri := "http://localhost:7070/lake" + tc.pathQuery
		r, err := c.Classify(req(tc.method, uri, nil))
		if err != nil {
			t.Errorf("%s %s: %v", tc.method, uri, err)
			continue
		}
		if r.Operation != OperationUnknown || r.Targets[0].Action != ActionUnknown || r.Targets[0].Access != AccessAdmin {
			t.Errorf("%s %s: %s %s %s, want Unknown", tc.method, uri, r.Operation, r.Targets[0].Action, r.Targets[0].Access)
		}
	}
	for _, tc := range []struct{ method, uri string }{
		{"PUT", "http://localhost:7070/"},
		{"GET", "http://localhost:7070/?x-id=ListObjects"},
		{"GET", "http://localhost:7070/?versionId=v1"},
		{"GET", "http://localhost:7070/?list-type=2"},
	} {
		r, err := c.Classify(req(tc.method, tc.uri, nil))
		if err == nil && r.Operation != OperationUnknown {
			t.Errorf("%s %s: %s, want Unknown or a refusal", tc.method, tc.uri, r.Operation)
		}
	}
	// WriteGetObjectResponse (S3 Object Lambda) goes to its own host and
	// route; on an S3 endpoint its path is no bucket at all.
	if r, err := c.Classify(req("POST", "http://localhost:7070/WriteGetObjectResponse", nil)); err == nil && r.Operation != OperationUnknown {
		t.Errorf("WriteGetObjectResponse: %s, want Unknown or a refusal", r.Operation)
	}
}

// TestActionsOfCoverEveryOperation: ActionsOf(class) is exactly the set of
// IAM actions the operation table gives the operations of that class, so a
// session policy compiled from it covers every request of the class, and
// nothing else; admin has none.
func TestActionsOfCoverEveryOperation(t *testing.T) {
	seen := map[Access]map[string]bool{}
	for _, tc := range s3Operations {
		if seen[tc.access] == nil {
			seen[tc.access] = map[string]bool{}
		}
		seen[tc.access][tc.action] = true
		if tc.headers.Has("x-amz-copy-source") {
			seen[AccessRead]["s3:GetObject"] = true
		}
	}
	for _, a := range DataAccess {
		got := ActionsOf(a)
		if len(got) == 0 {
			t.Fatalf("%s: no actions", a)
		}
		for _, act := range got {
			if !seen[a][act] {
				t.Errorf("%s: ActionsOf lists %s, which no operation of the class is", a, act)
			}
			if BucketAction(act) != (a == AccessList) {
				t.Errorf("%s: BucketAction(%s) = %v", a, act, BucketAction(act))
			}
		}
		for act := range seen[a] {
			if !slices.Contains(got, act) {
				t.Errorf("%s: operation action %s missing from ActionsOf", a, act)
			}
		}
	}
	if got := ActionsOf(AccessAdmin); got != nil {
		t.Errorf("ActionsOf(admin) = %v, want nil", got)
	}
}

// TestOperationsOfCoverEveryOperation: every data-class operation of the
// table is listed under its action (versioned rows under the version
// action), and OperationsOf lists nothing the table does not classify so.
func TestOperationsOfCoverEveryOperation(t *testing.T) {
	type use struct {
		action string
		op     ActionOperation
	}
	seen := map[use]bool{}
	for _, tc := range s3Operations {
		if tc.access == AccessAdmin {
			continue
		}
		versioned := strings.Contains(tc.pathQuery, "versionId=")
		seen[use{tc.action, ActionOperation{tc.op, versioned}}] = true
	}
	listed := map[use]bool{}
	for _, a := range DataAccess {
		for _, act := range ActionsOf(a) {
			ops := OperationsOf(act)
			if len(ops) == 0 {
				t.Errorf("%s: OperationsOf lists no operation", act)
			}
			for _, op := range ops {
				listed[use{act, op}] = true
			}
		}
	}
	for u := range seen {
		if !listed[u] {
			t.Errorf("operation %s (versioned %v) is %s in the table but not in OperationsOf", u.op.Operation, u.op.Versioned, u.action)
		}
	}
	for u := range listed {
		if !seen[u] && u.op.Operation != "DeleteObjects" {
			// DeleteObjects' versions are in its body, not its target.
			t.Errorf("OperationsOf(%s) lists %s (versioned %v), which the table does not classify so", u.action, u.op.Operation, u.op.Versioned)
		}
	}
	if OperationsOf("s3:PutBucketPolicy") != nil {
		t.Error("OperationsOf an admin action is not nil")
	}
}
