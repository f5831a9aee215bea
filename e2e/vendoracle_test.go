package e2e

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// The vending oracle: credentials minted from SeaweedFS's STS under
// generated policies and under every example policy are probed at
// SeaweedFS's S3 with a grid of (operation, key, version, headers); every
// request SeaweedFS allows must be one countersign's sign route allows
// for the same principal (the same policy, decided per request). A
// vended credential that lets its holder do what a signature would not
// is a mint wider than the policy.

// oracleProbeKeys are the keys probed for a credential of location loc:
// inside it, beside it, above it, and keys an IAM pattern cut at a
// metacharacter would reach.
func oracleProbeKeys(loc string) []string {
	keys := []string{loc + "data/a.parquet", loc + "secret/s.parquet", "wh/db/t2/x.parquet", "wh/x.parquet",
		"wh/db/$/x.parquet", "wh/db/t*/x.parquet", "wh/db/tax/x.parquet", "wh/db/t/a$b/x.parquet",
		strings.ToUpper(loc) + "data/a.parquet"}
	slices.Sort(keys)
	return slices.Compact(keys)
}

// oracleProbe is one S3 request of the grid.
type oracleProbe struct {
	method, key, query string
	headers            []string // name, value pairs
	body               []byte
}

func (p oracleProbe) String() string {
	return fmt.Sprintf("%s %s?%s %v", p.method, p.key, p.query, p.headers)
}

func oracleProbes(loc string) []oracleProbe {
	var out []oracleProbe
	tagging := []byte(`<Tagging><TagSet><Tag><Key>a</Key><Value>b</Value></Tag></TagSet></Tagging>`)
	for _, k := range oracleProbeKeys(loc) {
		out = append(out,
			oracleProbe{method: "GET", key: k},
			oracleProbe{method: "HEAD", key: k},
			oracleProbe{method: "GET", key: k, query: "versionId=v1"},
			oracleProbe{method: "GET", key: k, query: "tagging"},
			oracleProbe{method: "PUT", key: k, body: []byte("PAR1 probe PAR1")},
			oracleProbe{method: "PUT", key: k, body: []byte("PAR1 probe PAR1"), headers: []string{"x-amz-tagging", "a=b"}},
			oracleProbe{method: "PUT", key: k, body: []byte("PAR1 probe PAR1"), headers: []string{"x-amz-acl", "public-read"}},
			oracleProbe{method: "PUT", key: k, body: []byte("PAR1 probe PAR1"), headers: []string{"x-amz-website-redirect-location", "/elsewhere"}},
			oracleProbe{method: "PUT", key: k, query: "tagging", body: tagging},
			oracleProbe{method: "POST", key: k, query: "uploads"},
			oracleProbe{method: "DELETE", key: k},
		)
	}
	for _, p := range []string{loc, "wh/", "wh/db/"} {
		out = append(out, oracleProbe{method: "GET", query: "list-type=2&prefix=" + s3Escape(p)})
	}
	return out
}

// s3Escape percent-encodes all but RFC 3986's unreserved characters (and
// "/" when path): the one spelling both SigV4 and the sign route read.
func s3Escape(s string) string { return escapeAWS(s, false) }

func escapeAWS(s string, path bool) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'A' <= c && c <= 'Z', 'a' <= c && c <= 'z', '0' <= c && c <= '9', c == '-', c == '.', c == '_', c == '~', path && c == '/':
			b.WriteByte(c)
		default:
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

// storeAllows sends p to SeaweedFS path-style with the vended
// credentials: allowed is any answer but a refusal of authorization
// (2xx, or 404 for what is not there).
func storeAllows(t *testing.T, port int, c aws.Credentials, p oracleProbe) (bool, int) {
	t.Helper()
	path := "/lake"
	if p.key != "" {
		path += "/" + escapeAWS(p.key, true)
	}
	u := fmt.Sprintf("http://127.0.0.1:%d%s", port, path)
	if p.query != "" {
		u += "?" + p.query
	}
	req, err := http.NewRequest(p.method, u, bytes.NewReader(p.body))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(p.body)
	hash := hex.EncodeToString(sum[:])
	req.Header.Set("x-amz-content-sha256", hash)
	for i := 0; i+1 < len(p.headers); i += 2 {
		req.Header.Set(p.headers[i], p.headers[i+1])
	}
	signer := v4.NewSigner(func(o *v4.SignerOptions) { o.DisableURIPathEscaping = true })
	if err := signer.SignHTTP(context.Background(), c, req, hash, "s3", testRegion, time.Now()); err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode/100 == 2 || resp.StatusCode == http.StatusNotFound, resp.StatusCode
}

