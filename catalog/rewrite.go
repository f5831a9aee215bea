package catalog

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/countersign/countersign/internal/strictjson"
)

// The properties the front writes into a table's config so that every
// Iceberg client in use turns remote signing on and signs with countersign
// (docs/design.md, "Catalog front"):
//
//   - s3.remote-signing-enabled: S3FileIO's switch (all versions).
//   - s3.signer.uri, s3.signer.endpoint: where Iceberg 1.10 and 1.11 post
//     sign requests (1.11 reads them before signer.uri/signer.endpoint).
//     The endpoint is the table's own sign route, so that countersign
//     knows the table on every request.
//   - remote-signing-config: the LoadTableResult field of Iceberg's main
//     branch (after 1.11). Its client ignores s3.signer.* and posts to its
//     catalog uri, which is countersign's front, plus the table's sign
//     route; the field carries no endpoint, only static properties and
//     headers for the sign requests, which countersign does not need.
const (
	propRemoteSigningEnabled = "s3.remote-signing-enabled"
	propS3SignerURI          = "s3.signer.uri"
	propS3SignerEndpoint     = "s3.signer.endpoint"
	fieldRemoteSigningConfig = "remote-signing-config"
	fieldStorageCredentials  = "storage-credentials"
	// propRefreshCredentialsEndpoint is S3FileIO's
	// client.refresh-credentials-endpoint.
	propRefreshCredentialsEndpoint = "client.refresh-credentials-endpoint"
	fieldConfig                    = "config"
	fieldMetadata                  = "metadata"
)

// signing is what a table answer is rewritten to: remote signing with
// countersign (credentials nil), or the vended credentials the policy
// allowed.
type signing struct {
	// signerURI is countersign's base URI; endpoint the table's sign
	// route relative to it ("v1/.../tables/{table}/sign").
	signerURI, endpoint string
	// credentials, when non-nil, are vended instead of signing.
	credentials []StorageCredential
}

// errNotJSONObject is an answer the front must inspect but cannot read.
var errNotJSONObject = errors.New("the catalog's answer is not a JSON object")

// tableLocation reads metadata.location from a LoadTableResult (or a
// CommitTableResponse), "" when it has none.
func tableLocation(doc map[string]json.RawMessage) string {
	md, _ := decodeMembers(doc[fieldMetadata])
	return stringMember(md, "location")
}

// stringMember is the string value of m's member name, matched exactly
// ("" when absent or not a string). Decoding into a struct would not do:
// encoding/json also matches "Location" to a field tagged "location", and
// takes the last of the two, where Iceberg's parsers read only
// "location".
func stringMember(m map[string]json.RawMessage, name string) string {
	var s string
	if json.Unmarshal(m[name], &s) != nil {
		return ""
	}
	return s
}

// rewriteTable turns a LoadTableResult into countersign's: credentials
// removed, then either remote signing on (in every form clients read) or
// the vended credentials. Every other member is kept as the catalog sent
// it. It returns the new body and the table's location.
func rewriteTable(body []byte, s signing) ([]byte, string, error) {
	doc, err := decodeObject(body)
	if err != nil {
		return nil, "", err
	}
	if _, ok := doc[fieldMetadata]; !ok {
		return nil, "", fmt.Errorf("the catalog's table answer has no %q", fieldMetadata)
	}
	cfg, err := decodeMembers(doc[fieldConfig])
	if err != nil {
		return nil, "", err
	}
	stripCredentials(cfg)
	if _, err := stripClientProperties(doc); err != nil {
		return nil, "", err
	}
	delete(doc, fieldStorageCredentials)
	delete(doc, fieldRemoteSigningConfig)
	if s.credentials != nil {
		creds, err := json.Marshal(s.credentials)
		if err != nil {
			return nil, "", err
		}
		doc[fieldStorageCredentials] = creds
		// Iceberg Java renews vended credentials before they expire from
		// this endpoint (relative to the catalog uri): countersign's
		// credentials route for the table, decided and recorded again.
		if ep, ok := strings.CutSuffix(s.endpoint, "/sign"); ok {
			cfg[propRefreshCredentialsEndpoint] = jsonString(ep + "/credentials")
		}
	} else {
		cfg[propRemoteSigningEnabled] = jsonString("true")
		cfg[propS3SignerURI] = jsonString(s.signerURI)
		cfg[propS3SignerEndpoint] = jsonString(s.endpoint)
		doc[fieldRemoteSigningConfig] = json.RawMessage(`{}`)
	}
	if doc[fieldConfig], err = encode(cfg); err != nil {
		return nil, "", err
	}
	out, err := encode(doc)
	return out, tableLocation(doc), err
}

