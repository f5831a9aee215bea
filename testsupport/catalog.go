package testsupport

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The setup of every test of countersign beside a real Iceberg REST
// catalog: SeaweedFS with its catalog and a table bucket, one bearer token
// that both the catalog and countersign accept, and a countersign config
// for SeaweedFS's S3 (with catalog.upstream when countersign fronts the
// catalog). Starting countersign stays with each module, which wraps it.

// CatalogWarehouse is the table bucket StartCatalog creates: the catalog's
// warehouse (prefix) of the same name.
const CatalogWarehouse = "lake"

// CatalogTablePolicy confines keys to the location the catalog gave the
// caller (lib/table_scope.rego reads input.table.location; there is no
// data.countersign.tables), within the operator's root for the warehouse
// (CatalogTableRoots, as CountersignConfig.PolicyData), and lets group etl
// read, write, delete and list there. It needs the library
// (CountersignConfig.PolicyLib).
const CatalogTablePolicy = `package countersign.authz

import data.countersign.lib.guardrails
import data.countersign.lib.table_scope

default allow := false

allow if {
	count(deny) == 0
	count(permit) > 0
}

deny contains msg if some msg in guardrails.deny

deny contains msg if some msg in table_scope.deny

permit contains "catalog" if {
	input.table.location != ""
	input.access in {"read", "write", "delete", "list"}
	"etl" in input.principal.groups
}

reason := concat("; ", sort(deny)) if count(deny) > 0
`

// CatalogTableRoots is the operator's root for the tables of the
// warehouse CatalogWarehouse, the whole table bucket: without a root (or a
// location in data.countersign.tables) lib/table_scope.rego trusts no
// location the catalog gives. For CountersignConfig.PolicyData.
const CatalogTableRoots = `{"countersign": {"table_roots": {"` + CatalogWarehouse + `": "s3://` + CatalogWarehouse + `/"}}}`

// CatalogOptions are what StartCatalog adds to SeaweedFS.
type CatalogOptions struct {
	// Issuer is the iss of the tokens Token mints and countersign's
	// auth.issuer in Config.
	Issuer string
	// STS turns on SeaweedFS's STS too (SeaweedFSOptions.STS), for vending.
	STS bool
}

// Catalog is SeaweedFS with its Iceberg REST catalog (at Weed.IcebergURL)
// and the table bucket CatalogWarehouse.
type Catalog struct {
	Weed   *S3Server
	Issuer string
	// SigningKey is the HS256 key the catalog verifies the root access
	// key's tokens with (SeaweedIcebergSigningKey), which Config gives
	// countersign as its auth.hs256_secret.
	SigningKey []byte
	servers    *Servers
}

// StartCatalog starts SeaweedFS with its Iceberg catalog (and STS if o
// asks), creates the warehouse, and derives the signing key.
func (s *Servers) StartCatalog(t testing.TB, o CatalogOptions) *Catalog {
	t.Helper()
	if o.Issuer == "" {
		t.Fatal("StartCatalog: no Issuer")
	}
	key := SeaweedIcebergSigningKey(s.AccessKey, s.SecretKey)
	if bytes.IndexByte(key, 0) >= 0 {
		t.Fatal("the derived signing key has a NUL byte, which no environment variable can carry: change the module's test secret key")
	}
	weed := s.StartSeaweedFSWith(t, SeaweedFSOptions{Iceberg: true, STS: o.STS})
	weed.CreateTableBucket(t, CatalogWarehouse)
	return &Catalog{Weed: weed, Issuer: o.Issuer, SigningKey: key, servers: s}
}

// Token is a caller's bearer token that both the catalog and countersign
// accept, as an identity provider's would be in a deployment: iss Issuer,
// aud countersign, sub and groups, for accessKey (the root access key; one
// SeaweedFS does not know gives a token countersign accepts and the
// catalog refuses).
func (c *Catalog) Token(sub, accessKey string, groups ...string) string {
	if groups == nil {
		groups = []string{} // the claim is a list, never null
	}
	return SeaweedIcebergToken(c.servers.AccessKey, c.servers.SecretKey, accessKey,
		map[string]any{"iss": c.Issuer, "aud": "countersign", "sub": sub, "groups": groups})
}

