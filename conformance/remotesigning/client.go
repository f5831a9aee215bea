// Package remotesigning is a Go copy of Apache Iceberg's Java remote-signing
// client, org.apache.iceberg.aws.s3.signer.S3V4RestSignerClient (Iceberg
// 1.10 and 1.11), for the aws-sdk-go-v2 S3 client. It exists so that the
// conformance tests drive countersign exactly the way a JVM engine (Spark,
// Flink, Trino through S3FileIO) does, and so that iceberg-go, which has no
// remote signing of its own, can be pointed at a signer.
//
// What it copies from the Java client, on purpose:
//
//   - The S3 client is anonymous: no credentials, so the request description
//     carries no X-Amz-Security-Token; the signer must add it.
//   - The description holds every header the SDK set before signing (no
//     Host), the signing region, the full URI, and a body only for
//     POST ?delete (DeleteObjects).
//   - After the response the client's own headers are put back over the
//     returned ones (client wins), Cache-Control is dropped, and scheme,
//     host, port, path and query are taken from the returned uri.
//   - A response with exactly "Cache-Control: private" is cached for 30 s,
//     at most 100 entries, keyed by (method, region, uri) only: not by
//     principal, and by default shared by every Client in the process, like
//     the JVM-wide static cache.
//   - 429, and 503 with Retry-After, are retried (rest.client.max-retries,
//     default 5) after Retry-After seconds or an exponential backoff; every
//     other non-2xx answer fails the S3 call with Iceberg's error text
//     ("Forbidden: <message>", ...).
package remotesigning

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Iceberg's property names, as S3V4RestSignerClient and S3FileIO read them.
const (
	PropRemoteSigningEnabled = "s3.remote-signing-enabled"
	PropS3SignerURI          = "s3.signer.uri"      // 1.10; deprecated in 1.11 but still read first
	PropS3SignerEndpoint     = "s3.signer.endpoint" // 1.10; deprecated in 1.11 but still read first
	PropSignerURI            = "signer.uri"         // 1.11
	PropSignerEndpoint       = "signer.endpoint"    // 1.11
	PropURI                  = "uri"                // the catalog URI, the signer URI's fallback
	PropToken                = "token"
	PropMaxRetries           = "rest.client.max-retries"
	PropHeaderPrefix         = "header."

	// DefaultEndpoint is the signer path when none is configured.
	DefaultEndpoint = "v1/aws/s3/sign"
)

// Config configures a Client. FromProperties builds one from Iceberg catalog
// properties.
type Config struct {
	// SignerURI is the signer's base URI; Endpoint the path resolved against
	// it (an absolute http(s) URL is used as is).
	SignerURI string
	Endpoint  string
	// Token returns the bearer token sent as "Authorization: Bearer"; nil or
	// "" sends none.
	Token func() string
	// Headers are sent with every sign request (Iceberg 1.11+: the
	// header.* catalog properties).
	Headers map[string]string
	// Properties are sent as the request's "properties" (empty: omitted).
	Properties map[string]string
	// Region is the signing region when the SDK put none in the context.
	Region string
	// HTTPClient talks to the signer (default: a client with a 30 s timeout).
	HTTPClient *http.Client
	// MaxRetries bounds the retries of 429 and 503-with-Retry-After (0: 5).
	MaxRetries int
	// Cache holds "Cache-Control: private" responses; nil uses the
	// process-wide SharedCache, as the JVM does.
	Cache *Cache
	// OnExchange, when set, sees every signing (also the cached ones).
	OnExchange func(Exchange)
}

// FromProperties reads Iceberg's catalog properties the way the 1.11 Java
// client does: s3.signer.uri, else signer.uri, else uri; s3.signer.endpoint,
// else signer.endpoint, else v1/aws/s3/sign; token; header.*;
// rest.client.max-retries.
func FromProperties(props map[string]string) (Config, error) {
	var cfg Config
	cfg.SignerURI = firstOf(props, PropS3SignerURI, PropSignerURI, PropURI)
	if cfg.SignerURI == "" {
		return cfg, errors.New("S3 signer service URI is required (s3.signer.uri, signer.uri or uri)")
	}
	cfg.Endpoint = firstOf(props, PropS3SignerEndpoint, PropSignerEndpoint)
	if tok := props[PropToken]; tok != "" {
		cfg.Token = func() string { return tok }
	}
	for k, v := range props {
		if name, ok := strings.CutPrefix(k, PropHeaderPrefix); ok && name != "" {
			if cfg.Headers == nil {
				cfg.Headers = map[string]string{}
			}
			cfg.Headers[name] = v
		}
	}
	if s := props[PropMaxRetries]; s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n <= 0 {
			return cfg, fmt.Errorf("%s must be a positive integer, got %q", PropMaxRetries, s)
		}
		cfg.MaxRetries = n
	}
	return cfg, nil
}

