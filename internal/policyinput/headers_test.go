package policyinput

import (
	"encoding/json"
	"slices"
	"testing"
)

// TestHeaders: Headers mean what the map they replaced meant — in order
// of name, a name once (the later entry of a name stands), nil is JSON
// null and empty is {} — however a producer spelled them.
func TestHeaders(t *testing.T) {
	m := map[string]string{"user-agent": "x", "range": "bytes=0-1", "amz-sdk-request": "attempt=1"}
	sorted := Headers{{Name: "amz-sdk-request", Value: "attempt=1"}, {Name: "range", Value: "bytes=0-1"}, {Name: "user-agent", Value: "x"}}
	if got := HeadersOf(m); !slices.Equal(got, sorted) {
		t.Fatalf("HeadersOf: %q, want %q", got, sorted)
	}
	if HeadersOf(nil) != nil || HeadersOf(map[string]string{}) == nil {
		t.Fatal("HeadersOf must keep nil and empty apart")
	}
	if !sorted.InOrder() || (Headers{{Name: "b"}, {Name: "a"}}).InOrder() || (Headers{{Name: "a"}, {Name: "a"}}).InOrder() {
		t.Fatal("InOrder: strictly ascending names only")
	}

	messy := Headers{{Name: "user-agent", Value: "old"}, {Name: "range", Value: "bytes=0-1"}, {Name: "user-agent", Value: "x"}, {Name: "amz-sdk-request", Value: "attempt=1"}}
	orig := slices.Clone(messy)
	if got := messy.Normalized(); !slices.Equal(got, sorted) {
		t.Fatalf("Normalized: %q, want %q", got, sorted)
	}
	if !slices.Equal(messy, orig) {
		t.Fatal("Normalized changed its receiver")
	}
	if v, ok := messy.Get("user-agent"); !ok || v != "x" {
		t.Fatalf("Get of a name given twice: %q %v, want the later", v, ok)
	}
	if _, ok := sorted.Get("x-amz-acl"); ok {
		t.Fatal("Get found an absent header")
	}
	if got := sorted.With("range", "bytes=5-9").With("accept", "*/*"); !slices.Equal(got, Headers{{Name: "accept", Value: "*/*"}, {Name: "amz-sdk-request", Value: "attempt=1"}, {Name: "range", Value: "bytes=5-9"}, {Name: "user-agent", Value: "x"}}) {
		t.Fatalf("With: %q", got)
	}
	if v, _ := sorted.Get("range"); v != "bytes=0-1" {
		t.Fatal("With changed its receiver")
	}

	for _, tc := range []struct {
		h    Headers
		want string
	}{
		{nil, `null`},
		{Headers{}, `{}`},
		{messy, `{"amz-sdk-request":"attempt=1","range":"bytes=0-1","user-agent":"x"}`},
		{Headers{{Name: "q\"", Value: "<\u2028>"}}, `{"q\"":"\u003c\u2028\u003e"}`},
	} {
		b, err := json.Marshal(Request{Headers: tc.h})
		if err != nil {
			t.Fatal(err)
		}
		want := `{"method":"","region":"","host":"","headers":` + tc.want + `}`
		if string(b) != want {
			t.Fatalf("marshal %q: %s, want %s", tc.h, b, want)
		}
		var back Request
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		if (back.Headers == nil) != (tc.h == nil) || !slices.Equal(back.Headers, tc.h.Normalized()) {
			t.Fatalf("round trip of %q: %#v", tc.h, back.Headers)
		}
	}
	var r Request
	if err := json.Unmarshal([]byte(`{"headers":{"range":1}}`), &r); err == nil {
		t.Fatal("a header value that is not a string was accepted")
	}
}
