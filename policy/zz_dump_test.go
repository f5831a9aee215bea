package policy

import (
	"fmt"
	"path/filepath"
	"testing"
)

func TestZZDumpResidual(t *testing.T) {
	big := genGrants(10000)
	e := testEngine(t, filepath.Join(examplesRoot, "grants"), big, engineOptions{})
	known, err := newKnownInput(scanInputs(1)[0])
	if err != nil {
		t.Fatal(err)
	}
	pqs, err := e.fast.partial(known)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range pqs.Queries {
		fmt.Println("QUERY:", q)
	}
	for _, m := range pqs.Support {
		s := m.String()
		if len(s) > 6000 {
			s = s[:6000]
		}
		fmt.Println("SUPPORT:", s)
	}
}
