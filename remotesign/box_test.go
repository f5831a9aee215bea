package remotesign

import (
	"fmt"
	"strings"
	"testing"
)

// TestDecodeBeyondTheBox: requests with more headers or values than a
// requestBox holds decode the same, and no header's values can grow into
// another's, inside the box or beyond it.
func TestDecodeBeyondTheBox(t *testing.T) {
	for _, n := range []int{1, boxHeaders - 1, boxHeaders, boxHeaders + 1, 3 * boxHeaders} {
		for _, perHeader := range []int{1, 2, boxValues + 1} {
			var hs []string
			for i := range n {
				var vs []string
				for j := range perHeader {
					vs = append(vs, fmt.Sprintf(`"v%d-%d"`, i, j))
				}
				hs = append(hs, fmt.Sprintf(`"x-h%d":[%s]`, i, strings.Join(vs, ",")))
			}
			body := `{"region":"us-east-1","uri":"http://localhost:7070/lake/a","method":"GET","headers":{` + strings.Join(hs, ",") + `}}`
			var d Decoder
			r, err := d.Decode([]byte(body), Limits{MaxHeaders: 1000, MaxHeaderValues: 1000})
			if err != nil {
				t.Fatalf("%d headers of %d values: %v", n, perHeader, err)
			}
			if len(r.Headers) != n || cap(r.Headers) != n {
				t.Fatalf("%d headers of %d values: len %d cap %d", n, perHeader, len(r.Headers), cap(r.Headers))
			}
			for i, h := range r.Headers {
				if h.Name != fmt.Sprintf("x-h%d", i) || len(h.Values) != perHeader || cap(h.Values) != perHeader {
					t.Fatalf("header %d: %q, %d values, cap %d", i, h.Name, len(h.Values), cap(h.Values))
				}
				for j, v := range h.Values {
					if v != fmt.Sprintf("v%d-%d", i, j) {
						t.Fatalf("header %d value %d: %q", i, j, v)
					}
				}
			}
			// Appending to the first header must not change the second.
			if n > 1 {
				_ = append(r.Headers[0].Values, "grown")
				if r.Headers[1].Values[0] != "v1-0" {
					t.Fatalf("appending to header 0 overwrote header 1: %q", r.Headers[1].Values[0])
				}
			}
		}
	}
}
