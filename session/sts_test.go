package session

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sts"
	ststypes "github.com/aws/aws-sdk-go-v2/service/sts/types"
	"github.com/aws/smithy-go"

	"github.com/countersign/countersign/internal/policyinput"
)

// recordingSTS is this package's own test implementation of AssumeRoleAPI:
// it records the input and answers what it is told. Real STS (SeaweedFS's,
// and the e2e suite's stand-in for what SeaweedFS ignores) is exercised by
// the e2e tests.
type recordingSTS struct {
	in  *sts.AssumeRoleInput
	out *sts.AssumeRoleOutput
	err error
}

func (r *recordingSTS) AssumeRole(_ context.Context, in *sts.AssumeRoleInput, _ ...func(*sts.Options)) (*sts.AssumeRoleOutput, error) {
	r.in = in
	return r.out, r.err
}

func okOutput(exp time.Time) *sts.AssumeRoleOutput {
	return &sts.AssumeRoleOutput{Credentials: &ststypes.Credentials{
		AccessKeyId: aws.String("ASIASESSION"), SecretAccessKey: aws.String("secret"),
		SessionToken: aws.String("token"), Expiration: aws.Time(exp),
	}}
}

const testRole = "arn:aws:iam::123456789012:role/lake-signer"

func TestSTSMint(t *testing.T) {
	exp := time.Date(2026, 12, 2, 5, 0, 0, 0, time.UTC)
	rec := &recordingSTS{out: okOutput(exp)}
	m, err := NewSTS(STSOptions{Client: rec, RoleARN: testRole, ExternalID: "ext-123"})
	if err != nil {
		t.Fatal(err)
	}
	p := policyinput.Principal{ID: "alice smith", Issuer: "https://idp", Groups: []string{"writers"}}
	c, err := m.Mint(context.Background(), Request{Principal: p, Policy: `{"Version":"2012-10-17"}`, Duration: 20 * time.Minute, Tags: map[string]string{"team": "lake"}})
	if err != nil {
		t.Fatal(err)
	}
	if c.AccessKeyID != "ASIASESSION" || c.SessionToken != "token" || !c.Expires.Equal(exp) || c.SessionName != "alice=20smith" || c.SourceIdentity != "alice=20smith" {
		t.Fatalf("credentials %+v", c)
	}
	in := rec.in
	if aws.ToString(in.RoleArn) != testRole || aws.ToString(in.RoleSessionName) != "alice=20smith" || aws.ToString(in.SourceIdentity) != "alice=20smith" ||
		aws.ToString(in.ExternalId) != "ext-123" || aws.ToInt32(in.DurationSeconds) != 1200 || aws.ToString(in.Policy) != `{"Version":"2012-10-17"}` {
		t.Fatalf("AssumeRole input %+v", in)
	}
	var tags []string
	for _, tg := range in.Tags {
		tags = append(tags, aws.ToString(tg.Key)+"="+aws.ToString(tg.Value))
	}
	if got := strings.Join(tags, " "); got != "countersign:groups=writers countersign:issuer=https=3A=2F=2Fidp countersign:principal=alice=20smith team=lake" {
		t.Fatalf("tags %s", got)
	}
	if s := c.String() + c.GoString(); strings.Contains(s, "secret") || strings.Contains(s, "token") {
		t.Fatalf("String shows a secret: %s", s)
	}

	// Without SourceIdentity and tags, for an STS that refuses them.
	m2, _ := NewSTS(STSOptions{Client: rec, RoleARN: testRole, NoSourceIdentity: true, NoTags: true})
	if _, err := m2.Mint(context.Background(), Request{Principal: p, Policy: "{}"}); err != nil {
		t.Fatal(err)
	}
	if rec.in.SourceIdentity != nil || rec.in.Tags != nil || aws.ToInt32(rec.in.DurationSeconds) != 3600 {
		t.Fatalf("AssumeRole input %+v", rec.in)
	}
}

func TestSTSMintRefuses(t *testing.T) {
	rec := &recordingSTS{out: okOutput(time.Now().Add(time.Hour))}
	m, _ := NewSTS(STSOptions{Client: rec, RoleARN: testRole})
	p := policyinput.Principal{ID: "alice"}
	for name, tc := range map[string]struct {
		r    Request
		want string
	}{
		"no policy":    {Request{Principal: p}, "no session policy"},
		"large policy": {Request{Principal: p, Policy: strings.Repeat(" ", 2049) + "{}"}, "over STS's limit of 2048"},
		"short":        {Request{Principal: p, Policy: "{}", Duration: time.Minute}, "outside STS's 15m0s to 12h0m0s"},
		"own tag":      {Request{Principal: p, Policy: "{}", Tags: map[string]string{TagPrincipal: "mallory"}}, "countersign's own"},
	} {
		rec.in = nil
		_, err := m.Mint(context.Background(), tc.r)
		if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), tc.want) || rec.in != nil {
			t.Errorf("%s: err %v (STS called: %v), want ErrUnavailable with %q and no STS call", name, err, rec.in != nil, tc.want)
		}
	}
	rec.err = &smithy.GenericAPIError{Code: "AccessDenied", Message: "not authorized to perform sts:TagSession"}
	_, err := m.Mint(context.Background(), Request{Principal: p, Policy: "{}"})
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "AccessDenied: not authorized to perform sts:TagSession") {
		t.Errorf("STS refusal: %v", err)
	}
	rec.err, rec.out = nil, &sts.AssumeRoleOutput{Credentials: &ststypes.Credentials{AccessKeyId: aws.String("ASIA")}}
	if _, err := m.Mint(context.Background(), Request{Principal: p, Policy: "{}"}); !errors.Is(err, ErrUnavailable) {
		t.Errorf("incomplete credentials: %v", err)
	}
	for _, bad := range []STSOptions{{RoleARN: testRole}, {Client: rec, RoleARN: "arn:aws:iam::1:user/x"}, {Client: rec, RoleARN: testRole, Duration: time.Minute}} {
		if _, err := NewSTS(bad); err == nil {
			t.Errorf("NewSTS(%+v) accepted", bad)
		}
	}
}