func firstOf(props map[string]string, keys ...string) string {
	for _, k := range keys {
		if v, ok := props[k]; ok {
			return v
		}
	}
	return ""
}

// Request is Iceberg's RemoteSignRequest.
type Request struct {
	Region     string              `json:"region"`
	URI        string              `json:"uri"`
	Method     string              `json:"method"`
	Headers    map[string][]string `json:"headers"`
	Properties map[string]string   `json:"properties,omitempty"`
	Body       *string             `json:"body,omitempty"`
	Provider   string              `json:"provider,omitempty"`
}

// Result is Iceberg's RemoteSignResult.
type Result struct {
	URI     string              `json:"uri"`
	Headers map[string][]string `json:"headers"`
}

// Exchange records one signing, for tests to assert on.
type Exchange struct {
	Request      Request
	Result       *Result // nil when signing failed
	CacheControl string  // the signer's response header
	FromCache    bool    // answered from the cache, the signer was not asked
	Attempts     int     // HTTP requests made to the signer
	Err          error
}

// Error is a non-2xx answer of the signer, with Iceberg's error model.
type Error struct {
	Status  int
	Type    string
	Message string
	Body    string
}

// Error words the failure as Iceberg's ErrorHandlers.defaultErrorHandler
// does ("Forbidden: <message>", "Not authorized: <message>", ...).
func (e *Error) Error() string {
	msg := e.Message
	if msg == "" {
		msg = e.Body
	}
	var prefix string
	switch e.Status {
	case http.StatusBadRequest:
		prefix = "Malformed request"
	case http.StatusUnauthorized:
		prefix = "Not authorized"
	case http.StatusForbidden:
		prefix = "Forbidden"
	case http.StatusNotFound:
		prefix = "Not found"
	case http.StatusServiceUnavailable:
		prefix = "Service unavailable"
	default:
		if e.Status >= 500 {
			prefix = "Server error"
		} else {
			prefix = "Request failed"
		}
	}
	return fmt.Sprintf("remote signer: %s: %s (HTTP %d %s)", prefix, msg, e.Status, e.Type)
}

// Client signs S3 requests through a remote signer.
type Client struct {
	cfg      Config
	endpoint string
	cache    *Cache
	http     *http.Client
	// sleep waits between retries; tests may shorten it.
	sleep func(context.Context, time.Duration) error
}

// New returns a Client for cfg.
func New(cfg Config) (*Client, error) {
	if cfg.SignerURI == "" && !isAbsolute(cfg.Endpoint) {
		return nil, errors.New("remotesigning: no signer URI")
	}
	c := &Client{cfg: cfg, endpoint: resolveEndpoint(cfg.SignerURI, cfg.Endpoint), cache: cfg.Cache, http: cfg.HTTPClient, sleep: sleepCtx}
	if c.cache == nil {
		c.cache = SharedCache
	}
	if c.http == nil {
		c.http = &http.Client{Timeout: 30 * time.Second}
	}
	if c.cfg.MaxRetries == 0 {
		c.cfg.MaxRetries = 5
	}
	return c, nil
}

// Endpoint is the URL sign requests are POSTed to.
func (c *Client) Endpoint() string { return c.endpoint }

func isAbsolute(s string) bool {
	return strings.HasPrefix(s, "http://") || strings.HasPrefix(s, "https://")
}

// resolveEndpoint mirrors RESTUtil.resolveEndpoint.
func resolveEndpoint(base, path string) string {
	if path == "" {
		path = DefaultEndpoint
	}
	if isAbsolute(path) {
		return path
	}
	return strings.TrimRight(base, "/") + "/" + strings.TrimLeft(strings.TrimSpace(path), "/")
}

// Sign signs r, from the cache when a cacheable answer for (method, region,
// uri) is there.
func (c *Client) Sign(ctx context.Context, r Request) (*Result, error) {
	ex := Exchange{Request: r}
	defer func() {
		if c.cfg.OnExchange != nil {
			c.cfg.OnExchange(ex)
		}
	}()
	key := cacheKey{r.Method, r.Region, r.URI}
	if res, ok := c.cache.get(key); ok {
		ex.Result, ex.FromCache = res, true
		return res, nil
	}
	res, cacheControl, attempts, err := c.post(ctx, r)
	ex.Attempts, ex.CacheControl, ex.Err = attempts, cacheControl, err
	if err != nil {
		return nil, err
	}
	ex.Result = res
	if cacheControl == "private" {
		c.cache.put(key, res)
	}
	return res, nil
}