// signAllows asks countersign's sign route to sign p for the principal.
func signAllows(t *testing.T, h *vendHarness, token string, port int, p oracleProbe) bool {
	t.Helper()
	uri := fmt.Sprintf("http://lake.localhost:%d/%s", port, escapeAWS(p.key, true))
	if p.query != "" {
		uri += "?" + p.query
	}
	sum := sha256.Sum256(p.body)
	hdrs := javaHeaders(append([]string{"x-amz-content-sha256", hex.EncodeToString(sum[:])}, p.headers...)...)
	if len(p.body) > 0 {
		hdrs["Content-Length"] = []string{strconv.Itoa(len(p.body))}
	}
	status, _, _, _ := h.cs.as(token).sign(t, "", signRequest{Region: testRegion, URI: uri, Method: p.method, Headers: hdrs})
	return status == http.StatusOK
}

// oracleTally counts what the oracle did.
type oracleTally struct {
	policies, mints, minted, probes, storeAllowed int
	violations                                    []string
	// caseFolded counts requests SeaweedFS allowed on an upper-cased
	// spelling of the credential's location, which the sign route
	// refuses: SeaweedFS's IAM matches a session policy's resources
	// case-insensitively (weed/iam/policy awsIAMMatch), a widening no
	// session policy can prevent. Logged, not failed: it is the store's.
	caseFolded int
}

// vendAndProbe mints for token at each location, read and read-write, and
// probes every credential.
func (o *oracleTally) vendAndProbe(t *testing.T, h *vendHarness, name, token string, locs []string) {
	t.Helper()
	for _, loc := range locs {
		for _, op := range []string{"PATH_READ", "PATH_READ_WRITE"} {
			o.mints++
			v := h.unity(t, token, "s3://lake/"+loc, op)
			switch {
			case v.status == http.StatusOK:
			case v.status == http.StatusForbidden || v.status == http.StatusBadRequest:
				continue
			default:
				t.Fatalf("%s: mint of %s %s: %d %s", name, loc, op, v.status, v.body)
			}
			if strings.ContainsAny(loc, "$*?") {
				t.Errorf("%s: %s %s vended a location holding an IAM metacharacter", name, loc, op)
			}
			o.minted++
			c, _ := unityCreds(t, v)
			for _, p := range oracleProbes(loc) {
				o.probes++
				ok, code := storeAllows(t, h.weed.Port, c, p)
				if !ok {
					continue
				}
				o.storeAllowed++
				if signAllows(t, h, token, h.weed.Port, p) {
					continue
				}
				if strings.HasPrefix(p.key, strings.ToUpper(loc)) && loc != strings.ToUpper(loc) {
					o.caseFolded++
					continue
				}
				o.violations = append(o.violations, fmt.Sprintf("%s, %s credentials for %s: SeaweedFS answered %d to %s, which the sign route refuses", name, op, loc, code, p))
			}
		}
	}
}

// genVendPolicies writes n policies in one module, policy i for group
// g<i>: permits and denials made of conditions on the access class, the
// operation, the action, the key (prefixes with and without IAM
// metacharacters, equality, a regex), the version, headers and the
// source; every policy allows mints under wh/ (so what is vended is what
// the scope allows), some only read mints.
func genVendPolicies(r *rand.Rand, n int) string {
	prefixes := []string{"wh/", "wh/db/", "wh/db/t/", "wh/db/$/", "wh/db/t*/", "wh/db/t/a$b/", "wh/db/t2/", "wh/db/t/secret/"}
	accesses := []string{"read", "write", "delete", "list"}
	actions := []string{"s3:GetObject", "s3:GetObjectVersion", "s3:PutObject", "s3:DeleteObject", "s3:ListBucket", "s3:GetObjectTagging", "s3:PutObjectTagging", "s3:AbortMultipartUpload", "s3:ListMultipartUploadParts"}
	operations := []string{"GetObject", "HeadObject", "PutObject", "CopyObject", "CreateMultipartUpload", "DeleteObject", "ListObjectsV2", "ListObjects", "GetObjectTagging", "PutObjectTagging"}
	some := func(all []string) string {
		var pick []string
		for _, x := range all {
			if r.IntN(2) == 0 {
				pick = append(pick, strconv.Quote(x))
			}
		}
		if len(pick) == 0 {
			pick = append(pick, strconv.Quote(all[r.IntN(len(all))]))
		}
		return "{" + strings.Join(pick, ", ") + "}"
	}
	cond := func() string {
		switch r.IntN(20) {
		case 0, 1, 2, 3, 4, 5, 6:
			return fmt.Sprintf("startswith(path, %q)", prefixes[r.IntN(len(prefixes))])
		case 7, 8, 9:
			return "input.access in " + some(accesses)
		case 10, 11:
			return "input.action in " + some(actions)
		case 12:
			return "input.operation in " + some(operations)
		case 13:
			return `input.resource.version_id == ""`
		case 14:
			return `object.get(input.request.headers, "x-amz-tagging", "") == ""`
		case 15:
			return `input.source.ip != "10.9.9.9"`
		case 16:
			return `regex.match("^wh/db/t/", path)`
		case 17:
			return `path == "wh/db/t/data/a.parquet"`
		case 18:
			return `input.request.method != "DELETE"`
		}
		return `not input.resource.version_id`
	}
	// A denial: mostly of another prefix (no exclusion inside the
	// locations), sometimes of a header, a version, an action.
	denial := func() string {
		switch r.IntN(6) {
		case 0, 1, 2:
			return fmt.Sprintf("startswith(path, %q)", []string{"wh/db/t2/", "wh/other/", "wh/db/t/secret/"}[r.IntN(3)])
		case 3:
			return `input.request.headers["x-amz-acl"]`
		case 4:
			return `input.resource.version_id != ""`
		}
		return "input.action in " + some(actions)
	}
	var b strings.Builder
	b.WriteString("package countersign.authz\n\ndefault allow := false\n\n")
	b.WriteString("path := input.resource.prefix if is_string(input.resource.prefix)\n\n")
	b.WriteString("path := object.get(input.resource, \"key\", \"\") if not is_string(input.resource.prefix)\n\n")
	for i := range n {
		g := fmt.Sprintf("g%d", i)
		fmt.Fprintf(&b, "allow if {\n\t%q in input.principal.groups\n\tcount(%s_deny) == 0\n\t%s_permit\n}\n\n", g, g, g)
		mint := "input.operation == \"MintCredentials\"\n\tstartswith(path, \"wh/\")"
		if r.IntN(4) == 0 {
			mint += "\n\tinput.access == \"read\""
		}
		fmt.Fprintf(&b, "%s_permit if {\n\t%s\n}\n\n", g, mint)
		for range 1 + r.IntN(3) {
			fmt.Fprintf(&b, "%s_permit if {\n\tinput.operation != \"MintCredentials\"\n", g)
			for range 1 + r.IntN(2) {
				fmt.Fprintf(&b, "\t%s\n", cond())
			}
			b.WriteString("}\n\n")
		}
		fmt.Fprintf(&b, "%s_deny contains \"never\" if input.version == 0\n\n", g)
		for range r.IntN(3) / 2 {
			fmt.Fprintf(&b, "%s_deny contains \"denied\" if {\n\tinput.operation != \"MintCredentials\"\n\t%s\n}\n\n", g, denial())
		}
	}
	return b.String()
}

