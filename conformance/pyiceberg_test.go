package conformance

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/countersign/countersign/testsupport"
)

// pythonForBotocore is the interpreter with Debian's python3-botocore:
// COUNTERSIGN_PYTHON, else /usr/bin/python3 (Debian's, where apt installs
// the package), else python3 on PATH. A missing interpreter or package
// fails the test: the conformance suite is not allowed to skip it.
func pythonForBotocore(t *testing.T) string {
	t.Helper()
	py := os.Getenv("COUNTERSIGN_PYTHON")
	if py == "" {
		py = "/usr/bin/python3"
		if _, err := os.Stat(py); err != nil {
			if py, err = exec.LookPath("python3"); err != nil {
				t.Fatal("python3 is required for the PyIceberg conformance test: apt-get install python3-botocore (.ci/run does)")
			}
		}
	}
	out, err := exec.Command(py, "-c", "import botocore, requests; print(botocore.__version__)").CombinedOutput()
	if err != nil {
		t.Fatalf("%s cannot import botocore and requests: install Debian's python3-botocore (apt-get install python3-botocore; .ci/run does), or set COUNTERSIGN_PYTHON\n%s", py, out)
	}
	return py
}

type pyResult struct {
	Botocore string `json:"botocore"`
	Results  []struct {
		Step      string          `json:"step"`
		OK        bool            `json:"ok"`
		Value     json.RawMessage `json:"value"`
		ErrorType string          `json:"error_type"`
		Error     string          `json:"error"`
		Code      string          `json:"code"`
	} `json:"results"`
	Observations []struct {
		Operation string `json:"operation"`
		Request   struct {
			Method  string              `json:"method"`
			URI     string              `json:"uri"`
			Headers map[string][]string `json:"headers"`
		} `json:"request"`
		Status   int `json:"status"`
		Response *struct {
			URI     string              `json:"uri"`
			Headers map[string][]string `json:"headers"`
		} `json:"response"`
		Error      string              `json:"error"`
		Duplicates map[string][]string `json:"duplicates"`
		Conflicts  map[string][]string `json:"conflicts"`
	} `json:"observations"`
	Sent []struct {
		Method        string   `json:"method"`
		URL           string   `json:"url"`
		ContentSHA256 *string  `json:"x-amz-content-sha256"`
		HeaderNames   []string `json:"header_names"`
	} `json:"sent"`
}

// runPyIceberg runs testdata/pyiceberg_botocore.py against srv through cs.
func runPyIceberg(t *testing.T, srv *s3Server, cs *signerProc, token, prefix, mode string) *pyResult {
	t.Helper()
	return runPyIcebergAuth(t, srv, cs, token, prefix, mode, nil)
}

// runPyIcebergAuth is runPyIceberg with PyIceberg 0.11+'s auth manager
// (auth: client_id, client_secret, token_url) handed to the signer.
func runPyIcebergAuth(t *testing.T, srv *s3Server, cs *signerProc, token, prefix, mode string, auth map[string]string) *pyResult {
	t.Helper()
	py := pythonForBotocore(t)
	script, err := filepath.Abs("testdata/pyiceberg_botocore.py")
	if err != nil {
		t.Fatal(err)
	}
	c := map[string]any{
		"endpoint": srv.endpoint(), "signer_uri": cs.url, "token": token,
		"bucket": "lake", "prefix": prefix, "mode": mode,
	}
	if auth != nil {
		c["auth"] = auth
	}
	cfg, _ := json.Marshal(c)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, py, script, string(cfg))
	empty := filepath.Join(t.TempDir(), "empty")
	os.WriteFile(empty, nil, 0o600)
	// Nothing from the environment may sign or route these requests.
	cmd.Env = []string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "LANG=C.UTF-8",
		"AWS_CONFIG_FILE=" + empty, "AWS_SHARED_CREDENTIALS_FILE=" + empty,
		"AWS_EC2_METADATA_DISABLED=true", "NO_PROXY=*", "no_proxy=*",
	}
	var stderr testsupport.LockedBuffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %s: %v\nstdout:\n%s\nstderr:\n%s", py, script, err, out, stderr.String())
	}
	var res pyResult
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("script output is not JSON: %v\n%s\nstderr:\n%s", err, out, stderr.String())
	}
	return &res
}

