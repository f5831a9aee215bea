package server

import (
	"slices"
	"strings"
	"testing"

	"github.com/countersign/countersign/remotesign"
)

// TestLowerHeaders: names lowered by ASCII only (from the table for the
// known ones, computed for the rest), values joined with ", ", and the
// names sorted beside the map.
func TestLowerHeaders(t *testing.T) {
	got, names := lowerHeaders(remotesign.Headers{
		{Name: "User-Agent", Values: []string{"aws-sdk-java/2.29.52"}},
		{Name: "RANGE", Values: []string{"bytes=-8192"}},
		{Name: "amz-sdk-request", Values: []string{"attempt=1", "max=4"}},
		{Name: "X-Custom-Thing", Values: []string{"a"}},
		{Name: "X-Amz-Date\u212a", Values: []string{"kelvin"}},
	}, nil)
	want := map[string]string{
		"user-agent":       "aws-sdk-java/2.29.52",
		"range":            "bytes=-8192",
		"amz-sdk-request":  "attempt=1, max=4",
		"x-custom-thing":   "a",
		"x-amz-date\u212a": "kelvin",
	}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Fatalf("%q: got %q, want %q (all: %v)", k, got[k], v, got)
		}
	}
	wantNames := []string{"amz-sdk-request", "range", "user-agent", "x-amz-date\u212a", "x-custom-thing"}
	if !slices.Equal(names, wantNames) {
		t.Fatalf("names %q, want %q", names, wantNames)
	}
	for _, k := range knownHeaderNames {
		if k != strings.ToLower(k) {
			t.Fatalf("knownHeaderNames entry %q is not lower case", k)
		}
		if got := asciiLower(strings.ToUpper(k)); got != k {
			t.Fatalf("asciiLower(%q) = %q", strings.ToUpper(k), got)
		}
	}
	// Only ASCII folds: a name with non-ASCII bytes is never a known one.
	if got := knownHeaderName("RAN\u212a"); got != "" {
		t.Fatalf("knownHeaderName matched a non-ASCII fold: %q", got)
	}
	h := remotesign.Headers{{Name: "User-Agent", Values: []string{"x"}}, {Name: "Range", Values: []string{"bytes=0-1"}}}
	if n := testing.AllocsPerRun(100, func() { _ = asciiLower(h[0].Name); _ = asciiLower(h[1].Name) }); n != 0 {
		t.Fatalf("lowering known names allocates %.0f times, want 0", n)
	}
}
