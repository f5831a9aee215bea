package e2e

import "testing"

// TestCatalogFrontMemberSpellingsSeaweedFS: SeaweedFS's catalog decodes
// request bodies with encoding/json, which matches "NAME" to "name" and
// takes the last; Iceberg's Java parsers, and the front, read only
// "name". A createTable naming one table as "name" and another as "NAME"
// had the front check and learn one while SeaweedFS created the other.
// The front refuses any other spelling of a member it reads.
func TestCatalogFrontMemberSpellingsSeaweedFS(t *testing.T) {
	f := startCatalogFront(t)
	front, direct, tok := f.cs.url, f.direct, f.token
	if st, b := call(t, direct, tok, "POST", "/v1/lake/namespaces", `{"namespace":["db"]}`); st != 200 {
		t.Fatalf("create namespace: %d %s", st, b)
	}
	// The premise: SeaweedFS reads "NAME" as the table's name.
	if st, b := call(t, direct, tok, "POST", "/v1/lake/namespaces/db/tables", `{"NAME":"upper","schema":`+eventsSchema+`}`); st != 200 {
		t.Logf("SeaweedFS refused a createTable naming its table in \"NAME\": %d %s", st, b)
	} else if st, _ := call(t, direct, tok, "GET", "/v1/lake/namespaces/db/tables/upper", ""); st != 200 {
		t.Logf("SeaweedFS created no table \"upper\" from \"NAME\": %d", st)
	} else {
		t.Log("SeaweedFS created table \"upper\" from the member \"NAME\"")
	}

	for _, body := range []string{
		`{"name":"checked","NAME":"created","schema":` + eventsSchema + `}`,
		`{"NAME":"created","schema":` + eventsSchema + `}`,
		`{"name":"checked","Location":"s3://lake/","schema":` + eventsSchema + `}`,
	} {
		st, b := call(t, front, tok, "POST", "/v1/lake/namespaces/db/tables", body)
		if st != 400 {
			t.Errorf("%s: %d %s", body, st, b)
		}
	}
	for _, name := range []string{"checked", "created"} {
		if st, b := call(t, direct, tok, "GET", "/v1/lake/namespaces/db/tables/"+name, ""); st != 404 {
			t.Errorf("SeaweedFS has table %s: %d %s", name, st, b)
		}
	}
}
