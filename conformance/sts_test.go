package conformance

// Temporary credentials that versitygw itself validates.
//
// versitygw v1.8.0 accepts session credentials only with its standalone IAM
// service: the S3 gateway runs with --iam-standalone-endpoint and asks the
// `versitygw iam` process (over its private unix socket) for the signing key
// of every ASIA… access key, which it gives only for the matching session
// token (auth.ResolveDerivedKey, iamutil.ResolveSessionByToken); in any other
// mode a security token is refused as InvalidToken.
//
// Its STS API, though, mints sessions only with AssumeRoleWithWebIdentity
// (iamapi/router.go: the only STS actions are AssumeRoleWithWebIdentity and
// GetCallerIdentity; AssumeRole and GetSessionToken are routed to the IAM
// handler and refused). AssumeRoleWithWebIdentity fetches the issuer's OIDC
// discovery document from https://HOST/ on port 443 (provider URLs may not
// name a port, iamutil.ValidateOIDCProviderURL) and refuses to dial
// loopback or private addresses (iamutil.ssrfSafeHTTPClient), so no test
// issuer on a loopback port can ever be reached.
//
// So the tests mint sessions the way that action stores them: they add a
// session to the IAM service's file store (--dir, iam.json, which the
// service re-reads on every request and which is designed to be shared by
// several writers, iamstore.Engine). Everything else is versitygw's: roles
// and their policies are created through its IAM API, the credentials are
// validated by its S3 gateway and STS (GetCallerIdentity), and its policy
// engine decides as the assumed role.
//
// Copied from the e2e module's sts_test.go (a different module).

import (
	"crypto/rand"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	iamtypes "github.com/aws/aws-sdk-go-v2/service/iam/types"
	"github.com/aws/aws-sdk-go-v2/service/sts"
)

// iamGateway is a versitygw S3 gateway backed by a standalone versitygw IAM
// service (IAM and STS API on iamURL), both with the root keys
// testAccessKey/testSecretKey.
type iamGateway struct {
	*s3Server
	iamURL string
	iamDir string // the IAM service's file store
	iam    *iam.Client

	mu sync.Mutex // serializes writes to the file store
}

// startS3WithIAM starts `versitygw iam` on a free loopback port with a fresh
// file store and its private endpoint on a unix socket, then an S3 gateway
// that authenticates through it. Both stop when the test ends.
func startS3WithIAM(t testing.TB) *iamGateway {
	t.Helper()
	// A short directory of its own: unix socket paths are limited to 108
	// bytes, and t.TempDir names grow with the test name.
	sockDir, err := os.MkdirTemp("", "vgw-iam-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(sockDir) })
	sock := filepath.Join(sockDir, "private.sock")
	iamDir := t.TempDir()

	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		port := freePort(t)
		os.Remove(sock)
		cmd := exec.Command(versitygwBin, "--access", testAccessKey, "--secret", testSecretKey,
			"--port", fmt.Sprintf("127.0.0.1:%d", port), "--quiet",
			"iam", "--dir", iamDir, "--private-ports", sock)
		var logBuf lockedBuffer
		cmd.Stdout, cmd.Stderr = &logBuf, &logBuf
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		err := waitPort(port, 10*time.Second)
		if err == nil {
			err = waitFile(sock, 5*time.Second)
		}
		if err != nil {
			cmd.Process.Kill()
			cmd.Wait()
			lastErr = fmt.Errorf("versitygw iam did not start: %v\n%s", err, logBuf.String())
			continue
		}
		t.Cleanup(func() {
			cmd.Process.Kill()
			cmd.Wait()
		})
		iamURL := fmt.Sprintf("http://127.0.0.1:%d", port)
		return &iamGateway{
			s3Server: startS3(t, "--iam-standalone-endpoint", sock),
			iamURL:   iamURL,
			iamDir:   iamDir,
			iam: iam.New(iam.Options{
				Region:       testRegion,
				BaseEndpoint: aws.String(iamURL),
				Credentials:  credentials.NewStaticCredentialsProvider(testAccessKey, testSecretKey, ""),
			}),
		}
	}
	t.Fatal(lastErr)
	return nil
}

