package s3req

import "strings"

// operation is one row of the S3 operation table: what AWS IAM calls the
// request, and which query parameters it may carry besides its marker.
type operation struct {
	name   string
	action string
	access Access
	params []string // allowed parameters; anything else makes it Unknown
}

// OperationUnknown is the operation of every request countersign cannot
// name precisely. Its action is ActionUnknown, which no IAM-style grant
// matches, and its access class is admin.
const (
	OperationUnknown = "Unknown"
	ActionUnknown    = "s3:Unknown"
)

var unknownOp = operation{name: OperationUnknown, action: ActionUnknown, access: AccessAdmin}

var (
	objectReadParams = []string{"x-id", "partNumber",
		"response-cache-control", "response-content-disposition", "response-content-encoding",
		"response-content-language", "response-content-type", "response-expires"}
	listV2Params = []string{"x-id", "list-type", "prefix", "delimiter", "max-keys",
		"continuation-token", "start-after", "encoding-type", "fetch-owner"}
	listV1Params = []string{"x-id", "prefix", "delimiter", "max-keys", "marker", "encoding-type"}
)

// versionedActions are the operations that may name an object version
// (?versionId=), with the IAM action they are when they do: reading,
// deleting, tagging or changing the ACL of one version is its own action
// in IAM, so a grant of the unversioned action does not cover it. Any
// other operation with a versionId is Unknown.
var versionedActions = map[string]string{
	"GetObject":           "s3:GetObjectVersion",
	"HeadObject":          "s3:GetObjectVersion",
	"DeleteObject":        "s3:DeleteObjectVersion",
	"GetObjectTagging":    "s3:GetObjectVersionTagging",
	"PutObjectTagging":    "s3:PutObjectVersionTagging",
	"DeleteObjectTagging": "s3:DeleteObjectVersionTagging",
	"GetObjectAcl":        "s3:GetObjectVersionAcl",
	"PutObjectAcl":        "s3:PutObjectVersionAcl",
	"GetObjectAttributes": "s3:GetObjectVersionAttributes",
	// IAM has no separate version action for these; the version is in
	// the decision's resource.
	"GetObjectRetention": "s3:GetObjectRetention",
	"PutObjectRetention": "s3:PutObjectRetention",
	"GetObjectLegalHold": "s3:GetObjectLegalHold",
	"PutObjectLegalHold": "s3:PutObjectLegalHold",
	"RestoreObject":      "s3:RestoreObject",
}

// deleteAction is the action and access class of deleting one object:
// without a version a delete marker (recoverable where versioning is on),
// with one the permanent removal of that version, which has its own access
// class so that no "delete" grant covers it by accident.
func deleteAction(versionID string) (string, Access) {
	if versionID != "" {
		return "s3:DeleteObjectVersion", AccessDeleteVersion
	}
	return "s3:DeleteObject", AccessDelete
}

// copySourceAction is the IAM action of reading a copy source.
func copySourceAction(versionID string) string {
	if versionID != "" {
		return "s3:GetObjectVersion"
	}
	return "s3:GetObject"
}

// objectSubresources are object-level subresources that are not part of the
// data path. They are classified so policies can name them, and the example
// policies deny them all (access admin).
var objectSubresources = map[string]map[string]operation{
	"acl": {
		"GET": {name: "GetObjectAcl", action: "s3:GetObjectAcl"},
		"PUT": {name: "PutObjectAcl", action: "s3:PutObjectAcl"},
	},
	"retention": {
		"GET": {name: "GetObjectRetention", action: "s3:GetObjectRetention"},
		"PUT": {name: "PutObjectRetention", action: "s3:PutObjectRetention"},
	},
	"legal-hold": {
		"GET": {name: "GetObjectLegalHold", action: "s3:GetObjectLegalHold"},
		"PUT": {name: "PutObjectLegalHold", action: "s3:PutObjectLegalHold"},
	},
	"restore":    {"POST": {name: "RestoreObject", action: "s3:RestoreObject"}},
	"select":     {"POST": {name: "SelectObjectContent", action: "s3:GetObject", params: []string{"select-type"}}},
	"attributes": {"GET": {name: "GetObjectAttributes", action: "s3:GetObjectAttributes"}},
	"torrent":    {"GET": {name: "GetObjectTorrent", action: "s3:GetObjectTorrent"}},
	"renameObject": {
		"PUT": {name: "RenameObject", action: "s3:PutObject"},
	},
}

