package e2e

// Temporary credentials that versitygw itself validates come from
// testsupport's IAMGateway (its comment says how versitygw's standalone IAM
// service is used).
//
// countersign's assume-role source calls sts:AssumeRole, which versitygw
// lacks; assumeRoleSTS serves that one action in front of versitygw (see
// there).

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	iamtypes "github.com/aws/aws-sdk-go-v2/service/iam/types"

	"github.com/countersign/countersign/testsupport"
)

// iamGateway is a versitygw S3 gateway backed by versitygw's standalone IAM
// service (testsupport.IAMGateway), with the gateway as this module's
// s3Server.
type iamGateway struct {
	*s3Server
	*testsupport.IAMGateway
}

func startS3WithIAM(t testing.TB) *iamGateway {
	t.Helper()
	g := servers.StartS3WithIAM(t)
	return &iamGateway{&s3Server{g.S3}, g}
}

// requireSignedAs signs a ListObjectsV2 of bucket through cs (countersign's
// policy allows it), sends it, and requires versitygw to refuse it as
// principal: the roles here grant no s3:ListBucket, and versitygw's
// AccessDenied names the identity that signed.
func requireSignedAs(t testing.TB, cs *signerProc, srv *s3Server, bucket, principal string) {
	t.Helper()
	uri := styles(srv.Port)[0].bucket(bucket) + "?list-type=2&prefix=wh%2F"
	status, res, ierr, _ := cs.sign(t, "", signRequest{Region: testRegion, URI: uri, Method: "GET", Headers: javaHeaders()})
	if status != http.StatusOK {
		t.Fatalf("sign ListObjectsV2: %d %+v", status, ierr)
	}
	st, body := srv.send(t, "GET", res.URI, res.Headers, nil)
	if st != http.StatusForbidden || !bytes.Contains(body, []byte("<Code>AccessDenied</Code>")) || !bytes.Contains(body, []byte(principal)) {
		t.Fatalf("ListObjectsV2 signed by countersign: S3 answered %d, want AccessDenied for %s\n%s", st, principal, body)
	}
}

// assumeRoleSTS serves sts:AssumeRole for countersign's assume-role source,
// which versitygw v1.8.0 has no action for. It does what AWS STS does and
// nothing of its own: it verifies the caller's SigV4 signature (service
// "sts") against the one pair of base credentials it knows, looks the role
// up in versitygw's IAM (GetRole), refuses unknown roles and durations
// outside 15 minutes and the role's maximum with AWS's errors, and returns a
// session minted in versitygw, so the credentials countersign gets are
// validated by versitygw. Trust policies are not evaluated (the roles here
// trust the whole account).
type assumeRoleSTS struct {
	url string

	mu    sync.Mutex
	calls []assumeRoleCall
}

// assumeRoleCall records one AssumeRole request and its outcome.
type assumeRoleCall struct {
	CallerAccessKey string // from the verified signature
	RoleArn         string
	RoleSessionName string
	DurationSeconds string
	ExternalID      string
	// What per-principal sessions send besides: the inline session
	// policy, SourceIdentity and session tags ("key=value", in order).
	Policy, SourceIdentity string
	Tags                   string
	Issued                 *testsupport.SessionCreds // nil when refused
	ErrorCode              string                    // when refused
}

