package server

import (
	"slices"
	"strings"
	"testing"

	"github.com/countersign/countersign/internal/policyinput"
	"github.com/countersign/countersign/remotesign"
)

// TestLowerHeaders: names lowered by ASCII only (from the table for the
// known ones, computed for the rest), values joined with ", ", in order of
// name; of two names equal but for case the later stands; no headers are
// empty, not nil (JSON {}, not null).
func TestLowerHeaders(t *testing.T) {
	got := lowerHeaders(remotesign.Headers{
		{Name: "User-Agent", Values: []string{"aws-sdk-java/2.29.52"}},
		{Name: "RANGE", Values: []string{"bytes=-8192"}},
		{Name: "amz-sdk-request", Values: []string{"attempt=1", "max=4"}},
		{Name: "X-Custom-Thing", Values: []string{"a"}},
		{Name: "X-Amz-Date\u212a", Values: []string{"kelvin"}},
		{Name: "x-custom-thing", Values: []string{"b"}},
	}, nil)
	want := policyinput.Headers{
		{Name: "amz-sdk-request", Value: "attempt=1, max=4"},
		{Name: "range", Value: "bytes=-8192"},
		{Name: "user-agent", Value: "aws-sdk-java/2.29.52"},
		{Name: "x-amz-date\u212a", Value: "kelvin"},
		{Name: "x-custom-thing", Value: "b"},
	}
	if !slices.Equal(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
	var room [8]policyinput.Header
	if got := lowerHeaders(nil, room[:0]); got == nil || len(got) != 0 {
		t.Fatalf("no headers: %#v, want empty and not nil", got)
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