// TestVendingOracle: see the comment at the top of the file. Its size
// (policies, mints, probes) is logged.
func TestVendingOracle(t *testing.T) {
	seed := uint64(38)
	if s := os.Getenv("VEND_ORACLE_SEED"); s != "" {
		seed, _ = strconv.ParseUint(s, 10, 64)
	}
	n := 16
	if testing.Short() {
		n = 6
	}
	weed := startVendSeaweedFS(t)
	admin := weed.AdminClient()
	for _, k := range []string{"wh/db/t/data/a.parquet", "wh/db/t/secret/s.parquet", "wh/db/t2/x.parquet", "wh/db/$/x.parquet", "wh/x.parquet"} {
		if got := storeSays(t, put(admin, k)); got != "ok" {
			t.Fatalf("seeding %s: %s", k, got)
		}
	}
	endpoint := "  region: us-east-1\n  endpoint: http://127.0.0.1:" + itoa(weed.Port) + "\n"
	locs := []string{"wh/db/t/", "wh/db/", "wh/db/$/"}
	var o oracleTally

	rego := genVendPolicies(rand.New(rand.NewPCG(seed, 5)), n)
	h := startVendWith(t, weed, "", endpoint, policyDir(t, rego))
	for i := range n {
		o.policies++
		o.vendAndProbe(t, h, fmt.Sprintf("generated policy g%d (seed %d)", i, seed), testIdP.Mint(fmt.Sprintf("gen%d", i), []string{fmt.Sprintf("g%d", i)}, nil), locs)
	}
	generatedMinted := o.minted

	examples, err := filepath.Abs("../deploy/policies")
	if err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(examples)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !e.IsDir() || e.Name() == "lib" {
			continue
		}
		o.policies++
		h := startVendWith(t, weed, "", endpoint, filepath.Join(examples, e.Name()))
		for _, p := range []struct{ id, group string }{{"ann", "analysts"}, {"eve", "etl"}} {
			o.vendAndProbe(t, h, e.Name()+" example, "+p.id, testIdP.Mint(p.id, []string{p.group}, nil), locs)
		}
	}
	// The examples include deploy/policies/vending, written to vend; the
	// others vend nothing (their header guardrail).

	t.Logf("vending oracle: %d policies (%d generated, seed %d), %d mints asked, %d minted (%d under generated policies), %d probes, %d allowed by SeaweedFS, %d violations; %d allowed only by SeaweedFS's case-insensitive resource match",
		o.policies, n, seed, o.mints, o.minted, generatedMinted, o.probes, o.storeAllowed, len(o.violations), o.caseFolded)
	if generatedMinted == 0 || o.storeAllowed == 0 {
		t.Errorf("the oracle tested nothing: %d credentials minted under generated policies, %d requests allowed by SeaweedFS", generatedMinted, o.storeAllowed)
	}
	for i, v := range o.violations {
		if i == 30 {
			t.Errorf("... and %d more", len(o.violations)-30)
			break
		}
		t.Error(v)
	}
	if len(o.violations) > 0 {
		t.Logf("generated policies:\n%s", rego)
	}
}