// bucketSubresources are bucket-level configuration subresources (admin).
var bucketSubresources = map[string]map[string]operation{
	"acl": {
		"GET": {name: "GetBucketAcl", action: "s3:GetBucketAcl"},
		"PUT": {name: "PutBucketAcl", action: "s3:PutBucketAcl"},
	},
	"policy": {
		"GET":    {name: "GetBucketPolicy", action: "s3:GetBucketPolicy"},
		"PUT":    {name: "PutBucketPolicy", action: "s3:PutBucketPolicy"},
		"DELETE": {name: "DeleteBucketPolicy", action: "s3:DeleteBucketPolicy"},
	},
	"policyStatus": {"GET": {name: "GetBucketPolicyStatus", action: "s3:GetBucketPolicyStatus"}},
	"cors": {
		"GET":    {name: "GetBucketCors", action: "s3:GetBucketCORS"},
		"PUT":    {name: "PutBucketCors", action: "s3:PutBucketCORS"},
		"DELETE": {name: "DeleteBucketCors", action: "s3:PutBucketCORS"},
	},
	"lifecycle": {
		"GET":    {name: "GetBucketLifecycleConfiguration", action: "s3:GetLifecycleConfiguration"},
		"PUT":    {name: "PutBucketLifecycleConfiguration", action: "s3:PutLifecycleConfiguration"},
		"DELETE": {name: "DeleteBucketLifecycle", action: "s3:PutLifecycleConfiguration"},
	},
	"versioning": {
		"GET": {name: "GetBucketVersioning", action: "s3:GetBucketVersioning"},
		"PUT": {name: "PutBucketVersioning", action: "s3:PutBucketVersioning"},
	},
	"website": {
		"GET":    {name: "GetBucketWebsite", action: "s3:GetBucketWebsite"},
		"PUT":    {name: "PutBucketWebsite", action: "s3:PutBucketWebsite"},
		"DELETE": {name: "DeleteBucketWebsite", action: "s3:DeleteBucketWebsite"},
	},
	"replication": {
		"GET":    {name: "GetBucketReplication", action: "s3:GetReplicationConfiguration"},
		"PUT":    {name: "PutBucketReplication", action: "s3:PutReplicationConfiguration"},
		"DELETE": {name: "DeleteBucketReplication", action: "s3:PutReplicationConfiguration"},
	},
	"notification": {
		"GET": {name: "GetBucketNotificationConfiguration", action: "s3:GetBucketNotification"},
		"PUT": {name: "PutBucketNotificationConfiguration", action: "s3:PutBucketNotification"},
	},
	"logging": {
		"GET": {name: "GetBucketLogging", action: "s3:GetBucketLogging"},
		"PUT": {name: "PutBucketLogging", action: "s3:PutBucketLogging"},
	},
	"encryption": {
		"GET":    {name: "GetBucketEncryption", action: "s3:GetEncryptionConfiguration"},
		"PUT":    {name: "PutBucketEncryption", action: "s3:PutEncryptionConfiguration"},
		"DELETE": {name: "DeleteBucketEncryption", action: "s3:PutEncryptionConfiguration"},
	},
	"tagging": {
		"GET":    {name: "GetBucketTagging", action: "s3:GetBucketTagging"},
		"PUT":    {name: "PutBucketTagging", action: "s3:PutBucketTagging"},
		"DELETE": {name: "DeleteBucketTagging", action: "s3:PutBucketTagging"},
	},
	"object-lock": {
		"GET": {name: "GetObjectLockConfiguration", action: "s3:GetBucketObjectLockConfiguration"},
		"PUT": {name: "PutObjectLockConfiguration", action: "s3:PutBucketObjectLockConfiguration"},
	},
	"publicAccessBlock": {
		"GET":    {name: "GetPublicAccessBlock", action: "s3:GetBucketPublicAccessBlock"},
		"PUT":    {name: "PutPublicAccessBlock", action: "s3:PutBucketPublicAccessBlock"},
		"DELETE": {name: "DeletePublicAccessBlock", action: "s3:PutBucketPublicAccessBlock"},
	},
	"ownershipControls": {
		"GET":    {name: "GetBucketOwnershipControls", action: "s3:GetBucketOwnershipControls"},
		"PUT":    {name: "PutBucketOwnershipControls", action: "s3:PutBucketOwnershipControls"},
		"DELETE": {name: "DeleteBucketOwnershipControls", action: "s3:PutBucketOwnershipControls"},
	},
	"accelerate": {
		"GET": {name: "GetBucketAccelerateConfiguration", action: "s3:GetAccelerateConfiguration"},
		"PUT": {name: "PutBucketAccelerateConfiguration", action: "s3:PutAccelerateConfiguration"},
	},
	"requestPayment": {
		"GET": {name: "GetBucketRequestPayment", action: "s3:GetBucketRequestPayment"},
		"PUT": {name: "PutBucketRequestPayment", action: "s3:PutBucketRequestPayment"},
	},
	// S3 Express One Zone: CreateSession hands out session credentials for
	// the whole bucket, so it is as much an admin operation as any.
	"session": {"GET": {name: "CreateSession", action: "s3express:CreateSession"}},
	// S3 Metadata (V1 metadataTable and V2 metadataConfiguration share IAM
	// actions).
	"metadataTable": {
		"POST":   {name: "CreateBucketMetadataTableConfiguration", action: "s3:CreateBucketMetadataTableConfiguration"},
		"GET":    {name: "GetBucketMetadataTableConfiguration", action: "s3:GetBucketMetadataTableConfiguration"},
		"DELETE": {name: "DeleteBucketMetadataTableConfiguration", action: "s3:DeleteBucketMetadataTableConfiguration"},
	},
	"metadataConfiguration": {
		"POST":   {name: "CreateBucketMetadataConfiguration", action: "s3:CreateBucketMetadataTableConfiguration"},
		"GET":    {name: "GetBucketMetadataConfiguration", action: "s3:GetBucketMetadataTableConfiguration"},
		"DELETE": {name: "DeleteBucketMetadataConfiguration", action: "s3:DeleteBucketMetadataTableConfiguration"},
	},
	"metadataInventoryTable": {"PUT": {name: "UpdateBucketMetadataInventoryTableConfiguration", action: "s3:UpdateBucketMetadataInventoryTableConfiguration"}},
	"metadataJournalTable":   {"PUT": {name: "UpdateBucketMetadataJournalTableConfiguration", action: "s3:UpdateBucketMetadataJournalTableConfiguration"}},
	"uploads": {"GET": {name: "ListMultipartUploads", action: "s3:ListBucketMultipartUploads",
		params: []string{"prefix", "delimiter", "key-marker", "upload-id-marker", "max-uploads", "encoding-type"}}},
	"versions": {"GET": {name: "ListObjectVersions", action: "s3:ListBucketVersions",
		params: []string{"prefix", "delimiter", "key-marker", "version-id-marker", "max-keys", "encoding-type"}}},
}

