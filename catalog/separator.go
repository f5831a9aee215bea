package catalog

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
)

// propNamespaceSeparator is the /v1/config property naming the separator
// of namespace levels in paths, URL-encoded ("%1F" by default).
const propNamespaceSeparator = "namespace-separator"

// answerSeparator is the namespace separator a /v1/config answer names:
// overrides first, then defaults, as clients read it; ok is false when it
// names none.
func answerSeparator(doc map[string]json.RawMessage) (sep string, ok bool) {
	for _, name := range []string{"overrides", "defaults"} {
		var m map[string]string
		if json.Unmarshal(doc[name], &m) != nil {
			continue
		}
		if s, found := m[propNamespaceSeparator]; found && s != "" {
			return s, true
		}
	}
	return "", false
}

// sameSeparator reports whether two percent-encoded separators decode to
// the same string.
func sameSeparator(a, b string) bool {
	da, err1 := url.PathUnescape(a)
	db, err2 := url.PathUnescape(b)
	return err1 == nil && err2 == nil && da == db
}

// checkSeparator refuses a client's /v1/config answer that names another
// namespace separator than the front splits paths by: the client would
// join namespace levels one way and the front split them another, so
// that the table the policy decides is not the one the catalog serves.
func (f *Front) checkSeparator(doc map[string]json.RawMessage) error {
	s, ok := answerSeparator(doc)
	cur := *f.separator.Load()
	if !ok || sameSeparator(s, cur) {
		return nil
	}
	return fmt.Errorf("the catalog's configuration names the namespace separator %q, and countersign splits paths by %q; set catalog.namespace_separator to the catalog's", truncate(s), cur)
}

// Refresh reads the upstream's /v1/config without credentials or
// parameters for the namespace separator, unless catalog.namespace_separator
// names it. It is called once at start: a separator changes how every
// caller's paths split, so it is never taken from a client's answer.
func (f *Front) Refresh(ctx context.Context) error {
	if f.cfg.NamespaceSeparator != "" {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, f.cfg.ResponseTimeout)
	defer cancel()
	rt, rerr := parseRoute(http.MethodGet, "/v1/config", f.NamespaceSeparator())
	if rerr != nil {
		return rerr
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, f.upstreamURL(&rt).String(), nil)
	if err != nil {
		return err
	}
	resp, err := f.client.Do(req)
	if err != nil {
		return fmt.Errorf("catalog %s: GET /v1/config: %s", f.upstream.Host, errText(err))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("catalog %s: GET /v1/config: HTTP %d", f.upstream.Host, resp.StatusCode)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return err
	}
	doc, err := decodeObject(data)
	if err != nil {
		return fmt.Errorf("catalog %s: GET /v1/config: %w", f.upstream.Host, err)
	}
	s, ok := answerSeparator(doc)
	if !ok {
		return nil
	}
	if d, err := url.PathUnescape(s); err != nil || d == "" {
		return fmt.Errorf("catalog %s: GET /v1/config: namespace-separator %q is not a percent-encoded string; set catalog.namespace_separator", f.upstream.Host, truncate(s))
	}
	if old := f.separator.Swap(&s); *old != s {
		f.log.Info("catalog namespace separator", "separator", s)
	}
	return nil
}
