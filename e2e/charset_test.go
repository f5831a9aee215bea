package e2e

import (
	"net/http"
	"strings"
	"testing"
)

// TestCatalogFrontBodyCharsetIcebergREST: Iceberg's reference REST
// catalog server (a servlet) decodes a request body by the charset its
// Content-Type names. Sent as ISO-8859-1, the UTF-8 name "ä" the front
// read is the table "Ã¤" to the catalog, which then has a table the front
// filed under another name. The front refuses a charset other than UTF-8
// on the bodies it reads, and non-ASCII bodies not sent as
// application/json (read as ISO-8859-1 when no charset is named).
func TestCatalogFrontBodyCharsetIcebergREST(t *testing.T) {
	f := startCatalogFront(t)
	ref := startIcebergREST(t)
	front := frontOf(t, f, ref, "e2e-ref", refRoots)
	if st, b := call(t, ref, f.token, "POST", "/v1/namespaces", `{"namespace":["db"]}`); st != 200 {
		t.Fatalf("create namespace: %d %s", st, b)
	}
	post := func(base, name, ct string) (int, string) {
		req, _ := http.NewRequest("POST", base+"/v1/namespaces/db/tables", strings.NewReader(`{"name":"`+name+`","schema":`+eventsSchema+`}`))
		if ct != "" {
			req.Header.Set("Content-Type", ct)
		}
		req.Header.Set("Authorization", "Bearer "+f.token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		buf := make([]byte, 4096)
		n, _ := resp.Body.Read(buf)
		return resp.StatusCode, string(buf[:n])
	}
	// The premise: the catalog itself reads the body as ISO-8859-1.
	if st, b := post(ref, "é", "application/json; charset=ISO-8859-1"); st != 200 {
		t.Logf("the reference server refused the ISO-8859-1 body: %d %s", st, b)
	} else if st, _ := call(t, ref, f.token, "GET", "/v1/namespaces/db/tables/%C3%83%C2%A9", ""); st == 200 {
		t.Log(`the reference server created table "Ã©" from the UTF-8 name "é"`)
	}
	// Without a charset it reads anything but application/json so too.
	if st, _ := post(ref, "ö", ""); st == 200 {
		if st, _ := call(t, ref, f.token, "GET", "/v1/namespaces/db/tables/%C3%83%C2%B6", ""); st == 200 {
			t.Log(`the reference server created table "Ã¶" from a body without Content-Type`)
		}
	}
	if st, b := post(front, "ä", "application/json; charset=ISO-8859-1"); st != 400 {
		t.Errorf("through the front: %d %s", st, b)
	}
	if st, b := post(front, "ä", ""); st != 400 {
		t.Errorf("through the front, no Content-Type: %d %s", st, b)
	}
	for _, p := range []string{"/v1/namespaces/db/tables/%C3%83%C2%A4", "/v1/namespaces/db/tables/%C3%A4"} {
		if st, _ := call(t, ref, f.token, "GET", p, ""); st != 404 {
			t.Errorf("the catalog has %s: %d", p, st)
		}
	}
}