func startAssumeRoleSTS(t testing.TB, g *iamGateway, baseAccessKey, baseSecretKey string) *assumeRoleSTS {
	t.Helper()
	s := &assumeRoleSTS{}
	base := aws.Credentials{AccessKeyID: baseAccessKey, SecretAccessKey: baseSecretKey}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		call, status, err := s.assumeRole(r, g, base)
		if call.CallerAccessKey != "" {
			if err != nil {
				call.ErrorCode = err.Error()
			}
			s.mu.Lock()
			s.calls = append(s.calls, call)
			s.mu.Unlock()
		}
		if err != nil {
			w.Header().Set("Content-Type", "text/xml")
			w.WriteHeader(status)
			fmt.Fprintf(w, `<ErrorResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><Error><Type>Sender</Type><Code>%s</Code><Message>%s</Message></Error><RequestId>e2e</RequestId></ErrorResponse>`,
				err, xmlEscape(fmt.Sprintf("%s (e2e AssumeRole in front of versitygw, role %q)", err, call.RoleArn)))
			return
		}
		c := call.Issued
		w.Header().Set("Content-Type", "text/xml")
		fmt.Fprintf(w, `<AssumeRoleResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><AssumeRoleResult><Credentials><AccessKeyId>%s</AccessKeyId><SecretAccessKey>%s</SecretAccessKey><SessionToken>%s</SessionToken><Expiration>%s</Expiration></Credentials><AssumedRoleUser><Arn>%s</Arn><AssumedRoleId>%s</AssumedRoleId></AssumedRoleUser></AssumeRoleResult><ResponseMetadata><RequestId>e2e</RequestId></ResponseMetadata></AssumeRoleResponse>`,
			c.AccessKeyID, c.SecretAccessKey, c.SessionToken, c.Expiration.Format(time.RFC3339),
			xmlEscape(testsupport.AssumedRoleARN(roleName(call.RoleArn), call.RoleSessionName)), c.AccessKeyID)
	}))
	t.Cleanup(srv.Close)
	s.url = srv.URL
	return s
}

// assumeRole handles one request. The error's text is the STS error code.
func (s *assumeRoleSTS) assumeRole(r *http.Request, g *iamGateway, base aws.Credentials) (assumeRoleCall, int, error) {
	var call assumeRoleCall
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return call, http.StatusBadRequest, errors.New("InvalidRequest")
	}
	if call.CallerAccessKey, err = verifySigV4(r, body, base, "sts"); err != nil {
		return call, http.StatusForbidden, errors.New("SignatureDoesNotMatch")
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	if err := r.ParseForm(); err != nil || r.PostForm.Get("Action") != "AssumeRole" || r.PostForm.Get("Version") != "2011-06-15" {
		return call, http.StatusBadRequest, errors.New("InvalidAction")
	}
	call.RoleArn = r.PostForm.Get("RoleArn")
	call.RoleSessionName = r.PostForm.Get("RoleSessionName")
	call.DurationSeconds = r.PostForm.Get("DurationSeconds")
	call.ExternalID = r.PostForm.Get("ExternalId")
	call.Policy = r.PostForm.Get("Policy")
	call.SourceIdentity = r.PostForm.Get("SourceIdentity")
	var tags []string
	for i := 1; r.PostForm.Has(fmt.Sprintf("Tags.member.%d.Key", i)); i++ {
		tags = append(tags, r.PostForm.Get(fmt.Sprintf("Tags.member.%d.Key", i))+"="+r.PostForm.Get(fmt.Sprintf("Tags.member.%d.Value", i)))
	}
	call.Tags = strings.Join(tags, " ")

	// AWS answers AccessDenied for a role that does not exist too.
	out, err := g.IAM.GetRole(r.Context(), &iam.GetRoleInput{RoleName: aws.String(roleName(call.RoleArn))})
	var noSuch *iamtypes.NoSuchEntityException
	switch {
	case errors.As(err, &noSuch):
		return call, http.StatusForbidden, errors.New("AccessDenied")
	case err != nil:
		return call, http.StatusInternalServerError, errors.New("InternalFailure")
	case aws.ToString(out.Role.Arn) != call.RoleArn:
		return call, http.StatusForbidden, errors.New("AccessDenied")
	}
	seconds := 3600
	if call.DurationSeconds != "" {
		if seconds, err = strconv.Atoi(call.DurationSeconds); err != nil || seconds < 900 {
			return call, http.StatusBadRequest, errors.New("ValidationError")
		}
	}
	if limit := aws.ToInt32(out.Role.MaxSessionDuration); limit > 0 && seconds > int(limit) {
		return call, http.StatusBadRequest, errors.New("ValidationError")
	}
	creds, err := g.MintSession(*out.Role, call.RoleSessionName, time.Duration(seconds)*time.Second)
	if err != nil {
		return call, http.StatusInternalServerError, errors.New("InternalFailure")
	}
	call.Issued = &creds
	return call, http.StatusOK, nil
}