func (c *Client) post(ctx context.Context, r Request) (*Result, string, int, error) {
	body, err := json.Marshal(r)
	if err != nil {
		return nil, "", 0, err
	}
	for attempt := 1; ; attempt++ {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.endpoint, bytes.NewReader(body))
		if err != nil {
			return nil, "", attempt, err
		}
		for k, v := range c.cfg.Headers {
			req.Header.Set(k, v)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json")
		if c.cfg.Token != nil {
			if tok := c.cfg.Token(); tok != "" {
				req.Header.Set("Authorization", "Bearer "+tok)
			}
		}
		resp, err := c.http.Do(req)
		if err != nil {
			return nil, "", attempt, fmt.Errorf("remote signer: %w", err)
		}
		data, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
		resp.Body.Close()
		if err != nil {
			return nil, "", attempt, fmt.Errorf("remote signer: reading response: %w", err)
		}
		if resp.StatusCode/100 == 2 {
			var res Result
			if err := json.Unmarshal(data, &res); err != nil {
				return nil, "", attempt, fmt.Errorf("remote signer: response is not a RemoteSignResult: %w", err)
			}
			if res.URI == "" || res.Headers == nil {
				return nil, "", attempt, fmt.Errorf("remote signer: incomplete RemoteSignResult: %s", data)
			}
			return &res, resp.Header.Get("Cache-Control"), attempt, nil
		}
		retryAfter := resp.Header.Get("Retry-After")
		retriable := resp.StatusCode == http.StatusTooManyRequests ||
			resp.StatusCode == http.StatusServiceUnavailable && retryAfter != ""
		if !retriable || attempt > c.cfg.MaxRetries {
			return nil, "", attempt, decodeError(resp.StatusCode, data)
		}
		if err := c.sleep(ctx, retryInterval(retryAfter, attempt)); err != nil {
			return nil, "", attempt, err
		}
	}
}

func decodeError(status int, data []byte) error {
	var model struct {
		Error struct {
			Message string `json:"message"`
			Type    string `json:"type"`
			Code    int    `json:"code"`
		} `json:"error"`
	}
	e := &Error{Status: status, Body: strings.TrimSpace(string(data))}
	if json.Unmarshal(data, &model) == nil {
		e.Type, e.Message = model.Error.Type, model.Error.Message
	}
	return e
}

// retryInterval mirrors ExponentialHttpRequestRetryStrategy.getRetryInterval:
// a positive Retry-After (seconds or HTTP date), else 2^(n-1) s (at most
// 64 s) plus up to 10% jitter.
func retryInterval(retryAfter string, attempt int) time.Duration {
	if retryAfter != "" {
		if s, err := strconv.ParseInt(retryAfter, 10, 64); err == nil {
			if s > 0 {
				return time.Duration(s) * time.Second
			}
		} else if t, err := http.ParseTime(retryAfter); err == nil {
			if d := time.Until(t); d > 0 {
				return d
			}
		}
	}
	delay := time.Duration(1<<min(attempt-1, 6)) * time.Second
	return delay + time.Duration(rand.Int64N(int64(delay/10)+1))
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Cache is the signed-component cache: 30 s after write, at most 100
// entries, keyed by (method, region, uri).
type Cache struct {
	mu      sync.Mutex
	ttl     time.Duration
	max     int
	entries map[cacheKey]cacheEntry
	now     func() time.Time
}

type cacheKey struct{ method, region, uri string }

type cacheEntry struct {
	res     *Result
	written time.Time
}

// NewCache returns an empty cache with Java's limits.
func NewCache() *Cache {
	return &Cache{ttl: 30 * time.Second, max: 100, entries: map[cacheKey]cacheEntry{}, now: time.Now}
}

// SharedCache is the process-wide cache every Client uses unless given its
// own, as SIGNED_COMPONENT_CACHE is static in the JVM.
var SharedCache = NewCache()

// Len is the number of live entries.
func (c *Cache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, e := range c.entries {
		if c.now().Sub(e.written) < c.ttl {
			n++
		}
	}
	return n
}

// Purge empties the cache.
func (c *Cache) Purge() {
	c.mu.Lock()
	defer c.mu.Unlock()
	clear(c.entries)
}

func (c *Cache) get(k cacheKey) (*Result, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[k]
	if !ok {
		return nil, false
	}
	if c.now().Sub(e.written) >= c.ttl {
		delete(c.entries, k)
		return nil, false
	}
	return e.res, true
}

func (c *Cache) put(k cacheKey, res *Result) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.entries[k]; !ok && len(c.entries) >= c.max {
		var oldest cacheKey
		var when time.Time
		for kk, e := range c.entries {
			if when.IsZero() || e.written.Before(when) {
				oldest, when = kk, e.written
			}
		}
		delete(c.entries, oldest)
	}
	c.entries[k] = cacheEntry{res: res, written: c.now()}
}
