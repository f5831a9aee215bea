package remotesigning

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Iceberg's main branch (after 1.11: apache/iceberg #16822, #17709,
// #17627) configures its signer from the catalog: the REST catalog client
// puts these two properties on every table's FileIO
// (RESTSessionCatalog.tableFileIO), and S3V4RestSignerClient reads them.
const (
	// PropRemoteSigningEndpoint is the table's own sign route,
	// ResourcePaths.remoteSign: "v1/{prefix}/namespaces/{namespace}/tables/{table}/sign".
	PropRemoteSigningEndpoint = "rest.remote-signing.endpoint"
	// PropRemoteSigningConfig is the loadTable answer's
	// remote-signing-config, JSON-encoded ({"properties": {...},
	// "headers": {"name": ["v", ...]}}).
	PropRemoteSigningConfig = "rest.remote-signing.config"
)

// FromPropertiesMain reads the properties the way Iceberg main's
// S3V4RestSignerClient does:
//
//   - the base URI is signer.uri (deprecated) else the catalog uri;
//     s3.signer.uri and s3.signer.endpoint are gone (#17627) and ignored;
//   - the endpoint is signer.endpoint (deprecated) else
//     rest.remote-signing.endpoint, and one of them is required (there is
//     no v1/aws/s3/sign default any more);
//   - the remote signing config's properties go, unchanged, into every
//     sign request's "properties"; its headers onto every sign request,
//     several values joined with ", " (signingEndpointHeaders);
//   - header.* and token as before.
func FromPropertiesMain(props map[string]string) (Config, error) {
	var cfg Config
	cfg.SignerURI = firstOf(props, PropSignerURI, PropURI)
	if cfg.SignerURI == "" {
		return cfg, errors.New("S3 signer service URI is required (signer.uri or uri)")
	}
	cfg.Endpoint = firstOf(props, PropSignerEndpoint, PropRemoteSigningEndpoint)
	if cfg.Endpoint == "" {
		return cfg, errors.New("remote signing endpoint is required (signer.endpoint or rest.remote-signing.endpoint)")
	}
	rest := make(map[string]string, len(props))
	for k, v := range props {
		if k != PropS3SignerURI && k != PropS3SignerEndpoint {
			rest[k] = v
		}
	}
	base, err := FromProperties(rest)
	if err != nil {
		return cfg, err
	}
	cfg.Token, cfg.Headers, cfg.MaxRetries = base.Token, base.Headers, base.MaxRetries
	if s, ok := props[PropRemoteSigningConfig]; ok {
		var rsc struct {
			Properties map[string]string   `json:"properties"`
			Headers    map[string][]string `json:"headers"`
		}
		if err := json.Unmarshal([]byte(s), &rsc); err != nil {
			return cfg, fmt.Errorf("%s: %v", PropRemoteSigningConfig, err)
		}
		cfg.Properties = rsc.Properties
		for name, vs := range rsc.Headers {
			if cfg.Headers == nil {
				cfg.Headers = map[string]string{}
			}
			cfg.Headers[name] = strings.Join(vs, ", ")
		}
	}
	return cfg, nil
}