// inspect removes credentials from any other answer the front reads: a
// top-level storage-credentials member, and every key off the allow-list
// in a top-level config, defaults or overrides map (loadView, /v1/config,
// scan planning, ...). changed is false when there was nothing to remove;
// the body is then forwarded as it came.
func inspect(body []byte) (out []byte, doc map[string]json.RawMessage, changed bool, err error) {
	doc, err = decodeObject(body)
	if err != nil {
		return nil, nil, false, err
	}
	if _, ok := doc[fieldStorageCredentials]; ok {
		delete(doc, fieldStorageCredentials)
		changed = true
	}
	for _, name := range []string{fieldConfig, "defaults", "overrides"} {
		raw, ok := doc[name]
		if !ok {
			continue
		}
		m, err := decodeMembers(raw)
		if err != nil {
			return nil, nil, false, fmt.Errorf("member %q: %w", name, err)
		}
		if stripCredentials(m) {
			changed = true
			if doc[name], err = encode(m); err != nil {
				return nil, nil, false, err
			}
		}
	}
	if stripped, err := stripClientProperties(doc); err != nil {
		return nil, nil, false, err
	} else if stripped {
		changed = true
	}
	if !changed {
		return body, doc, false, nil
	}
	out, err = encode(doc)
	return out, doc, true, err
}

// stripCredentials deletes every key of a config map that is not on the
// allow-list (allowedConfigKey) and reports whether there were any.
func stripCredentials(m map[string]json.RawMessage) bool {
	n := len(m)
	for k := range m {
		if !allowedConfigKey(k) {
			delete(m, k)
		}
	}
	return len(m) != n
}

// decodeObject reads an answer of the catalog. The answer must be strict
// JSON (strictjson: valid UTF-8, no duplicate member names at any depth):
// encoding/json keeps the last of two "config" members and other parsers
// the first, so an answer the front found clean could carry credentials to
// a client that reads it the other way, and the location countersign
// learns could differ from the one the engine uses.
func decodeObject(body []byte) (map[string]json.RawMessage, error) {
	if err := checkStrict(body); err != nil {
		return nil, fmt.Errorf("the catalog's answer %w", err)
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(body, &doc); err != nil || doc == nil {
		return nil, errNotJSONObject
	}
	if err := spelledExactly(doc, answerMembers...); err != nil {
		return nil, fmt.Errorf("the catalog's answer %w", err)
	}
	if md, ok := doc[fieldMetadata]; ok {
		var m map[string]json.RawMessage
		if json.Unmarshal(md, &m) == nil {
			if err := spelledExactly(m, "location", "properties"); err != nil {
				return nil, fmt.Errorf("the catalog's answer's metadata %w", err)
			}
		}
	}
	return doc, nil
}

// answerMembers are the members of a catalog answer the front reads or
// removes by name.
var answerMembers = []string{fieldConfig, "defaults", "overrides", fieldMetadata, fieldStorageCredentials, fieldRemoteSigningConfig}

// spelledExactly is nil unless m has a member whose name equals one of
// names ignoring case (Unicode simple folding, as encoding/json matches a
// struct's fields) but is spelled otherwise. The front reads and removes
// members by their exact name, as Iceberg's Java parsers do; a client or
// catalog that decodes into structs (iceberg-go, SeaweedFS) also reads
// "Storage-Credentials", "CONFIG" or "NAME", and would act on a member the
// front never saw. Refused rather than read either way.
func spelledExactly(m map[string]json.RawMessage, names ...string) error {
	for k := range m {
		for _, n := range names {
			if k != n && strings.EqualFold(k, n) {
				return fmt.Errorf("has a member %q: countersign reads only %q and refuses other spellings of it (a decoder that matches names case-insensitively would read it)", truncate(k), n)
			}
		}
	}
	return nil
}

// checkStrict is nil when data is one strict JSON value; otherwise its
// error completes a sentence whose subject is the document ("... has two
// members named \"config\" (byte 41)").
func checkStrict(data []byte) error {
	e := strictjson.Check(data, strictjson.Options{ValidUTF8: true, UniqueNames: true, MaxDepth: strictjson.MaxDepthLimit})
	switch {
	case e == nil:
		return nil
	case e.Kind == strictjson.DuplicateName:
		return fmt.Errorf("has two members named %q (byte %d); countersign refuses ambiguous JSON", truncate(e.Name), e.Offset)
	}
	return fmt.Errorf("is not strict JSON: %s", e.Error())
}

// decodeMembers reads the members of a JSON object already checked strict
// (a config map, a table's metadata, a request body); absent or null is
// empty.
func decodeMembers(raw json.RawMessage) (map[string]json.RawMessage, error) {
	m := map[string]json.RawMessage{}
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return m, nil
	}
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return nil, errors.New("a config member of the catalog's answer is not a JSON object")
	}
	return m, nil
}