func waitFile(path string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		_, err := os.Stat(path)
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// accountID is the account versitygw's IAM service puts in every ARN.
const accountID = "000000000000"

// createRole creates a role that principals of the account may assume, with
// one inline identity policy allowing actions on resources.
func (g *iamGateway) createRole(t testing.TB, name string, actions []string, resources ...string) iamtypes.Role {
	t.Helper()
	trust := fmt.Sprintf(`{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"AWS":"arn:aws:iam::%s:root"},"Action":"sts:AssumeRole"}]}`, accountID)
	out, err := g.iam.CreateRole(t.Context(), &iam.CreateRoleInput{RoleName: aws.String(name), AssumeRolePolicyDocument: aws.String(trust)})
	if err != nil {
		t.Fatalf("versitygw CreateRole %s: %v", name, err)
	}
	doc, err := json.Marshal(map[string]any{
		"Version":   "2012-10-17",
		"Statement": []any{map[string]any{"Effect": "Allow", "Action": actions, "Resource": resources}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.iam.PutRolePolicy(t.Context(), &iam.PutRolePolicyInput{
		RoleName: aws.String(name), PolicyName: aws.String(name + "-access"), PolicyDocument: aws.String(string(doc)),
	}); err != nil {
		t.Fatalf("versitygw PutRolePolicy %s: %v", name, err)
	}
	return *out.Role
}

// sessionCreds are temporary credentials of an assumed role.
type sessionCreds struct {
	AccessKeyID, SecretAccessKey, SessionToken string
	Expiration                                 time.Time
}

// vgwSession is versitygw v1.8.0's stored session (iamapi/types.Session),
// as AssumeRoleWithWebIdentity writes it into iam.json's "sessions".
type vgwSession struct {
	AccessKeyID     string    `json:"accessKeyId"`
	SecretAccessKey string    `json:"secretAccessKey"`
	SessionToken    string    `json:"sessionToken"`
	RoleArn         string    `json:"roleArn"`
	RoleName        string    `json:"roleName"`
	RoleID          string    `json:"roleId"`
	RoleSessionName string    `json:"roleSessionName"`
	CreateDate      time.Time `json:"createDate"`
	Expiration      time.Time `json:"expiration"`
}

// mintSession creates a session of role in versitygw's IAM store, with
// fresh random credentials, exactly as its STS would have stored it. It
// updates the store the way versitygw does (read, modify, write a temporary
// file, rename over iam.json); call it only while no request is in flight at
// versitygw, whose own writes (last-used records) could otherwise race it.
func (g *iamGateway) mintSession(role iamtypes.Role, sessionName string, d time.Duration) (sessionCreds, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	now := time.Now().UTC().Truncate(time.Second)
	s := vgwSession{
		// ASIA… marks a temporary key (sigv4auth.TempAccessKeyIDPrefix).
		AccessKeyID:     "ASIA" + rand.Text()[:16],
		SecretAccessKey: rand.Text() + rand.Text()[:14],
		SessionToken:    rand.Text() + rand.Text() + rand.Text(),
		RoleArn:         aws.ToString(role.Arn),
		RoleName:        aws.ToString(role.RoleName),
		RoleID:          aws.ToString(role.RoleId),
		RoleSessionName: sessionName,
		CreateDate:      now,
		Expiration:      now.Add(d),
	}
	path := filepath.Join(g.iamDir, "iam.json")
	data, err := os.ReadFile(path)
	if err != nil {
		return sessionCreds{}, err
	}
	var store map[string]json.RawMessage
	if err := json.Unmarshal(data, &store); err != nil {
		return sessionCreds{}, fmt.Errorf("versitygw iam.json: %w", err)
	}
	sessions := map[string]json.RawMessage{}
	if raw := store["sessions"]; len(raw) > 0 && string(raw) != "null" {
		if err := json.Unmarshal(raw, &sessions); err != nil {
			return sessionCreds{}, fmt.Errorf("versitygw iam.json sessions: %w", err)
		}
	}
	if sessions[s.AccessKeyID], err = json.Marshal(s); err != nil {
		return sessionCreds{}, err
	}
	if store["sessions"], err = json.Marshal(sessions); err != nil {
		return sessionCreds{}, err
	}
	if data, err = json.Marshal(store); err != nil {
		return sessionCreds{}, err
	}
	tmp, err := os.CreateTemp(g.iamDir, "iam.json.e2e-")
	if err != nil {
		return sessionCreds{}, err
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.Write(data)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		return sessionCreds{}, err
	}
	return sessionCreds{s.AccessKeyID, s.SecretAccessKey, s.SessionToken, s.Expiration}, nil
}

// callerARN asks versitygw's STS who creds are (GetCallerIdentity), which
// proves that versitygw itself accepts them.
func (g *iamGateway) callerARN(t testing.TB, creds sessionCreds) string {
	t.Helper()
	c := sts.New(sts.Options{
		Region:       testRegion,
		BaseEndpoint: aws.String(g.iamURL),
		Credentials:  credentials.NewStaticCredentialsProvider(creds.AccessKeyID, creds.SecretAccessKey, creds.SessionToken),
	})
	out, err := c.GetCallerIdentity(t.Context(), &sts.GetCallerIdentityInput{})
	if err != nil {
		t.Fatalf("versitygw GetCallerIdentity: %v", err)
	}
	return aws.ToString(out.Arn)
}

// assumedRoleARN is the principal versitygw names for a role session.
func assumedRoleARN(role, session string) string {
	return fmt.Sprintf("arn:aws:sts::%s:assumed-role/%s/%s", accountID, role, session)
}
