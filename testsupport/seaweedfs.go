package testsupport

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// The second S3 implementation: SeaweedFS's all-in-one `weed mini`
// (master, volume, filer, S3 gateway and its admin server in one process).
// Parser differentials depend on the server, so the e2e suite runs its
// signing tests against it as well as versitygw.

// Backend names an S3 implementation a test runs against.
type Backend string

const (
	Versitygw Backend = "versitygw"
	SeaweedFS Backend = "seaweedfs"
)

// miniPorts are every listening port of `weed mini`, each given explicitly
// so that nothing binds a default port (which mini would otherwise move
// to a free one silently) and all of them are on loopback.
var miniPorts = []string{
	"master.port", "master.port.grpc",
	"volume.port", "volume.port.grpc",
	"filer.port", "filer.port.grpc",
	"s3.port", "s3.port.grpc",
	"webdav.port", // disabled below, but given so nothing defaults
	"admin.port", "admin.port.grpc",
}

// StartSeaweedFS runs `weed mini` with a fresh data directory, every port
// on a free loopback port, virtual-hosted buckets under "localhost", and
// one static identity with s's keys and every action; telemetry (which
// reports to an outside host by default), WebDAV, the Iceberg and Lance
// catalogs and the admin's legacy port are off. It waits until the S3
// gateway answers a signed ListBuckets and stops it when the test ends.
// A failed start (a port taken in between) is retried on new ports.
func (s *Servers) StartSeaweedFS(t testing.TB) *S3Server {
	t.Helper()
	return s.StartSeaweedFSWith(t, SeaweedFSOptions{})
}

// SeaweedFSOptions are what StartSeaweedFSWith adds to StartSeaweedFS.
type SeaweedFSOptions struct {
	// STS turns on SeaweedFS's IAM and STS (-s3.iam.config): AssumeRole is
	// POST / on the S3 port, signed with the root identity's keys, for
	// role SeaweedFSRoleARN, which allows every S3 action; what a session
	// may do is then exactly its inline session policy, which SeaweedFS
	// enforces (it ignores SourceIdentity and session tags).
	STS bool
	// Iceberg serves SeaweedFS's Iceberg REST catalog on a free loopback
	// port (its -s3.port.iceberg), at S3Server.IcebergURL. Its callers
	// authenticate with the identity's keys: OAuth2 client credentials at
	// /v1/oauth/tokens give an HS256 token (see SeaweedIcebergSigningKey),
	// or SigV4. Its warehouses are table buckets (CreateTableBucket).
	Iceberg bool
}

// SeaweedFSRoleARN is the role StartSeaweedFSWith's STS lets the root
// identity assume.
const SeaweedFSRoleARN = "arn:aws:iam::000000000000:role/countersign-sessions"

// seaweedSTSSigningKey signs SeaweedFS's session tokens in tests (base64).
const seaweedSTSSigningKey = "Y291bnRlcnNpZ24tdGVzdC1zdHMtc2lnbmluZy1rZXktMzI="

// StartSeaweedFSWith is StartSeaweedFS with options.
func (s *Servers) StartSeaweedFSWith(t testing.TB, o SeaweedFSOptions) *S3Server {
	t.Helper()
	if s.WeedBin == "" {
		t.Fatal("StartSeaweedFS: no weed binary (testsupport.Build.SeaweedFS is off)")
	}
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	if err := os.Mkdir(data, 0o755); err != nil {
		t.Fatal(err)
	}
	type credential struct {
		AccessKey string `json:"accessKey"`
		SecretKey string `json:"secretKey"`
	}
	type identity struct {
		Name        string       `json:"name"`
		Credentials []credential `json:"credentials"`
		Actions     []string     `json:"actions"`
	}
	conf := map[string]any{"identities": []identity{{
		Name:        "root",
		Credentials: []credential{{s.AccessKey, s.SecretKey}},
		Actions:     []string{"Admin", "Read", "Write", "List", "Tagging"},
	}}}
	if o.STS {
		allow := func(action, principal string) map[string]any {
			st := map[string]any{"Effect": "Allow", "Action": []string{action}}
			if principal != "" {
				st["Principal"] = principal
			} else {
				st["Resource"] = []string{"*"}
			}
			return map[string]any{"Version": "2012-10-17", "Statement": []any{st}}
		}
		conf["sts"] = map[string]any{"tokenDuration": "1h", "maxSessionLength": "12h", "issuer": "seaweedfs-sts", "signingKey": seaweedSTSSigningKey}
		conf["policy"] = map[string]any{"defaultEffect": "Deny", "storeType": "memory"}
		conf["policies"] = []any{map[string]any{"name": "S3FullAccess", "document": allow("s3:*", "")}}
		conf["roles"] = []any{map[string]any{
			"roleName": "countersign-sessions", "roleArn": SeaweedFSRoleARN,
			"attachedPolicies": []string{"S3FullAccess"}, "trustPolicy": allow("sts:AssumeRole", "*"),
		}}
	}
	cfg, err := json.Marshal(conf)
	if err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(dir, "s3.json")
	if err := os.WriteFile(cfgPath, cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		args := []string{"mini", "-dir", data, "-ip", "127.0.0.1", "-ip.bind", "127.0.0.1",
			"-master.telemetry=false", "-webdav=false", "-s3.port.lance=0",
			"-admin.port.legacy=0", "-s3.config", cfgPath, "-s3.domainName", "localhost"}
		if o.STS {
			args = append(args, "-s3.iam.config", cfgPath)
		}
		ports := map[string]int{}
		names := miniPorts
		if o.Iceberg {
			names = append(slices.Clip(names), "s3.port.iceberg")
		} else {
			args = append(args, "-s3.port.iceberg=0")
		}
		for _, name := range names {
			ports[name] = FreePort(t)
			args = append(args, "-"+name+"="+strconv.Itoa(ports[name]))
		}
		cmd := exec.Command(s.WeedBin, args...)
		cmd.Dir = dir
		var logBuf LockedBuffer
		cmd.Stdout, cmd.Stderr = &logBuf, &logBuf
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		srv := &S3Server{Port: ports["s3.port"], Dir: dir, Backend: SeaweedFS, servers: s}
		err := waitS3(srv, 60*time.Second)
		if err == nil && o.Iceberg {
			srv.IcebergURL = "http://127.0.0.1:" + strconv.Itoa(ports["s3.port.iceberg"])
			err = waitIceberg(srv.IcebergURL, 60*time.Second)
		}
		if err != nil {
			cmd.Process.Kill()
			cmd.Wait()
			lastErr = fmt.Errorf("weed mini did not start: %v\n%s", err, logBuf.String())
			continue
		}
		t.Cleanup(func() { stopProcess(cmd) })
		return srv
	}
	t.Fatal(lastErr)
	return nil
}

