package audit

import (
	"strings"
	"testing"

	"github.com/countersign/countersign/internal/strictjson"
)

// TestCheckJSONMessages: the strict rules themselves are tested and fuzzed
// in internal/strictjson; here, that a refused line says what was wrong.
func TestCheckJSONMessages(t *testing.T) {
	var c strictjson.Checker // one for all lines, as verify keeps one
	for _, tc := range []struct{ line, want string }{
		{`{"v":1,"seq":0,"seq":7}`, `invalid JSON: key "seq" appears twice in an object`},
		{`{"a":{"b":1,"b":2}}`, `key "b" appears twice`},
		{`{"a":{"b":1},"c":{"b":2}}`, ""},
		{"{\"a\":\"\xff\"}", "invalid UTF-8"},
		{"{\"a\":\"x\ny\"}", "invalid JSON at byte 7: control character 0xa"},
		{"{\"a\":1,\t\"b\":2}", "invalid JSON at byte 7: control character 0x9"},
		{`{"a":NaN}`, "invalid JSON at byte 5: unexpected character 'N' where a value should start"},
		{`{"a":"\ud800"}`, "invalid JSON at byte 6: unpaired UTF-16 surrogate"},
		{`{"a":1}x`, "invalid JSON at byte 7: unexpected data after the JSON value"},
		{``, "invalid JSON at byte 0: empty input"},
	} {
		err := checkJSON(&c, []byte(tc.line))
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("checkJSON(%q): %v", tc.line, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("checkJSON(%q) = %v, want %q", tc.line, err, tc.want)
		}
	}
}
