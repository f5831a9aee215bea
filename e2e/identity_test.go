package e2e

import (
	"net/http"
	"strings"
	"testing"
)

// TestPrincipals: who calls decides what gets signed. An allowed principal's
// requests succeed at the S3 server; another principal, a missing token and
// a bad token get no signature.
func TestPrincipals(t *testing.T) {
	h := newHarness(t)
	h.adminPut(t, "lake", "wh/f.parquet", []byte("PAR1"))
	uri := styles(h.s3.Port)[0].object("lake", "wh/f.parquet")
	sr := signRequest{Region: testRegion, URI: uri, Method: "GET", Headers: javaHeaders()}

	status, res, ierr, _ := h.cs.sign(t, "", sr)
	if status != http.StatusOK {
		t.Fatalf("engineer: %d %+v", status, ierr)
	}
	if st, body := h.s3.send(t, "GET", res.URI, res.Headers, nil); st != http.StatusOK || string(body) != "PAR1" {
		t.Fatalf("engineer's signed request: %d %s", st, body)
	}

	intern := testIdP.Mint("intern", []string{"interns"}, nil)
	status, res, ierr, _ = h.cs.as(intern).sign(t, "", sr)
	if status != http.StatusForbidden || res != nil || !strings.Contains(ierr.Error.Message, "GetObject on arn:aws:s3:::lake/wh/f.parquet") {
		t.Fatalf("intern: %d %+v %+v", status, res, ierr)
	}

	for name, tc := range map[string]struct {
		token, reason string
	}{
		"no token":      {"", "missing_token"},
		"garbage":       {"abc.def.ghi", "malformed_token"},
		"wrong aud":     {testIdP.Mint("e2e-user", []string{"engineers"}, map[string]any{"aud": "other"}), "wrong_audience"},
		"wrong iss":     {testIdP.Mint("e2e-user", []string{"engineers"}, map[string]any{"iss": "https://evil"}), "wrong_issuer"},
		"expired":       {testIdP.Mint("e2e-user", []string{"engineers"}, map[string]any{"exp": 1000, "iat": 900}), "expired"},
		"tampered sig":  {defaultToken()[:len(defaultToken())-4] + "AAAA", "bad_signature"},
		"tampered body": {strings.Replace(defaultToken(), ".", ".e30", 1), "bad_signature"},
	} {
		status, res, ierr, _ := h.cs.as(tc.token).sign(t, "", sr)
		if status != http.StatusUnauthorized || res != nil || !strings.Contains(ierr.Error.Message, tc.reason) {
			t.Errorf("%s: %d %+v, want 401 naming %s", name, status, ierr, tc.reason)
		}
	}
}