// TestPyIcebergBotocore runs PyIceberg's S3V4RestSigner hook on botocore
// against countersign and versitygw: the same Parquet-shaped workload,
// every request signed by countersign, no header returned with a value
// other than the client's (PyIceberg appends, iceberg-python#2422).
func TestPyIcebergBotocore(t *testing.T) {
	srv := startS3(t)
	srv.CreateBucket(t, "lake")
	cs := startCountersign(t, baseConfig(t, srv.Port, ""), secretEnv()...)
	res := runPyIceberg(t, srv, cs, defaultToken(), "wh/py/", "workload")
	t.Logf("botocore %s: %d sign requests, %d requests sent", res.Botocore, len(res.Observations), len(res.Sent))

	byStep := map[string]bool{}
	for _, r := range res.Results {
		switch r.Step {
		case "DeleteObjects":
			// PyIceberg sends no body for DeleteObjects, so countersign
			// cannot decide its keys and refuses to sign it (fail closed).
			if r.OK || r.ErrorType != "SignError" || !strings.Contains(r.Error, "Failed to sign request 400") {
				t.Fatalf("DeleteObjects without a body: %+v, want countersign's 400 surfaced as SignError", r)
			}
		default:
			if !r.OK {
				t.Fatalf("step %s failed: %s %s", r.Step, r.ErrorType, r.Error)
			}
		}
		byStep[r.Step] = true
	}
	for _, s := range []string{"PutObject", "PutObject preset x-amz-content-sha256", "MultipartUpload", "HeadObject", "GetObject ranges", "ListObjectsV2", "DeleteObjects", "DeleteObject"} {
		if !byStep[s] {
			t.Fatalf("step %s did not run", s)
		}
	}
	if last := res.Results[len(res.Results)-1]; last.Step != "ListObjectsV2 after delete" || string(last.Value) != "[]" {
		t.Fatalf("objects left: %+v", last)
	}

	ops := map[string]int{}
	duplicated := map[string]bool{}
	for _, o := range res.Observations {
		ops[o.Operation]++
		if o.Response == nil {
			if o.Operation != "DeleteObjects" {
				t.Fatalf("%s not signed: %d %s", o.Operation, o.Status, o.Error)
			}
			if !strings.Contains(o.Error, "body") {
				t.Fatalf("DeleteObjects refusal does not name the missing body: %s", o.Error)
			}
			t.Logf("DeleteObjects without a body refused by countersign: %d %s", o.Status, strings.TrimSpace(o.Error))
			continue
		}
		if o.Response.URI != o.Request.URI {
			t.Fatalf("%s: uri changed %s -> %s", o.Operation, o.Request.URI, o.Response.URI)
		}
		// The #2422 hazard: a header the client sent, returned with another
		// value, is sent twice (or, by botocore, as the signer's value).
		if len(o.Conflicts) > 0 {
			t.Fatalf("%s: countersign returned client headers with other values: %v", o.Operation, o.Conflicts)
		}
		for name := range o.Duplicates {
			duplicated[name] = true
		}
		if o.Operation == "PutObject" && headerValue(o.Request.Headers, "x-amz-content-sha256") != "" {
			client := headerValue(o.Request.Headers, "x-amz-content-sha256")
			var returned []string
			for k, v := range o.Response.Headers {
				if strings.EqualFold(k, "x-amz-content-sha256") {
					returned = append(returned, v...)
				}
			}
			if len(returned) != 1 || returned[0] != client {
				t.Fatalf("client sent X-Amz-Content-SHA256 %s; countersign returned %v: want exactly the client's value once", client, returned)
			}
		}
	}
	t.Logf("signed operations: %v; headers present twice on the request after PyIceberg's add_header (same values): %v", ops, keys(duplicated))
	for _, op := range []string{"PutObject", "CreateMultipartUpload", "UploadPart", "CompleteMultipartUpload", "HeadObject", "GetObject", "ListObjectsV2", "DeleteObject"} {
		if ops[op] == 0 {
			t.Fatalf("%s was never signed: %v", op, ops)
		}
	}
	var presetSent bool
	for _, s := range res.Sent {
		if s.ContentSHA256 == nil || *s.ContentSHA256 == "" {
			t.Fatalf("%s %s sent without x-amz-content-sha256", s.Method, s.URL)
		}
		if s.Method == "PUT" && strings.Contains(s.URL, "hashed.parquet") {
			presetSent = *s.ContentSHA256 != "UNSIGNED-PAYLOAD" && len(*s.ContentSHA256) == 64
		}
	}
	if !presetSent {
		t.Fatal("the PutObject with a preset payload hash was not sent with that hash")
	}
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestPyIcebergReadOnlyAndWrongSecret: through PyIceberg's hook, a
// read-only principal's write is refused by countersign (SignError with the
// 403) while it can list; a countersign with the wrong secret makes the
// write fail with versitygw's SignatureDoesNotMatch.
func TestPyIcebergReadOnlyAndWrongSecret(t *testing.T) {
	srv := startS3(t)
	srv.CreateBucket(t, "lake")
	srv.adminPut(t, "lake", "wh/py-ro/existing.parquet", []byte("PAR1"))
	cs := startCountersign(t, baseConfig(t, srv.Port, ""), secretEnv()...)
	res := runPyIceberg(t, srv, cs, testIdP.Mint("lake-reader", []string{"lakehouse-readers"}, nil), "wh/py-ro/", "denied-write")
	if len(res.Results) != 2 {
		t.Fatalf("results: %+v", res.Results)
	}
	if put := res.Results[0]; put.OK || put.ErrorType != "SignError" || !strings.Contains(put.Error, "Failed to sign request 403") {
		t.Fatalf("read-only PutObject: %+v, want SignError with 403", put)
	}
	if list := res.Results[1]; !list.OK || string(list.Value) != `["wh/py-ro/existing.parquet"]` {
		t.Fatalf("read-only ListObjectsV2: %+v", list)
	}
	if srv.adminExists(t, "lake", "wh/py-ro/x.parquet") {
		t.Fatal("a refused write reached the bucket")
	}

	bad := startCountersign(t, baseConfig(t, srv.Port, ""), wrongSecretEnv()...)
	res = runPyIceberg(t, srv, bad, defaultToken(), "wh/py-bad/", "wrong-secret")
	if put := res.Results[0]; put.OK || put.Code != "SignatureDoesNotMatch" {
		t.Fatalf("PutObject signed with a wrong secret: %+v, want SignatureDoesNotMatch", put)
	}
	if len(res.Observations) == 0 || res.Observations[0].Response == nil {
		t.Fatal("countersign did not sign the request")
	}
}

// TestPyIcebergAuthManager runs the signer as PyIceberg 0.11+ does with a
// REST catalog: the catalog's OAuth2 auth manager is handed to it and its
// Authorization header is sent instead of the static token (here not a
// token at all: were it sent, countersign would refuse everything). The
// token endpoint stands in for the identity provider's (none runs here);
// it issues this module's test IdP tokens for one client.
func TestPyIcebergAuthManager(t *testing.T) {
	srv := startS3(t)
	srv.CreateBucket(t, "lake")
	cs := startCountersign(t, baseConfig(t, srv.Port, ""), secretEnv()...)
	var issued atomic.Int64
	idp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != "POST" || r.PostFormValue("grant_type") != "client_credentials" ||
			r.PostFormValue("client_id") != "py-writer" || r.PostFormValue("client_secret") != "py-secret" {
			w.WriteHeader(http.StatusUnauthorized)
			io.WriteString(w, `{"error":"invalid_client"}`)
			return
		}
		issued.Add(1)
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"access_token": defaultToken(), "token_type": "bearer", "expires_in": 3600})
	}))
	defer idp.Close()
	res := runPyIcebergAuth(t, srv, cs, "not-a-token", "wh/py-auth/", "workload",
		map[string]string{"client_id": "py-writer", "client_secret": "py-secret", "token_url": idp.URL + "/v1/oauth/tokens"})
	signed := 0
	for _, o := range res.Observations {
		if o.Response != nil {
			signed++
		} else if o.Operation != "DeleteObjects" {
			t.Fatalf("%s not signed: %d %s", o.Operation, o.Status, o.Error)
		}
	}
	for _, r := range res.Results {
		if !r.OK && r.Step != "DeleteObjects" {
			t.Fatalf("step %s failed: %s %s", r.Step, r.ErrorType, r.Error)
		}
	}
	if signed < 5 || issued.Load() != 1 {
		t.Fatalf("%d signed with the auth manager's header, %d tokens issued (want one, kept)", signed, issued.Load())
	}
	// A wrong client secret: the auth manager gets no token, nothing is signed.
	res = runPyIcebergAuth(t, srv, cs, defaultToken(), "wh/py-auth2/", "workload",
		map[string]string{"client_id": "py-writer", "client_secret": "wrong", "token_url": idp.URL + "/v1/oauth/tokens"})
	for _, r := range res.Results {
		if r.OK && strings.HasPrefix(r.Step, "PutObject") {
			t.Fatalf("step %s succeeded without the auth manager's token", r.Step)
		}
	}
}
