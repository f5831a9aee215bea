package testsupport

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
// (its iamapi router knows only AssumeRoleWithWebIdentity and
// GetCallerIdentity as STS actions; AssumeRole and GetSessionToken are
// routed to the IAM handler and refused). AssumeRoleWithWebIdentity
// fetches the issuer's OIDC discovery document from https://HOST/ on port
// 443 (provider URLs may not name a port, iamutil.ValidateOIDCProviderURL)
// and refuses to dial loopback or private addresses
// (iamutil.ssrfSafeHTTPClient), so no test issuer on a loopback port can
// ever be reached.
//
// So the tests mint sessions the way that action stores them: they add a
// session to the IAM service's file store (--dir, iam.json, which the
// service re-reads on every request and which is designed to be shared by
// several writers, iamstore.Engine). Everything else is versitygw's: roles
// and their policies are created through its IAM API, the credentials are
// validated by its S3 gateway and STS (GetCallerIdentity), and its policy
// engine decides as the assumed role.

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

// IAMGateway is a versitygw S3 gateway (S3) backed by a standalone
// versitygw IAM service (IAM and STS API on IAMURL), both with the root
// keys of the Servers that started them.
type IAMGateway struct {
	S3     *S3Server
	IAMURL string
	IAMDir string      // the IAM service's file store
	IAM    *iam.Client // with the root keys

	servers *Servers
	mu      sync.Mutex // serializes writes to the file store
}

// StartS3WithIAM starts `versitygw iam` on a free loopback port with a fresh
// file store and its private endpoint on a unix socket, then an S3 gateway
// that authenticates through it. Both stop when the test ends.
func (s *Servers) StartS3WithIAM(t testing.TB) *IAMGateway {
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
		port := FreePort(t)
		os.Remove(sock)
		cmd := exec.Command(s.VersitygwBin, "--access", s.AccessKey, "--secret", s.SecretKey,
			"--port", fmt.Sprintf("127.0.0.1:%d", port), "--quiet",
			"iam", "--dir", iamDir, "--private-ports", sock)
		var logBuf LockedBuffer
		cmd.Stdout, cmd.Stderr = &logBuf, &logBuf
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		err := WaitPort(port, 10*time.Second)
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
		return &IAMGateway{
			S3:     s.StartS3(t, "--iam-standalone-endpoint", sock),
			IAMURL: iamURL,
			IAMDir: iamDir,
			IAM: iam.New(iam.Options{
				Region:       s.Region,
				BaseEndpoint: aws.String(iamURL),
				Credentials:  credentials.NewStaticCredentialsProvider(s.AccessKey, s.SecretKey, ""),
			}),
			servers: s,
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

// AccountID is the account versitygw's IAM service puts in every ARN.
const AccountID = "000000000000"

// CreateRole creates a role that principals of the account may assume, with
// one inline identity policy allowing actions on resources.
func (g *IAMGateway) CreateRole(t testing.TB, name string, actions []string, resources ...string) iamtypes.Role {
	t.Helper()
	trust := fmt.Sprintf(`{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"AWS":"arn:aws:iam::%s:root"},"Action":"sts:AssumeRole"}]}`, AccountID)
	out, err := g.IAM.CreateRole(t.Context(), &iam.CreateRoleInput{RoleName: aws.String(name), AssumeRolePolicyDocument: aws.String(trust)})
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
	if _, err := g.IAM.PutRolePolicy(t.Context(), &iam.PutRolePolicyInput{
		RoleName: aws.String(name), PolicyName: aws.String(name + "-access"), PolicyDocument: aws.String(string(doc)),
	}); err != nil {
		t.Fatalf("versitygw PutRolePolicy %s: %v", name, err)
	}
	return *out.Role
}

// SessionCreds are temporary credentials of an assumed role.
type SessionCreds struct {
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

// MintSession creates a session of role in versitygw's IAM store, with
// fresh random credentials, exactly as its STS would have stored it. It
// updates the store the way versitygw does (read, modify, write a temporary
// file, rename over iam.json); call it only while no request is in flight at
// versitygw, whose own writes (last-used records) could otherwise race it.
func (g *IAMGateway) MintSession(role iamtypes.Role, sessionName string, d time.Duration) (SessionCreds, error) {
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
	path := filepath.Join(g.IAMDir, "iam.json")
	data, err := os.ReadFile(path)
	if err != nil {
		return SessionCreds{}, err
	}
	var store map[string]json.RawMessage
	if err := json.Unmarshal(data, &store); err != nil {
		return SessionCreds{}, fmt.Errorf("versitygw iam.json: %w", err)
	}
	sessions := map[string]json.RawMessage{}
	if raw := store["sessions"]; len(raw) > 0 && string(raw) != "null" {
		if err := json.Unmarshal(raw, &sessions); err != nil {
			return SessionCreds{}, fmt.Errorf("versitygw iam.json sessions: %w", err)
		}
	}
	if sessions[s.AccessKeyID], err = json.Marshal(s); err != nil {
		return SessionCreds{}, err
	}
	if store["sessions"], err = json.Marshal(sessions); err != nil {
		return SessionCreds{}, err
	}
	if data, err = json.Marshal(store); err != nil {
		return SessionCreds{}, err
	}
	tmp, err := os.CreateTemp(g.IAMDir, "iam.json.tmp-")
	if err != nil {
		return SessionCreds{}, err
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
		return SessionCreds{}, err
	}
	return SessionCreds{s.AccessKeyID, s.SecretAccessKey, s.SessionToken, s.Expiration}, nil
}

// CallerARN asks versitygw's STS who creds are (GetCallerIdentity), which
// proves that versitygw itself accepts them.
func (g *IAMGateway) CallerARN(t testing.TB, creds SessionCreds) string {
	t.Helper()
	c := sts.New(sts.Options{
		Region:       g.servers.Region,
		BaseEndpoint: aws.String(g.IAMURL),
		Credentials:  credentials.NewStaticCredentialsProvider(creds.AccessKeyID, creds.SecretAccessKey, creds.SessionToken),
	})
	out, err := c.GetCallerIdentity(t.Context(), &sts.GetCallerIdentityInput{})
	if err != nil {
		t.Fatalf("versitygw GetCallerIdentity: %v", err)
	}
	return aws.ToString(out.Arn)
}

// AssumedRoleARN is the principal versitygw names for a role session.
func AssumedRoleARN(role, session string) string {
	return fmt.Sprintf("arn:aws:sts::%s:assumed-role/%s/%s", AccountID, role, session)
}