// waitS3 waits until the server answers a signed ListBuckets: the port
// opens before the gateway has loaded its identities from the filer.
func waitS3(srv *S3Server, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_, err := srv.AdminClient().ListBuckets(ctx, &s3.ListBucketsInput{})
		cancel()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return err
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitIceberg waits until the Iceberg catalog answers GET /v1/config.
func waitIceberg(base string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	cl := &http.Client{Timeout: 2 * time.Second}
	for {
		resp, err := cl.Get(base + "/v1/config")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("GET /v1/config: %s", resp.Status)
		}
		if time.Now().After(deadline) {
			return err
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// SeaweedIcebergSigningKey is the HS256 key SeaweedFS's Iceberg catalog
// verifies the bearer tokens of an access key with (its
// weed/s3api/iceberg deriveSigningKey: HMAC-SHA256 keyed with
// "seaweedfs-iceberg-oauth" over access key, NUL, secret key). A token
// signed with it whose claims name the access key ("access_key") is
// accepted by the catalog, whoever minted it.
func SeaweedIcebergSigningKey(accessKey, secretKey string) []byte {
	h := hmac.New(sha256.New, []byte("seaweedfs-iceberg-oauth"))
	h.Write([]byte(accessKey))
	h.Write([]byte{0})
	h.Write([]byte(secretKey))
	return h.Sum(nil)
}

// CreateTableBucket creates an S3 Tables table bucket (SeaweedFS's
// CreateTableBucket: PUT /buckets on the S3 port, SigV4 for service
// "s3tables" with the identity's keys), which the Iceberg catalog serves
// as the warehouse (prefix) of the same name. An existing bucket is fine.
func (w *S3Server) CreateTableBucket(t testing.TB, name string) {
	t.Helper()
	st, b := w.RootCall(t, http.MethodPut, "/buckets", "application/x-amz-json-1.1", `{"name":`+strconv.Quote(name)+`}`, "s3tables")
	if st != http.StatusOK && st != http.StatusConflict {
		t.Fatalf("CreateTableBucket %s: %d %s", name, st, b)
	}
}

// RootCall sends one request to the S3 port, signed (SigV4 for service:
// "s3tables", "sts") with the root identity's keys, the way SeaweedFS's
// APIs beside S3 take them, and returns the status and body.
func (w *S3Server) RootCall(t testing.TB, method, path, contentType, body, service string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, "http://127.0.0.1:"+strconv.Itoa(w.Port)+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", contentType)
	sum := sha256.Sum256([]byte(body))
	creds := aws.Credentials{AccessKeyID: w.servers.AccessKey, SecretAccessKey: w.servers.SecretKey}
	if err := v4.NewSigner().SignHTTP(context.Background(), creds, req, hex.EncodeToString(sum[:]), service, w.servers.Region, time.Now()); err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// SeaweedIcebergToken is an HS256 bearer token that SeaweedFS's Iceberg
// catalog accepts for accessKey (signed with SeaweedIcebergSigningKey of
// accessKey and secretKey, naming accessKey in its access_key claim),
// with claims added (iss, aud, sub, groups, ...; exp defaults to an hour).
// Given the same key as auth.hs256_secret, countersign accepts it too: one
// token for both, as an identity provider's would be in a deployment.
func SeaweedIcebergToken(accessKey, secretKey, tokenAccessKey string, claims map[string]any) string {
	c := map[string]any{"exp": time.Now().Add(time.Hour).Unix(), "iat": time.Now().Unix(), "identity_name": "root"}
	for k, v := range claims {
		c[k] = v
	}
	c["access_key"] = tokenAccessKey
	enc := base64.RawURLEncoding
	body, _ := json.Marshal(c)
	signing := enc.EncodeToString([]byte(`{"alg":"HS256","typ":"JWT"}`)) + "." + enc.EncodeToString(body)
	mac := hmac.New(sha256.New, SeaweedIcebergSigningKey(accessKey, secretKey))
	mac.Write([]byte(signing))
	return signing + "." + enc.EncodeToString(mac.Sum(nil))
}
