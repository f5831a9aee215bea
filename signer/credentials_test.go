package signer

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/countersign/countersign/s3req"
)

// isolateAWSEnv points the AWS default chain at the test's own environment
// only: no shared config files, no metadata service, no ambient keys.
func isolateAWSEnv(t *testing.T) {
	t.Helper()
	dir := t.TempDir()
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(dir, "config"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(dir, "credentials"))
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	for _, k := range []string{
		"AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_REGION", "AWS_DEFAULT_REGION",
		"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
		"AWS_ROLE_ARN", "AWS_WEB_IDENTITY_TOKEN_FILE",
		"AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_CONTAINER_CREDENTIALS_FULL_URI",
		"AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_STS",
	} {
		t.Setenv(k, "")
	}
}

func TestNewCredentialsStatic(t *testing.T) {
	p, err := NewCredentials(context.Background(), CredentialsConfig{
		Source: "static", AccessKeyID: testAKID, SecretAccessKey: testSecret, SessionToken: testToken,
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := p.(*aws.CredentialsCache); !ok {
		t.Errorf("provider is %T, want *aws.CredentialsCache", p)
	}
	c, err := p.Retrieve(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if c.AccessKeyID != testAKID || c.SecretAccessKey != testSecret || c.SessionToken != testToken {
		t.Errorf("credentials = %q/%q", c.AccessKeyID, c.SessionToken)
	}
}

func TestNewCredentialsDefaultChain(t *testing.T) {
	isolateAWSEnv(t)
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDENV")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "envsecret")
	p, err := NewCredentials(context.Background(), CredentialsConfig{Source: "default", Region: "eu-west-1"})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := p.(*aws.CredentialsCache); !ok {
		t.Errorf("provider is %T, want *aws.CredentialsCache", p)
	}
	c, err := p.Retrieve(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if c.AccessKeyID != "AKIDENV" || c.SecretAccessKey != "envsecret" {
		t.Errorf("got access key %q", c.AccessKeyID)
	}
	// Empty source means the default chain.
	if _, err := NewCredentials(context.Background(), CredentialsConfig{}); err != nil {
		t.Errorf("empty source: %v", err)
	}
}

// TestNewCredentialsAssumeRole runs AssumeRole against a fake STS endpoint,
// with the default chain (environment keys) as base credentials, and signs
// with the session it returns.
func TestNewCredentialsAssumeRole(t *testing.T) {
	isolateAWSEnv(t)
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDBASE")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "basesecret")

	var calls atomic.Int32
	expires := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	sts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		if err := r.ParseForm(); err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		want := map[string]string{
			"Action":          "AssumeRole",
			"RoleArn":         "arn:aws:iam::111122223333:role/countersign",
			"RoleSessionName": "countersign-test",
			"ExternalId":      "ext-123",
			"DurationSeconds": "1800",
		}
		for k, v := range want {
			if got := r.PostForm.Get(k); got != v {
				t.Errorf("STS %s = %q, want %q", k, got, v)
			}
		}
		if auth := r.Header.Get("Authorization"); !strings.Contains(auth, "Credential=AKIDBASE/") || !strings.Contains(auth, "/us-west-2/sts/") {
			t.Errorf("STS call not signed with the base credentials in us-west-2: %q", auth)
		}
		w.Header().Set("Content-Type", "text/xml")
		fmt.Fprintf(w, `<AssumeRoleResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/">
  <AssumeRoleResult>
    <Credentials>
      <AccessKeyId>ASIASESSION</AccessKeyId>
      <SecretAccessKey>sessionsecret</SecretAccessKey>
      <SessionToken>sessiontoken</SessionToken>
      <Expiration>%s</Expiration>
    </Credentials>
    <AssumedRoleUser>
      <Arn>arn:aws:sts::111122223333:assumed-role/countersign/countersign-test</Arn>
      <AssumedRoleId>AROAEXAMPLE:countersign-test</AssumedRoleId>
    </AssumedRoleUser>
  </AssumeRoleResult>
  <ResponseMetadata><RequestId>r-1</RequestId></ResponseMetadata>
</AssumeRoleResponse>`, expires)
	}))
	defer sts.Close()
	t.Setenv("AWS_ENDPOINT_URL_STS", sts.URL)

	p, err := NewCredentials(context.Background(), CredentialsConfig{
		Source:          "assume-role",
		RoleARN:         "arn:aws:iam::111122223333:role/countersign",
		ExternalID:      "ext-123",
		RoleSessionName: "countersign-test",
		Duration:        30 * time.Minute,
		Region:          "us-west-2",
	})
	if err != nil {
		t.Fatal(err)
	}
	s := New(p, Options{})
	r := &s3req.Request{
		Method: "GET", Region: "us-west-2", Scheme: "https", Host: "b.s3.us-west-2.amazonaws.com", RawPath: "/k",
		ContentSHA256: "UNSIGNED-PAYLOAD", AddContentSHA256: true,
	}
	for i := 0; i < 3; i++ {
		out, err := s.Sign(context.Background(), r)
		if err != nil {
			t.Fatal(err)
		}
		if out.AccessKeyID != "ASIASESSION" {
			t.Errorf("signed with %q", out.AccessKeyID)
		}
		if v, _ := out.Headers.Get("X-Amz-Security-Token"); v != "sessiontoken" {
			t.Errorf("X-Amz-Security-Token = %q", v)
		}
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("%d STS calls, want 1 (cached)", n)
	}
}

func TestNewCredentialsErrors(t *testing.T) {
	isolateAWSEnv(t)
	cases := []struct {
		cfg     CredentialsConfig
		wantKey string
	}{
		{CredentialsConfig{Source: "vault"}, "credentials.source"},
		{CredentialsConfig{Source: "Static", AccessKeyID: "a", SecretAccessKey: "b"}, "credentials.source"},
		{CredentialsConfig{Source: "static", SecretAccessKey: testSecret}, "credentials.access_key_id"},
		{CredentialsConfig{Source: "static", AccessKeyID: testAKID}, "credentials.secret_access_key"},
		{CredentialsConfig{Source: "static", AccessKeyID: testAKID, SecretAccessKey: testSecret + " "}, "credentials.secret_access_key"},
		{CredentialsConfig{Source: "static", AccessKeyID: testAKID, SecretAccessKey: testSecret, RoleARN: "arn:aws:iam::1:role/x"}, "credentials.role_arn"},
		{CredentialsConfig{Source: "static", AccessKeyID: testAKID, SecretAccessKey: testSecret, Region: "us-east-1"}, "credentials.region"},
		{CredentialsConfig{Source: "default", SecretAccessKey: testSecret}, "credentials.secret_access_key"},
		{CredentialsConfig{Source: "default", ExternalID: "x"}, "credentials.external_id"},
		{CredentialsConfig{Source: "assume-role", Region: "us-east-1"}, "credentials.role_arn"},
		{CredentialsConfig{Source: "assume-role", Region: "us-east-1", RoleARN: "arn:aws:s3:::bucket"}, "credentials.role_arn"},
		{CredentialsConfig{Source: "assume-role", Region: "us-east-1", RoleARN: "countersign"}, "credentials.role_arn"},
		{CredentialsConfig{Source: "assume-role", Region: "us-east-1", RoleARN: "arn:aws:iam::1:role/x", AccessKeyID: testAKID}, "credentials.access_key_id"},
		{CredentialsConfig{Source: "assume-role", Region: "us-east-1", RoleARN: "arn:aws:iam::1:role/x", RoleSessionName: "has space"}, "credentials.role_session_name"},
		{CredentialsConfig{Source: "assume-role", Region: "us-east-1", RoleARN: "arn:aws:iam::1:role/x", ExternalID: "x"}, "credentials.external_id"},
		{CredentialsConfig{Source: "assume-role", Region: "us-east-1", RoleARN: "arn:aws:iam::1:role/x", Duration: time.Minute}, "credentials.duration"},
		{CredentialsConfig{Source: "assume-role", Region: "us-east-1", RoleARN: "arn:aws:iam::1:role/x", Duration: 13 * time.Hour}, "credentials.duration"},
		{CredentialsConfig{Source: "assume-role", RoleARN: "arn:aws:iam::1:role/x"}, "credentials.region"},
		{CredentialsConfig{Source: "default", PerPrincipal: true}, "credentials.per_principal"},
		{CredentialsConfig{Source: "static", AccessKeyID: testAKID, SecretAccessKey: testSecret, PerPrincipal: true}, "credentials.per_principal"},
		{CredentialsConfig{Source: "assume-role", Region: "us-east-1", RoleARN: "arn:aws:iam::1:role/x", PerPrincipal: true, RoleSessionName: "countersign"}, "credentials.role_session_name"},
	}
	for _, tc := range cases {
		p, err := NewCredentials(context.Background(), tc.cfg)
		if err == nil || p != nil {
			t.Errorf("%v: no error", tc.cfg)
			continue
		}
		if !strings.Contains(err.Error(), tc.wantKey) {
			t.Errorf("%v: error %q does not name %s", tc.cfg, err, tc.wantKey)
		}
		if strings.Contains(err.Error(), testSecret) || strings.Contains(err.Error(), testToken) {
			t.Errorf("%v: error leaks a secret: %q", tc.cfg, err)
		}
	}
	_, err := NewCredentials(context.Background(), CredentialsConfig{Source: "assume-role"})
	if want := `credentials.role_arn is required when credentials.source is "assume-role"`; err == nil || err.Error() != want {
		t.Errorf("error = %v, want %q", err, want)
	}
}

func TestCredentialsConfigRedacted(t *testing.T) {
	cfg := CredentialsConfig{
		Source: "static", AccessKeyID: testAKID, SecretAccessKey: testSecret, SessionToken: testToken,
		RoleARN: "arn:aws:iam::1:role/x", ExternalID: "external-id-secret", Duration: time.Hour, Region: "us-east-1",
	}
	var logged bytes.Buffer
	slog.New(slog.NewJSONHandler(&logged, nil)).Info("config", "credentials", cfg, "ptr", &cfg)
	outputs := map[string]string{
		"String": cfg.String(),
		"%v":     fmt.Sprintf("%v", cfg),
		"%+v":    fmt.Sprintf("%+v", cfg),
		"%#v":    fmt.Sprintf("%#v", cfg),
		//lint:ignore S1025 the test checks what fmt's %s verb prints, which need not be String()
		"%s ptr": fmt.Sprintf("%s", &cfg),
		"slog":   logged.String(),
	}
	for name, out := range outputs {
		for _, secret := range []string{testSecret, testToken, "external-id-secret"} {
			if strings.Contains(out, secret) {
				t.Errorf("%s leaks a secret: %s", name, out)
			}
		}
		if !strings.Contains(out, testAKID) || !strings.Contains(out, redacted) {
			t.Errorf("%s should show the access key id and the redaction marker: %s", name, out)
		}
	}
	if !strings.Contains(logged.String(), `"secret_access_key":"[REDACTED]"`) {
		t.Errorf("slog output: %s", logged.String())
	}
}

// A caller's deadline bounds its wait for assume-role credentials: a hung
// STS (a stand-in that accepts and never answers; no real STS hangs on
// purpose) gives ErrCredentials wrapping the deadline, at about the
// deadline, not when STS answers.
func TestAssumeRoleHonoursTheCallersDeadline(t *testing.T) {
	isolateAWSEnv(t)
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDBASE")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "basesecret")
	stop := make(chan struct{})
	sts := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { <-stop }))
	defer sts.Close()
	defer close(stop) // first: Close waits for the handler
	t.Setenv("AWS_ENDPOINT_URL_STS", sts.URL)
	p, err := NewCredentials(context.Background(), CredentialsConfig{
		Source: "assume-role", RoleARN: "arn:aws:iam::111122223333:role/countersign", Region: "us-west-2",
	})
	if err != nil {
		t.Fatal(err)
	}
	const deadline = 300 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	start := time.Now()
	_, err = New(p, Options{}).Sign(ctx, &s3req.Request{
		Method: "GET", Region: "us-west-2", Scheme: "https", Host: "b.s3.us-west-2.amazonaws.com", RawPath: "/k",
		ContentSHA256: "UNSIGNED-PAYLOAD", AddContentSHA256: true,
	})
	if elapsed := time.Since(start); elapsed > 5*deadline {
		t.Fatalf("Sign returned after %s, over 5x the caller's deadline of %s", elapsed, deadline)
	}
	if !errors.Is(err, ErrCredentials) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v, want ErrCredentials cut by the deadline", err)
	}
}

func TestNewSessionMinter(t *testing.T) {
	t.Setenv("AWS_ACCESS_KEY_ID", testAKID)
	t.Setenv("AWS_SECRET_ACCESS_KEY", testSecret)
	t.Setenv("AWS_CONFIG_FILE", "/nonexistent")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")
	cfg := CredentialsConfig{Source: "assume-role", Region: "us-east-1", RoleARN: "arn:aws:iam::1:role/x", PerPrincipal: true, Duration: 30 * time.Minute}
	if _, err := NewSessionMinter(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	// The base credentials, not an AssumeRole provider: per principal, the
	// role is assumed by the minter.
	p, err := NewCredentials(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if c, err := p.Retrieve(context.Background()); err != nil || c.AccessKeyID != testAKID {
		t.Fatalf("base credentials %v %v", c.AccessKeyID, err)
	}
	cfg.PerPrincipal = false
	if _, err := NewSessionMinter(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), "per_principal") {
		t.Fatalf("without per_principal: %v", err)
	}
}