// idConfigurations are the bucket configurations kept per id (?analytics,
// ?inventory, ?metrics, ?intelligent-tiering): GET with an id reads one,
// GET without lists them, PUT and DELETE need the id. Deleting one is the
// Put action in IAM, as for the other bucket configurations.
var idConfigurations = map[string]struct{ get, list, put, del operation }{
	"analytics": {
		get:  operation{name: "GetBucketAnalyticsConfiguration", action: "s3:GetAnalyticsConfiguration"},
		list: operation{name: "ListBucketAnalyticsConfigurations", action: "s3:GetAnalyticsConfiguration"},
		put:  operation{name: "PutBucketAnalyticsConfiguration", action: "s3:PutAnalyticsConfiguration"},
		del:  operation{name: "DeleteBucketAnalyticsConfiguration", action: "s3:PutAnalyticsConfiguration"},
	},
	"inventory": {
		get:  operation{name: "GetBucketInventoryConfiguration", action: "s3:GetInventoryConfiguration"},
		list: operation{name: "ListBucketInventoryConfigurations", action: "s3:GetInventoryConfiguration"},
		put:  operation{name: "PutBucketInventoryConfiguration", action: "s3:PutInventoryConfiguration"},
		del:  operation{name: "DeleteBucketInventoryConfiguration", action: "s3:PutInventoryConfiguration"},
	},
	"metrics": {
		get:  operation{name: "GetBucketMetricsConfiguration", action: "s3:GetMetricsConfiguration"},
		list: operation{name: "ListBucketMetricsConfigurations", action: "s3:GetMetricsConfiguration"},
		put:  operation{name: "PutBucketMetricsConfiguration", action: "s3:PutMetricsConfiguration"},
		del:  operation{name: "DeleteBucketMetricsConfiguration", action: "s3:PutMetricsConfiguration"},
	},
	"intelligent-tiering": {
		get:  operation{name: "GetBucketIntelligentTieringConfiguration", action: "s3:GetIntelligentTieringConfiguration"},
		list: operation{name: "ListBucketIntelligentTieringConfigurations", action: "s3:GetIntelligentTieringConfiguration"},
		put:  operation{name: "PutBucketIntelligentTieringConfiguration", action: "s3:PutIntelligentTieringConfiguration"},
		del:  operation{name: "DeleteBucketIntelligentTieringConfiguration", action: "s3:PutIntelligentTieringConfiguration"},
	},
}

