package remotesign

import "testing"

func TestHasControl(t *testing.T) {
	for _, tc := range []struct {
		s             string
		strict, field bool // hasControl(s, false), hasControl(s, true)
	}{
		{"", false, false},
		{"plain ascii text longer than one word", false, false},
		{"tab\there", true, false},
		{"0123456\t", true, false},
		{"01234567\t", true, false},
		{"0123456789abcdef\x00", true, true},
		{"01234567\x7f", true, true},
		{"\x1f", true, true},
		{"naïve 日本語 éééééééé", false, false},
		{"\x80\x9f\xff\xfe\xc2\x85xxxx", false, false}, // C1 controls as bytes are not ASCII controls
	} {
		if got := hasControl([]byte(tc.s), false); got != tc.strict {
			t.Errorf("hasControl(%q, false) = %v", tc.s, got)
		}
		if got := hasControl([]byte(tc.s), true); got != tc.field {
			t.Errorf("hasControl(%q, true) = %v", tc.s, got)
		}
	}
}
