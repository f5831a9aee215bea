package server

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/vend"
)

func TestMatchVendRoute(t *testing.T) {
	bases := normalizeBasePaths([]string{"/catalog"})
	for path, want := range map[string]string{
		"/v1/prod/namespaces/db/tables/t/credentials":               "credentials prod db t",
		"/v1/namespaces/db%1Fsub/tables/t/credentials":              "credentials  db.sub t",
		"/catalog/v1/prod/namespaces/db/tables/t/credentials":       "credentials prod db t",
		"/api/2.1/unity-catalog/temporary-path-credentials":         "unity",
		"/catalog/api/2.1/unity-catalog/temporary-path-credentials": "unity",
		"/v1/prod/namespaces/db/tables/t/sign":                      "",
		"/v1/prod/namespaces/db/tables/t/credentials/x":             "",
		"/v1/prod/namespaces//tables/t/credentials":                 "",
		"/v1/prod/namespaces/db/tables/t%00/credentials":            "",
		"/api/2.1/unity-catalog/temporary-table-credentials":        "",
		"/other/api/2.1/unity-catalog/temporary-path-credentials":   "",
	} {
		vr, ok := matchVendRoute(path, bases, defaultNamespaceSeparator)
		got := ""
		if ok {
			got = vr.api
			if vr.table != nil {
				got += " " + vr.table.Prefix + " " + strings.Join(vr.table.Namespace, ".") + " " + vr.table.Name
			}
		}
		if got != want {
			t.Errorf("%s: %q, want %q", path, got, want)
		}
	}
	// The sign routes are unaffected.
	if rt, ok := matchSignRoute("/v1/prod/namespaces/db/tables/t/sign", bases, defaultNamespaceSeparator); !ok || rt.name != "table" || rt.table.Name != "t" {
		t.Errorf("sign route: %+v %v", rt, ok)
	}
	if _, ok := matchSignRoute("/v1/prod/namespaces/db/tables/t/credentials", bases, defaultNamespaceSeparator); ok {
		t.Error("the credentials route matched as a sign route")
	}
}

func TestDecodeUnityRequest(t *testing.T) {
	for body, want := range map[string]string{
		`{"url":"s3://lake/wh/","operation":"PATH_READ"}`:                        "s3://lake/wh/ read",
		`{"url":"s3://lake/wh/","operation":"PATH_READ_WRITE"}`:                  "s3://lake/wh/ read-write",
		`{"url":"s3://lake/wh/","operation":"PATH_CREATE_TABLE","dry_run":true}`: "s3://lake/wh/ read-write",
	} {
		var r vend.Request
		if err := decodeUnityRequest([]byte(body), &r); err != nil || r.Location+" "+string(r.Access) != want {
			t.Errorf("%s: %q %q %v, want %s", body, r.Location, r.Access, err, want)
		}
	}
	for body, want := range map[string]string{
		`{"url":"s3://lake/wh/"}`:                          `"operation" ""`,
		`{"url":"s3://lake/wh/","operation":"PATH_WRITE"}`: `"operation" "PATH_WRITE"`,
		`{"operation":"PATH_READ"}`:                        `"url" is required`,
		`{"url":"","operation":"PATH_READ"}`:               `"url" is required`,
		`[1]`:                                              "not a GenerateTemporaryPathCredential",
		`{"url":"s3://lake/wh/a/","operation":"PATH_READ","url":"s3://lake/wh/b/"}`: `two members named "url"`,
		`{"URL":"s3://lake/wh/","operation":"PATH_READ"}`:                           `"url" is required`,
		`{"url":"s3://lake/wh/","Operation":"PATH_READ"}`:                           `"operation" ""`,
		`{"url":["s3://lake/wh/"],"operation":"PATH_READ"}`:                         `"url" must be a string`,
		`{"url":"s3://lake/wh/","operation":"PATH_READ"} x`:                         "not a GenerateTemporaryPathCredential",
		"{\"url\":\"s3://lake/\xff\",\"operation\":\"PATH_READ\"}":                  "not a GenerateTemporaryPathCredential",
		``: "not a GenerateTemporaryPathCredential",
	} {
		var r vend.Request
		if err := decodeUnityRequest([]byte(body), &r); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error with %s", body, err, want)
		}
	}
}

func TestVendAnswers(t *testing.T) {
	c := &vend.Credentials{Location: "s3://lake/wh/db/t/", AccessKeyID: "ASIA1", SecretAccessKey: "s", SessionToken: "tok",
		Expires: time.UnixMilli(1796183800123)}
	var ice struct {
		StorageCredentials []struct {
			Prefix string            `json:"prefix"`
			Config map[string]string `json:"config"`
		} `json:"storage-credentials"`
	}
	if err := json.Unmarshal(icebergAnswer(c, VendConfig{Region: "us-east-1"}), &ice); err != nil || len(ice.StorageCredentials) != 1 {
		t.Fatal(err)
	}
	sc := ice.StorageCredentials[0]
	if sc.Prefix != "s3://lake/wh/db/t/" || sc.Config["s3.access-key-id"] != "ASIA1" || sc.Config["s3.secret-access-key"] != "s" ||
		sc.Config["s3.session-token"] != "tok" || sc.Config["s3.session-token-expires-at-ms"] != "1796183800123" ||
		sc.Config["client.region"] != "us-east-1" || len(sc.Config) != 5 {
		t.Fatalf("LoadCredentialsResponse: %+v", sc)
	}
	var uc struct {
		AWS        map[string]string `json:"aws_temp_credentials"`
		Expiration int64             `json:"expiration_time"`
	}
	if err := json.Unmarshal(unityAnswer(c), &uc); err != nil {
		t.Fatal(err)
	}
	if uc.AWS["access_key_id"] != "ASIA1" || uc.AWS["secret_access_key"] != "s" || uc.AWS["session_token"] != "tok" || uc.Expiration != 1796183800123 {
		t.Fatalf("GenerateTemporaryPathCredentialResponse: %+v", uc)
	}
	for status, code := range map[int]string{400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 404: "NOT_FOUND", 429: "RESOURCE_EXHAUSTED", 503: "UNAVAILABLE", 500: "INTERNAL"} {
		if got := unityErrorCode(status); got != code {
			t.Errorf("unityErrorCode(%d) = %s, want %s", status, got, code)
		}
	}
}
