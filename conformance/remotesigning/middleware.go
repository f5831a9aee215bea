package remotesigning

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// signingStep is the aws-sdk-go-v2 Finalize step that signs a request; the
// retry loop sits before it, so every attempt is signed again (as the Java
// SDK calls its signer on every attempt).
const signingStep = "Signing"

// AddToStack replaces the SDK's SigV4 signing step with a call to the remote
// signer. Use it in s3.Options.APIOptions or aws.Config.APIOptions, with
// anonymous credentials (aws.AnonymousCredentials{}).
func (c *Client) AddToStack(stack *middleware.Stack) error {
	m := &signMiddleware{c: c}
	if _, ok := stack.Finalize.Get(signingStep); ok {
		_, err := stack.Finalize.Swap(signingStep, m)
		return err
	}
	return stack.Finalize.Add(m, middleware.After)
}

// AWSConfig is an aws.Config for S3 clients signed by c: anonymous
// credentials, region, the signing step replaced, and httpClient for the
// S3 requests themselves (nil: the SDK's default).
func (c *Client) AWSConfig(region string, httpClient aws.HTTPClient) aws.Config {
	cfg := aws.Config{
		Region:      region,
		Credentials: aws.AnonymousCredentials{},
		APIOptions:  []func(*middleware.Stack) error{c.AddToStack},
	}
	if httpClient != nil {
		cfg.HTTPClient = httpClient
	}
	return cfg
}

type signMiddleware struct{ c *Client }

func (*signMiddleware) ID() string { return signingStep }