// CountersignConfig says what Catalog.Config writes.
type CountersignConfig struct {
	Audit  *AuditDir // required
	NodeID string    // audit.node_id; required
	// Policy is the text of authz.rego, written to a directory of its own.
	Policy string
	// PolicyData, when set, is written beside it as data.json.
	PolicyData string
	// PolicyLib puts the repository's deploy/policies/lib on policy.paths
	// before the policy (the working directory is a module directly below
	// the repository root, see the package comment).
	PolicyLib bool
	// PathOnly lists SeaweedFS's S3 as one path-style endpoint on
	// 127.0.0.1 ("seaweedfs-ip"); otherwise virtual-hosted buckets under
	// localhost ("seaweedfs") come first.
	PathOnly bool
	// Upstream is catalog.upstream (the catalog's URI, or a relay's in
	// front of it); "" writes no catalog section: no front.
	Upstream string
	// CatalogSettings are more lines of the catalog section
	// ("response_timeout: 1s"), without indentation.
	CatalogSettings []string
	// Extra is YAML appended at the top level (a vending section).
	Extra string
}

// Config is a countersign config for the catalog's SeaweedFS, and the
// environment to start it with: the storage secret and the token key.
func (c *Catalog) Config(t testing.TB, o CountersignConfig) (config string, env []string) {
	t.Helper()
	if o.Audit == nil || o.NodeID == "" || o.Policy == "" {
		t.Fatal("Catalog.Config: Audit, NodeID and Policy are required")
	}
	if o.Upstream == "" && len(o.CatalogSettings) > 0 {
		t.Fatal("Catalog.Config: CatalogSettings without an Upstream")
	}
	pol := t.TempDir()
	if err := os.WriteFile(filepath.Join(pol, "authz.rego"), []byte(o.Policy), 0o600); err != nil {
		t.Fatal(err)
	}
	if o.PolicyData != "" {
		if err := os.WriteFile(filepath.Join(pol, "data.json"), []byte(o.PolicyData), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	paths := []string{pol}
	if o.PolicyLib {
		lib, err := filepath.Abs("../deploy/policies/lib")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(lib); err != nil {
			t.Fatalf("the policy library: %v (run from a module directly below the repository root)", err)
		}
		paths = []string{lib, pol}
	}
	var b strings.Builder
	fmt.Fprintf(&b, `listen: 127.0.0.1:0
audit:
  dir: %q
  node_id: %s
  checkpoint_key_file: %q
  hmac_key_file: %q
auth:
  issuer: %s
  audience: [countersign]
endpoints:
`, o.Audit.Dir, o.NodeID, o.Audit.SignerKeyFile, o.Audit.HMACKeyFile, c.Issuer)
	region := c.servers.Region
	if !o.PathOnly {
		fmt.Fprintf(&b, `  - name: seaweedfs
    scheme: http
    host: localhost
    port: %d
    virtual_host_domain: localhost
    regions: [%s]
`, c.Weed.Port, region)
	}
	fmt.Fprintf(&b, `  - name: seaweedfs-ip
    scheme: http
    host: 127.0.0.1
    port: %d
    addressing: path
    regions: [%s]
credentials:
  source: static
  access_key_id: %s
policy:
  paths: [`, c.Weed.Port, region, c.servers.AccessKey)
	for i, p := range paths {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%q", p)
	}
	b.WriteString("]\n")
	if o.Upstream != "" {
		fmt.Fprintf(&b, "catalog:\n  upstream: %s\n", o.Upstream)
		for _, s := range o.CatalogSettings {
			b.WriteString("  " + s + "\n")
		}
	}
	b.WriteString(o.Extra)
	return b.String(), []string{
		"COUNTERSIGN_SECRET_ACCESS_KEY=" + c.servers.SecretKey,
		"COUNTERSIGN_AUTH_HS256_SECRET=" + string(c.SigningKey),
	}
}