func idConfigurationOperation(method, marker string, q params) operation {
	c := idConfigurations[marker]
	_, hasID := q.get("id")
	var op operation
	switch {
	case method == "GET" && hasID:
		op = c.get
		op.params = []string{"x-id", "id"}
	case method == "GET":
		op = c.list
		op.params = []string{"x-id", "continuation-token"}
	case method == "PUT" && hasID:
		op = c.put
		op.params = []string{"x-id", "id"}
	case method == "DELETE" && hasID:
		op = c.del
		op.params = []string{"x-id", "id"}
	default:
		return unknownOp
	}
	op.access = AccessAdmin
	return op
}

// serviceOperation classifies a request to the service host itself (no
// bucket): only the bucket listings exist there.
func serviceOperation(method string, q params) operation {
	if method != "GET" {
		return unknownOp
	}
	op := operation{name: "ListBuckets", action: "s3:ListAllMyBuckets", access: AccessAdmin,
		params: []string{"x-id", "bucket-region", "continuation-token", "max-buckets", "prefix"}}
	if p, ok := q.get("x-id"); ok && p.value == "ListDirectoryBuckets" {
		op = operation{name: "ListDirectoryBuckets", action: "s3express:ListAllMyDirectoryBuckets", access: AccessAdmin,
			params: []string{"x-id", "continuation-token", "max-directory-buckets"}}
	}
	return checkParams(op, "", false, q)
}

// subresourceMarkers are parameters that select an operation rather than
// modify one. A request carries at most one of them.
func isMarker(key string, object bool) bool {
	switch key {
	case "uploads", "uploadId", "tagging", "delete", "location":
		return true
	}
	if object {
		_, ok := objectSubresources[key]
		return ok
	}
	if _, ok := idConfigurations[key]; ok {
		return true
	}
	_, ok := bucketSubresources[key]
	return ok
}

// classifyOperation maps method, query and the presence of a key and a copy
// source to one row of the operation table, exactly as AWS IAM does.
func classifyOperation(method string, hasBucket, hasKey, copySource bool, q params) operation {
	if !hasBucket {
		return serviceOperation(method, q)
	}
	marker := ""
	for _, p := range q {
		if isMarker(p.key, hasKey) {
			if marker != "" {
				return unknownOp
			}
			marker = p.key
		}
	}
	// Markers are flags; "?uploads=x" is not a request any SDK sends. uploadId
	// is the one marker with a value.
	if marker != "" && marker != "uploadId" {
		if p, _ := q.get(marker); p.value != "" {
			return unknownOp
		}
	}
	var op operation
	if hasKey {
		op = objectOperation(method, marker, copySource)
	} else {
		op = bucketOperation(method, marker, q)
	}
	if op.name == OperationUnknown {
		return op
	}
	return checkParams(op, marker, hasKey, q)
}

// checkParams applies what every operation has in common: a versionId
// only where the operation takes one (and then the version action), only
// the operation's own parameters, an x-id (the operation name SDKs add)
// that names this operation, and for SelectObjectContent the one
// select-type there is.
func checkParams(op operation, marker string, hasKey bool, q params) operation {
	if p, ok := q.get("x-id"); ok && p.value != op.name {
		return unknownOp
	}
	if p, ok := q.get("select-type"); ok && p.value != "2" {
		return unknownOp
	}
	_, versioned := q.get("versionId")
	if versioned {
		action, ok := versionedActions[op.name]
		if !ok || !hasKey {
			return unknownOp
		}
		op.action = action
		if op.name == "DeleteObject" {
			op.access = AccessDeleteVersion
		}
	}
	for _, p := range q {
		if p.key != marker && !contains(op.params, p.key) && !(versioned && p.key == "versionId") {
			return unknownOp
		}
	}
	return op
}

