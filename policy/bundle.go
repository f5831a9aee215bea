package policy

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/bundle"
	"github.com/open-policy-agent/opa/v1/keys"
)

// Limits on a bundle: the compressed download, and each file in it (the
// bound that stops a gzip bomb).
const (
	maxBundleBytes     = 256 << 20
	maxBundleFileBytes = 512 << 20
)

// verificationConfig reads the public key named by v into OPA's
// verification configuration. nil v gives nil: unsigned bundles are then
// accepted and signed ones refused (OPA's rule: a signature that cannot be
// checked is not ignored).
func verificationConfig(v *BundleVerification) (*bundle.VerificationConfig, error) {
	if v == nil {
		return nil, nil
	}
	key, err := os.ReadFile(v.PublicKeyFile)
	if err != nil {
		return nil, fmt.Errorf("policy: bundle.verification.public_key_file: %w", err)
	}
	alg := v.Algorithm
	if alg == "" {
		alg = DefaultAlgorithm
	}
	id := v.KeyID
	if id == "" {
		id = "default"
	}
	kc := &keys.Config{Key: string(key), Algorithm: alg, Scope: v.Scope}
	// KeyID set: OPA verifies with this key whatever "kid" the token names.
	return bundle.NewVerificationConfig(map[string]*bundle.KeyConfig{id: kc}, id, v.Scope, nil), nil
}

// readBundle verifies and compiles a bundle tarball. The revision is the
// manifest's, or a hash of the tarball when the manifest names none.
// Modules named *_test.rego are skipped, as in Load.
func readBundle(ctx context.Context, name string, data []byte, verify *bundle.VerificationConfig, eo engineOptions) (*Engine, error) {
	r := bundle.NewCustomReader(bundle.NewTarballLoaderWithBaseURL(bytes.NewReader(data), "")).
		WithRegoVersion(ast.RegoV1).
		WithBundleVerificationConfig(verify).
		WithSizeLimitBytes(maxBundleFileBytes)
	b, err := r.Read()
	if err != nil {
		return nil, fmt.Errorf("policy: reading %s: %w", name, err)
	}
	if b.Type() != bundle.SnapshotBundleType {
		return nil, fmt.Errorf("policy: reading %s: delta bundles are not supported", name)
	}
	mods := make([]module, 0, len(b.Modules))
	for _, m := range b.Modules {
		if isTestFile(path.Base(m.Path)) {
			continue
		}
		mods = append(mods, module{name: m.Path, raw: m.Raw, parsed: m.Parsed})
	}
	rev := b.Manifest.Revision
	if rev == "" {
		rev = contentHash(data)
	}
	return admitEngine(ctx, name, mods, b.Data, rev, eo)
}

func contentHash(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:8])
}

// errNotModified: the bundle server answered 304 to If-None-Match.
var errNotModified = errors.New("not modified")

// fetchBundle GETs rawURL, conditionally on etag. It returns the body and the
// response's ETag, or errNotModified.
func fetchBundle(ctx context.Context, client *http.Client, rawURL, etag string) ([]byte, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		return nil, "", fmt.Errorf("policy: bundle.url: %w", err)
	}
	req.Header.Set("Accept", "application/gzip, application/octet-stream, */*")
	if etag != "" {
		req.Header.Set("If-None-Match", etag)
	}
	resp, err := client.Do(req)
	if err != nil {
		// A url.Error repeats the URL, query included: name it redacted.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, "", fmt.Errorf("policy: fetching bundle %s: %w", redactURL(rawURL), err)
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusNotModified:
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
		return nil, etag, errNotModified
	default:
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
		return nil, "", fmt.Errorf("policy: fetching bundle %s: HTTP %s", redactURL(rawURL), resp.Status)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBundleBytes+1))
	if err != nil {
		return nil, "", fmt.Errorf("policy: fetching bundle %s: %w", redactURL(rawURL), err)
	}
	if len(body) > maxBundleBytes {
		return nil, "", fmt.Errorf("policy: fetching bundle %s: larger than %d bytes", redactURL(rawURL), maxBundleBytes)
	}
	return body, resp.Header.Get("ETag"), nil
}