func jsonString(s string) json.RawMessage {
	b, _ := json.Marshal(s)
	return b
}

// encode writes v as compact JSON without HTML escaping (the catalog's
// strings stay as they were).
func encode(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// stripClientProperties removes from a table answer's metadata.properties
// every key in a client's configuration namespaces (FileIO, the AWS, GCP
// and Azure clients, the REST client, signing, tokens) that is not on the
// config allow-list. PyIceberg builds a table's FileIO from
// metadata.properties merged under config, so a table property is a
// config key to it: a catalog's credential stored as a property, or a
// committer's "s3.endpoint" or "client.secret-access-key" on a shared
// table, would reach every PyIceberg reader. Table properties outside
// those namespaces (write.*, read.*, commit.*, owner, ...) pass.
func stripClientProperties(doc map[string]json.RawMessage) (bool, error) {
	raw, ok := doc[fieldMetadata]
	if !ok {
		return false, nil
	}
	md, err := decodeMembers(raw)
	if err != nil {
		return false, errors.New("the catalog's answer's metadata is not a JSON object")
	}
	praw, ok := md["properties"]
	if !ok {
		return false, nil
	}
	props, err := decodeMembers(praw)
	if err != nil {
		return false, errors.New("the catalog's answer's metadata.properties is not a JSON object")
	}
	n := len(props)
	for k := range props {
		if clientProperty(k) && !allowedConfigKey(k) {
			delete(props, k)
		}
	}
	if len(props) == n {
		return false, nil
	}
	if md["properties"], err = encode(props); err != nil {
		return false, err
	}
	if doc[fieldMetadata], err = encode(md); err != nil {
		return false, err
	}
	return true, nil
}

// clientNamespaces are the first components of the keys Iceberg's clients
// read as FileIO, cloud client, REST client or signer configuration.
var clientNamespaces = map[string]bool{
	"s3": true, "s3a": true, "gcs": true, "adls": true, "adlfs": true, "abfs": true, "wasb": true, "client": true,
	"fs": true, "hadoop": true, "hdfs": true, "hf": true, "oss": true, "aws": true, "glue": true, "sts": true,
	"azure": true, "google": true, "gcp": true, "header": true, "rest": true, "http-client": true,
	"py-io-impl": true, "io-impl": true, "token": true, "credential": true, "oauth2-server-uri": true,
	"scope": true, "audience": true, "resource": true, "uri": true, "signer": true, "warehouse": true, "prefix": true,
	"rest-metrics-reporting-enabled": true, "token-exchange-enabled": true, "token-refresh-enabled": true,
}

// clientProperty reports whether a table property's key lies in a
// client's configuration namespace (compared ignoring case).
func clientProperty(k string) bool {
	first, _, _ := strings.Cut(strings.ToLower(k), ".")
	return clientNamespaces[first]
}
