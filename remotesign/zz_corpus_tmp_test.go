package remotesign

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestZZCorpus(t *testing.T) {
	dir := os.Getenv("CORPUS")
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		b, _ := os.ReadFile(filepath.Join(dir, e.Name()))
		lines := strings.SplitN(string(b), "\n", 2)
		arg := strings.TrimSpace(lines[1])
		arg = strings.TrimSuffix(strings.TrimPrefix(arg, "[]byte("), ")")
		s, err := strconv.Unquote(arg)
		if err != nil { t.Fatal(err) }
		var d Decoder
		_, derr := d.Decode([]byte(s), Limits{})
		res := "OK"
		if derr != nil { res = derr.Error() }
		if len(res) > 110 { res = res[:110] }
		fmt.Printf("%s %4d %q\n    -> %s\n", e.Name()[:10], len(s), clip(s), res)
	}
}