func (m *signMiddleware) HandleFinalize(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (
	middleware.FinalizeOutput, middleware.Metadata, error,
) {
	req, ok := in.Request.(*smithyhttp.Request)
	if !ok {
		return middleware.FinalizeOutput{}, middleware.Metadata{}, fmt.Errorf("remotesigning: unexpected transport type %T", in.Request)
	}
	// The context's signing region is the override that s3.WithSigV4SigningRegion
	// and a legacy endpoint resolver set and that the SDK's own signing step
	// still honours; the resolved auth scheme it would otherwise read is
	// private to the service package.
	//lint:ignore SA1019 read for the same reason the SDK still reads it
	region := awsmiddleware.GetSigningRegion(ctx)
	if region == "" {
		region = awsmiddleware.GetRegion(ctx)
	}
	if region == "" {
		region = m.c.cfg.Region
	}
	sr, err := describe(req, region)
	if err != nil {
		return middleware.FinalizeOutput{}, middleware.Metadata{}, err
	}
	sr.Properties = m.c.cfg.Properties
	res, err := m.c.Sign(ctx, sr)
	if err != nil {
		return middleware.FinalizeOutput{}, middleware.Metadata{}, err
	}
	if err := apply(req, sr.Headers, res); err != nil {
		return middleware.FinalizeOutput{}, middleware.Metadata{}, err
	}
	return next.HandleFinalize(ctx, in)
}

// describe builds the RemoteSignRequest for req: every header the SDK set
// (Go's canonical spelling), Content-Length when there is a body, no Host,
// the full URI, and the body only for POST ?delete.
func describe(req *smithyhttp.Request, region string) (Request, error) {
	headers := make(map[string][]string, len(req.Header)+1)
	for name, values := range req.Header {
		if strings.EqualFold(name, "Host") {
			continue
		}
		headers[name] = append([]string(nil), values...)
	}
	if req.ContentLength > 0 || req.ContentLength == 0 && (req.Method == http.MethodPut || req.Method == http.MethodPost) {
		headers["Content-Length"] = []string{strconv.FormatInt(req.ContentLength, 10)}
	}
	sr := Request{
		Region:   region,
		URI:      requestURI(req.URL),
		Method:   req.Method,
		Headers:  headers,
		Provider: "s3",
	}
	if req.Method == http.MethodPost {
		if _, ok := req.URL.Query()["delete"]; ok {
			body, err := readBody(req)
			if err != nil {
				return sr, err
			}
			sr.Body = &body
		}
	}
	return sr, nil
}

// requestURI is scheme://host[:port]/escaped-path[?query], as the SDK will
// send it (Java: SdkHttpFullRequest.getUri()).
func requestURI(u *url.URL) string {
	s := u.Scheme + "://" + u.Host + u.EscapedPath()
	if u.RawQuery != "" {
		s += "?" + u.RawQuery
	}
	return s
}

func readBody(req *smithyhttp.Request) (string, error) {
	stream := req.GetStream()
	if stream == nil {
		return "", nil
	}
	if !req.IsStreamSeekable() {
		return "", fmt.Errorf("remotesigning: DeleteObjects body is not seekable")
	}
	data, err := io.ReadAll(stream)
	if err != nil {
		return "", err
	}
	if err := req.RewindStream(); err != nil {
		return "", err
	}
	return string(data), nil
}

// apply puts the signed request together the way S3V4RestSignerClient does:
// the returned headers without Cache-Control, then the client's original
// headers over them (names compared exactly, as Java's HashMap does), and
// scheme, host, path and query from the returned uri.
func apply(req *smithyhttp.Request, original map[string][]string, res *Result) error {
	u, err := url.Parse(res.URI)
	if err != nil {
		return fmt.Errorf("remotesigning: bad uri in RemoteSignResult: %w", err)
	}
	merged := make(map[string][]string, len(res.Headers))
	for k, v := range res.Headers {
		if k == "Cache-Control" {
			continue
		}
		merged[k] = v
	}
	for k, v := range original {
		merged[k] = v
	}
	// Returned-only headers first, then the client's: when two spellings of
	// one name differ, the client's value is the one sent.
	for k, v := range merged {
		if _, ok := original[k]; !ok {
			setHeader(req, k, v)
		}
	}
	for k, v := range original {
		setHeader(req, k, v)
	}
	req.URL.Scheme, req.URL.Host = u.Scheme, u.Host
	req.URL.Path, req.URL.RawPath = u.Path, u.RawPath
	if u.RawQuery != "" {
		req.URL.RawQuery = u.RawQuery
	}
	return nil
}

func setHeader(req *smithyhttp.Request, name string, values []string) {
	switch {
	case strings.EqualFold(name, "Host"):
		if len(values) > 0 {
			req.Host = values[0]
		}
	case strings.EqualFold(name, "Content-Length"):
		// net/http sends the length of the body it has.
	default:
		req.Header[http.CanonicalHeaderKey(name)] = append([]string(nil), values...)
	}
}

// Conflict is a header the signer returned with another value than the
// client sent under the same name (compared case-insensitively).
type Conflict struct {
	Name           string
	Client, Signer []string
}

// Conflicts lists the headers of ex whose returned values differ from the
// client's: such a header is what breaks PyIceberg (iceberg-python#2422) and
// is silently overridden by the Java client.
func Conflicts(ex Exchange) []Conflict {
	if ex.Result == nil {
		return nil
	}
	var out []Conflict
	for cn, cv := range ex.Request.Headers {
		for rn, rv := range ex.Result.Headers {
			if strings.EqualFold(cn, rn) && strings.Join(cv, "\x00") != strings.Join(rv, "\x00") {
				out = append(out, Conflict{Name: rn, Client: cv, Signer: rv})
			}
		}
	}
	return out
}

// Recorder collects exchanges (use its Record as Config.OnExchange).
type Recorder struct {
	mu        sync.Mutex
	exchanges []Exchange
}

// Record stores ex.
func (r *Recorder) Record(ex Exchange) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.exchanges = append(r.exchanges, ex)
}

// Exchanges returns what was recorded so far.
func (r *Recorder) Exchanges() []Exchange {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Exchange(nil), r.exchanges...)
}

// Reset forgets what was recorded.
func (r *Recorder) Reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.exchanges = nil
}
