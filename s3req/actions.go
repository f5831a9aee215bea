package s3req

import "slices"

// DataAccess are the access classes of the data path, in the order
// documents list them: every class but admin. A session policy
// (package sessionpolicy) is compiled for these only; admin operations are
// never granted through one.
var DataAccess = []Access{AccessRead, AccessWrite, AccessDelete, AccessDeleteVersion, AccessList}

// classActions are the IAM actions of every operation of the operation
// table in each data access class, versioned forms included
// (TestActionsOfCoverEveryOperation holds them to the table): a session
// policy that grants a class grants these.
var classActions = map[Access][]string{
	AccessRead: {
		"s3:GetObject", "s3:GetObjectVersion", // GetObject, HeadObject, a copy source
		"s3:GetObjectTagging", "s3:GetObjectVersionTagging",
		"s3:ListMultipartUploadParts", // ListParts
	},
	AccessWrite: {
		"s3:PutObject", // PutObject, CopyObject, the multipart upload
		"s3:AbortMultipartUpload",
		"s3:PutObjectTagging", "s3:PutObjectVersionTagging",
		"s3:DeleteObjectTagging", "s3:DeleteObjectVersionTagging",
	},
	AccessDelete:        {"s3:DeleteObject"},        // DeleteObject, DeleteObjects
	AccessDeleteVersion: {"s3:DeleteObjectVersion"}, // DeleteObject?versionId=
	AccessList: {
		"s3:ListBucket",        // ListObjects, ListObjectsV2, HeadBucket
		"s3:GetBucketLocation", // GetBucketLocation
	},
}

// ActionsOf returns the IAM actions of the operations in access class a,
// sorted; nil for admin and for anything that is not a data access class.
// The caller owns the slice.
func ActionsOf(a Access) []string {
	acts := slices.Clone(classActions[a])
	slices.Sort(acts)
	return acts
}

// BucketAction reports the actions among ActionsOf's whose resource is the
// bucket, not an object: their ARN is arn:aws:s3:::bucket, and a list
// prefix is the s3:prefix condition of s3:ListBucket.
func BucketAction(action string) bool {
	return action == "s3:ListBucket" || action == "s3:GetBucketLocation"
}

// ActionOperation is one operation of the data path that IAM authorizes
// with an action: its name (input.operation) and whether it names an
// object version (input.resource.version_id set).
type ActionOperation struct {
	Operation string
	Versioned bool
}

// actionOperations are, for each action of classActions, the operations
// of the operation table whose requests IAM authorizes with it
// (TestOperationsOfCoverEveryOperation holds them to the table). A
// session policy that grants the action lets its holder send every one
// of them, so a grant is exact only where the policy allows them all.
// Operations outside the data classes (admin) are not here: no session
// policy is compiled for them.
var actionOperations = map[string][]ActionOperation{
	"s3:GetObject":                  {{"GetObject", false}, {"HeadObject", false}},
	"s3:GetObjectVersion":           {{"GetObject", true}, {"HeadObject", true}},
	"s3:GetObjectTagging":           {{"GetObjectTagging", false}},
	"s3:GetObjectVersionTagging":    {{"GetObjectTagging", true}},
	"s3:ListMultipartUploadParts":   {{"ListParts", false}},
	"s3:PutObject":                  {{"PutObject", false}, {"CopyObject", false}, {"CreateMultipartUpload", false}, {"UploadPart", false}, {"UploadPartCopy", false}, {"CompleteMultipartUpload", false}},
	"s3:AbortMultipartUpload":       {{"AbortMultipartUpload", false}},
	"s3:PutObjectTagging":           {{"PutObjectTagging", false}},
	"s3:PutObjectVersionTagging":    {{"PutObjectTagging", true}},
	"s3:DeleteObjectTagging":        {{"DeleteObjectTagging", false}},
	"s3:DeleteObjectVersionTagging": {{"DeleteObjectTagging", true}},
	"s3:DeleteObject":               {{"DeleteObject", false}, {"DeleteObjects", false}},
	"s3:DeleteObjectVersion":        {{"DeleteObject", true}, {"DeleteObjects", true}},
	"s3:ListBucket":                 {{"ListObjects", false}, {"ListObjectsV2", false}, {"HeadBucket", false}},
	"s3:GetBucketLocation":          {{"GetBucketLocation", false}},
}

// OperationsOf returns the data-path operations IAM authorizes with
// action (one of ActionsOf's), nil for any other action. The caller owns
// the slice.
func OperationsOf(action string) []ActionOperation {
	return slices.Clone(actionOperations[action])
}
