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

// learnSeparator takes the namespace separator from a /v1/config answer:
// overrides first, then defaults, as clients read it.
func (f *Front) learnSeparator(doc map[string]json.RawMessage) {
	for _, name := range []string{"overrides", "defaults"} {
		var m map[string]string
		if json.Unmarshal(doc[name], &m) != nil {
			continue
		}
		if s, ok := m[propNamespaceSeparator]; ok && s != "" {
			if d, err := url.PathUnescape(s); err != nil || d == "" {
				f.log.Warn("catalog namespace-separator ignored: not a percent-encoded string", "value", truncate(s))
				return
			}
			if old := f.separator.Swap(&s); *old != s {
				f.log.Info("catalog namespace separator", "separator", s)
			}
			return
		}
	}
}

// Refresh reads the upstream's /v1/config without credentials (catalogs
// that require them are learned from the clients' own /v1/config through
// the front) for the namespace separator.
func (f *Front) Refresh(ctx context.Context) error {
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
	f.learnSeparator(doc)
	return nil
}
