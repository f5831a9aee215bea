package conformance

import (
	"net/url"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/countersign/countersign/conformance/remotesigning"
)

// s3Op names the S3 operation a signed request description is, from its
// method, query and headers (enough for the operations these clients use).
func s3Op(r remotesigning.Request) string {
	u, err := url.Parse(r.URI)
	if err != nil {
		return "unparsable"
	}
	q := u.Query()
	has := func(k string) bool { _, ok := q[k]; return ok }
	path := strings.TrimPrefix(u.Path, "/")
	bucketLevel := !strings.Contains(path, "/") || strings.HasSuffix(path, "/") && strings.Count(path, "/") == 1
	if !strings.HasPrefix(u.Host, "localhost") && !strings.HasPrefix(u.Host, "127.") {
		bucketLevel = path == "" // virtual-hosted: the bucket is in the host
	}
	switch r.Method {
	case "GET":
		switch {
		case has("uploadId"):
			return "ListParts"
		case bucketLevel && q.Get("list-type") == "2":
			return "ListObjectsV2"
		case bucketLevel:
			return "ListObjects"
		}
		return "GetObject"
	case "HEAD":
		if bucketLevel {
			return "HeadBucket"
		}
		return "HeadObject"
	case "PUT":
		switch {
		case has("partNumber"):
			return "UploadPart"
		case headerValue(r.Headers, "x-amz-copy-source") != "":
			return "CopyObject"
		}
		return "PutObject"
	case "POST":
		switch {
		case has("delete"):
			return "DeleteObjects"
		case has("uploads"):
			return "CreateMultipartUpload"
		case has("uploadId"):
			return "CompleteMultipartUpload"
		}
	case "DELETE":
		if has("uploadId") {
			return "AbortMultipartUpload"
		}
		return "DeleteObject"
	}
	return r.Method + " " + u.RawQuery
}

func headerValue(h map[string][]string, name string) string {
	for k, v := range h {
		if strings.EqualFold(k, name) && len(v) > 0 {
			return v[0]
		}
	}
	return ""
}

// opCounts counts the operations of the exchanges that were signed.
func opCounts(exs []remotesigning.Exchange) map[string]int {
	c := map[string]int{}
	for _, ex := range exs {
		if ex.Err == nil {
			c[s3Op(ex.Request)]++
		}
	}
	return c
}

func opSummary(c map[string]int) string {
	var names []string
	for k := range c {
		names = append(names, k)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, n := range names {
		b.WriteString(n + "=" + strconv.Itoa(c[n]) + " ")
	}
	return b.String()
}

// requireCleanExchanges checks what every client must see from countersign:
// the uri came back unchanged, no header the client sent came back with
// another value (the PyIceberg hazard, iceberg-python#2422), and the
// signature headers are there.
func requireCleanExchanges(t testing.TB, exs []remotesigning.Exchange) {
	t.Helper()
	for _, ex := range exs {
		if ex.Result == nil {
			continue
		}
		if ex.Result.URI != ex.Request.URI {
			t.Fatalf("%s %s: countersign changed the uri to %s", ex.Request.Method, ex.Request.URI, ex.Result.URI)
		}
		if c := remotesigning.Conflicts(ex); len(c) > 0 {
			t.Fatalf("%s %s: countersign returned client headers with other values: %+v", ex.Request.Method, ex.Request.URI, c)
		}
		for _, name := range []string{"Authorization", "X-Amz-Date", "x-amz-content-sha256"} {
			if headerValue(ex.Result.Headers, name) == "" {
				t.Fatalf("%s %s: no %s in the signed headers %v", ex.Request.Method, ex.Request.URI, name, ex.Result.Headers)
			}
		}
	}
}