func (s *assumeRoleSTS) requests() []assumeRoleCall {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]assumeRoleCall(nil), s.calls...)
}

// roleName is the last path segment of a role ARN.
func roleName(arn string) string {
	return arn[strings.LastIndexByte(arn, '/')+1:]
}

var sigV4AuthRE = regexp.MustCompile(`^AWS4-HMAC-SHA256 Credential=([^/]+)/(\d{8})/([^/]+)/([^/]+)/aws4_request, SignedHeaders=([^,]+), Signature=[0-9a-f]{64}$`)

// verifySigV4 checks r's Authorization header against creds for service by
// signing the same request again with aws-sdk-go-v2's signer (the STS
// client's own). It returns the access key the request was signed with.
func verifySigV4(r *http.Request, body []byte, creds aws.Credentials, service string) (string, error) {
	auth := r.Header.Get("Authorization")
	m := sigV4AuthRE.FindStringSubmatch(auth)
	if m == nil {
		return "", fmt.Errorf("malformed Authorization %q", auth)
	}
	if m[1] != creds.AccessKeyID || m[4] != service {
		return m[1], fmt.Errorf("signed by %s for %s", m[1], m[4])
	}
	when, err := time.Parse("20060102T150405Z", r.Header.Get("X-Amz-Date"))
	if err != nil || !strings.HasPrefix(r.Header.Get("X-Amz-Date"), m[2]) {
		return m[1], fmt.Errorf("bad X-Amz-Date %q", r.Header.Get("X-Amz-Date"))
	}
	again, err := http.NewRequest(r.Method, "http://"+r.Host+r.URL.RequestURI(), nil)
	if err != nil {
		return m[1], err
	}
	for _, name := range strings.Split(m[5], ";") {
		switch name {
		case "host":
			again.Host = r.Host
		case "content-length":
			again.ContentLength = int64(len(body))
		case "x-amz-date":
		default:
			again.Header[http.CanonicalHeaderKey(name)] = r.Header.Values(name)
		}
	}
	sum := sha256.Sum256(body)
	if err := v4.NewSigner().SignHTTP(context.Background(), creds, again, hex.EncodeToString(sum[:]), service, m[3], when); err != nil {
		return m[1], err
	}
	if got := again.Header.Get("Authorization"); got != auth {
		return m[1], fmt.Errorf("signature mismatch:\n got %s\nwant %s", auth, got)
	}
	return m[1], nil
}

func xmlEscape(s string) string {
	var b strings.Builder
	xml.EscapeText(&b, []byte(s))
	return b.String()
}

// isolatedAWSEnv is the environment for a countersign process whose AWS
// default chain must find exactly the given base credentials and consult
// nothing else: no shared config or credentials files, no profile, no
// web identity, no container or instance metadata. STS calls go to
// stsEndpoint (AWS_ENDPOINT_URL_STS, the SDK's service endpoint override).
func isolatedAWSEnv(t testing.TB, accessKey, secretKey, stsEndpoint string) []string {
	t.Helper()
	empty := filepath.Join(t.TempDir(), "empty")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	return []string{
		"AWS_ACCESS_KEY_ID=" + accessKey,
		"AWS_SECRET_ACCESS_KEY=" + secretKey,
		"AWS_SESSION_TOKEN=",
		"AWS_REGION=" + testRegion,
		"AWS_DEFAULT_REGION=",
		"AWS_ENDPOINT_URL_STS=" + stsEndpoint,
		"AWS_IGNORE_CONFIGURED_ENDPOINT_URLS=",
		"AWS_CONFIG_FILE=" + empty,
		"AWS_SHARED_CREDENTIALS_FILE=" + empty,
		"AWS_PROFILE=",
		"AWS_DEFAULT_PROFILE=",
		"AWS_ROLE_ARN=",
		"AWS_WEB_IDENTITY_TOKEN_FILE=",
		"AWS_CONTAINER_CREDENTIALS_RELATIVE_URI=",
		"AWS_CONTAINER_CREDENTIALS_FULL_URI=",
		"AWS_EC2_METADATA_DISABLED=true",
	}
}
