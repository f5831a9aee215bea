package session

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/arn"
	"github.com/aws/aws-sdk-go-v2/service/sts"
	ststypes "github.com/aws/aws-sdk-go-v2/service/sts/types"
	"github.com/aws/smithy-go"
)

// STS limits on AssumeRole (AWS STS API reference).
const (
	MinDuration     = 15 * time.Minute
	MaxDuration     = 12 * time.Hour
	DefaultDuration = time.Hour
	// MaxPolicyBytes is the plain-text limit of an inline session policy;
	// STS also limits the packed (compressed) size of policy and tags
	// together and answers PackedPolicyTooLarge past it.
	MaxPolicyBytes = 2048
	maxTags        = 50
)

// AssumeRoleAPI is the STS call a minter makes (implemented by *sts.Client).
type AssumeRoleAPI interface {
	AssumeRole(ctx context.Context, in *sts.AssumeRoleInput, optFns ...func(*sts.Options)) (*sts.AssumeRoleOutput, error)
}

// STSOptions configures an STS minter.
type STSOptions struct {
	// Client calls STS with countersign's base credentials.
	Client AssumeRoleAPI
	// RoleARN is the role every session assumes.
	RoleARN string
	// ExternalID, when the role's trust policy requires one.
	ExternalID string
	// Duration of a session when the request names none; zero means
	// DefaultDuration.
	Duration time.Duration
	// NoSourceIdentity and NoTags leave SourceIdentity and session tags
	// out of AssumeRole, for an STS that refuses them. With AWS the role's
	// trust policy must allow sts:SetSourceIdentity and sts:TagSession.
	NoSourceIdentity, NoTags bool
}

// STS mints sessions with STS AssumeRole.
type STS struct {
	opts STSOptions
}

// NewSTS checks opts and returns the minter.
func NewSTS(opts STSOptions) (*STS, error) {
	if opts.Client == nil {
		return nil, errors.New("session: STS minter needs an STS client")
	}
	a, err := arn.Parse(opts.RoleARN)
	if err != nil || a.Service != "iam" || !strings.HasPrefix(a.Resource, "role/") {
		return nil, fmt.Errorf("session: role ARN %q is not an IAM role ARN (arn:aws:iam::ACCOUNT:role/NAME)", opts.RoleARN)
	}
	if opts.Duration == 0 {
		opts.Duration = DefaultDuration
	}
	if opts.Duration < MinDuration || opts.Duration > MaxDuration {
		return nil, fmt.Errorf("session: duration %s must be between %s and %s", opts.Duration, MinDuration, MaxDuration)
	}
	return &STS{opts: opts}, nil
}

// Mint assumes the role for r.Principal with r.Policy. Errors wrap
// ErrUnavailable and name what STS or the request got wrong.
func (s *STS) Mint(ctx context.Context, r Request) (Credentials, error) {
	if strings.TrimSpace(r.Policy) == "" {
		return Credentials{}, fmt.Errorf("%w: no session policy for principal %q (a session without one could do everything the role can)", ErrUnavailable, r.Principal.ID)
	}
	if len(r.Policy) > MaxPolicyBytes {
		return Credentials{}, fmt.Errorf("%w: the session policy for principal %q is %d bytes, over STS's limit of %d", ErrUnavailable, r.Principal.ID, len(r.Policy), MaxPolicyBytes)
	}
	d := r.Duration
	if d == 0 {
		d = s.opts.Duration
	}
	if d < MinDuration || d > MaxDuration {
		return Credentials{}, fmt.Errorf("%w: session duration %s is outside STS's %s to %s", ErrUnavailable, d, MinDuration, MaxDuration)
	}
	name, source := SessionName(&r.Principal), SourceIdentity(&r.Principal)
	in := &sts.AssumeRoleInput{
		RoleArn:         aws.String(s.opts.RoleARN),
		RoleSessionName: aws.String(name),
		Policy:          aws.String(r.Policy),
		DurationSeconds: aws.Int32(int32(d / time.Second)),
	}
	if s.opts.ExternalID != "" {
		in.ExternalId = aws.String(s.opts.ExternalID)
	}
	if !s.opts.NoSourceIdentity {
		in.SourceIdentity = aws.String(source)
	}
	if !s.opts.NoTags {
		tags, err := sessionTags(&r)
		if err != nil {
			return Credentials{}, err
		}
		in.Tags = tags
	}
	out, err := s.opts.Client.AssumeRole(ctx, in)
	if err != nil {
		return Credentials{}, fmt.Errorf("%w: STS AssumeRole of %s for principal %q: %s", ErrUnavailable, s.opts.RoleARN, r.Principal.ID, describe(err))
	}
	c := out.Credentials
	if c == nil || aws.ToString(c.AccessKeyId) == "" || aws.ToString(c.SecretAccessKey) == "" || aws.ToString(c.SessionToken) == "" || c.Expiration == nil {
		return Credentials{}, fmt.Errorf("%w: STS AssumeRole of %s answered without complete credentials", ErrUnavailable, s.opts.RoleARN)
	}
	return Credentials{
		AccessKeyID: aws.ToString(c.AccessKeyId), SecretAccessKey: aws.ToString(c.SecretAccessKey),
		SessionToken: aws.ToString(c.SessionToken), Expires: *c.Expiration,
		SourceIdentity: source, SessionName: name,
	}, nil
}

// sessionTags are the principal's tags and r.Tags, sorted by key.
func sessionTags(r *Request) ([]ststypes.Tag, error) {
	all := PrincipalTags(&r.Principal)
	for k, v := range r.Tags {
		if _, dup := all[k]; dup {
			return nil, fmt.Errorf("%w: session tag %q is countersign's own", ErrUnavailable, k)
		}
		all[k] = v
	}
	if len(all) > maxTags {
		return nil, fmt.Errorf("%w: %d session tags, over STS's limit of %d", ErrUnavailable, len(all), maxTags)
	}
	keys := make([]string, 0, len(all))
	for k := range all {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	tags := make([]ststypes.Tag, len(keys))
	for i, k := range keys {
		tags[i] = ststypes.Tag{Key: aws.String(k), Value: aws.String(all[k])}
	}
	return tags, nil
}

// describe is an STS error's code and message (never a credential).
func describe(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode() + ": " + ae.ErrorMessage()
	}
	return err.Error()
}