func objectOperation(method, marker string, copySource bool) operation {
	switch marker {
	case "":
		switch method {
		case "GET":
			return operation{"GetObject", "s3:GetObject", AccessRead, objectReadParams}
		case "HEAD":
			return operation{"HeadObject", "s3:GetObject", AccessRead, objectReadParams}
		case "PUT":
			if copySource {
				return operation{"CopyObject", "s3:PutObject", AccessWrite, []string{"x-id"}}
			}
			return operation{"PutObject", "s3:PutObject", AccessWrite, []string{"x-id"}}
		case "DELETE":
			return operation{"DeleteObject", "s3:DeleteObject", AccessDelete, []string{"x-id"}}
		}
	case "uploads":
		if method == "POST" {
			return operation{"CreateMultipartUpload", "s3:PutObject", AccessWrite, []string{"x-id"}}
		}
	case "uploadId":
		switch method {
		case "PUT":
			if copySource {
				return operation{"UploadPartCopy", "s3:PutObject", AccessWrite, []string{"x-id", "partNumber"}}
			}
			return operation{"UploadPart", "s3:PutObject", AccessWrite, []string{"x-id", "partNumber"}}
		case "POST":
			return operation{"CompleteMultipartUpload", "s3:PutObject", AccessWrite, []string{"x-id"}}
		case "DELETE":
			return operation{"AbortMultipartUpload", "s3:AbortMultipartUpload", AccessWrite, []string{"x-id"}}
		case "GET":
			return operation{"ListParts", "s3:ListMultipartUploadParts", AccessRead,
				[]string{"x-id", "max-parts", "part-number-marker", "encoding-type"}}
		}
	case "tagging":
		switch method {
		case "GET":
			return operation{"GetObjectTagging", "s3:GetObjectTagging", AccessRead, []string{"x-id"}}
		case "PUT":
			return operation{"PutObjectTagging", "s3:PutObjectTagging", AccessWrite, []string{"x-id"}}
		case "DELETE":
			return operation{"DeleteObjectTagging", "s3:DeleteObjectTagging", AccessWrite, []string{"x-id"}}
		}
	default:
		if op, ok := objectSubresources[marker][method]; ok {
			op.access = AccessAdmin
			op.params = append([]string{"x-id"}, op.params...)
			return op
		}
	}
	return unknownOp
}

func bucketOperation(method, marker string, q params) operation {
	switch marker {
	case "":
		switch method {
		case "GET":
			lt, ok := q.get("list-type")
			switch {
			case !ok:
				return operation{"ListObjects", "s3:ListBucket", AccessList, listV1Params}
			case lt.value == "2":
				return operation{"ListObjectsV2", "s3:ListBucket", AccessList, listV2Params}
			}
		case "HEAD":
			return operation{"HeadBucket", "s3:ListBucket", AccessList, []string{"x-id"}}
		case "PUT":
			return operation{"CreateBucket", "s3:CreateBucket", AccessAdmin, []string{"x-id"}}
		case "DELETE":
			return operation{"DeleteBucket", "s3:DeleteBucket", AccessAdmin, []string{"x-id"}}
		}
	case "location":
		if method == "GET" {
			return operation{"GetBucketLocation", "s3:GetBucketLocation", AccessList, []string{"x-id"}}
		}
	case "delete":
		if method == "POST" {
			return operation{"DeleteObjects", "s3:DeleteObject", AccessDelete, []string{"x-id"}}
		}
	case "analytics", "inventory", "metrics", "intelligent-tiering":
		return idConfigurationOperation(method, marker, q)
	default:
		if op, ok := bucketSubresources[marker][method]; ok {
			op.access = AccessAdmin
			op.params = append([]string{"x-id"}, op.params...)
			return op
		}
	}
	return unknownOp
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// isListOperation reports operations whose resource is a prefix, not a key.
func isListOperation(name string) bool {
	return strings.HasPrefix(name, "ListObjects") || name == "ListMultipartUploads" || name == "ListObjectVersions"
}
