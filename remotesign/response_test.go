package remotesign

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

// trickyStrings exercise every branch of the JSON string escaping
// (internal/jsonstr) inside the response encoders.
var trickyStrings = []string{
	"",
	"plain ASCII text",
	`"quoted"`,
	`back\slash \\ \"`,
	"\x00\x01\x07\x1f",
	"\b\f\n\r\t",
	"\x7f DEL stays raw",
	"naïve 日本語 😀 \u00a0",
	"\u2028line\u2029para",
	"</script><!-- & -->",
	"\xff\xfe",                 // invalid bytes
	"a\xe2\x82",                // truncated sequence
	"\xed\xa0\x80",             // UTF-8-encoded surrogate
	"\xc0\xaf",                 // overlong '/'
	"\xf4\x90\x80\x80",         // beyond U+10FFFF
	"ok\uFFFDalready replaced", // a real U+FFFD stays
	strings.Repeat("long run ", 50) + "\x01",
}

// wantDecoded is what a JSON parser must read back: each invalid byte
// becomes U+FFFD (range over a string yields RuneError per bad byte).
func wantDecoded(s string) string { return string([]rune(s)) }

func TestAppendResult(t *testing.T) {
	headers := Headers{
		{Name: "Authorization", Values: []string{"AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20260101/us-east-1/s3/aws4_request, SignedHeaders=host;x-amz-date, Signature=abc"}},
		{Name: "X-Multi", Values: []string{"1", "2", ""}},
		{Name: "X-None"},
	}
	for _, s := range trickyStrings {
		headers = append(headers, Header{Name: "X-" + strings.Repeat("t", len(headers)), Values: []string{s}})
	}
	uri := "https://b.s3.amazonaws.com/k\"\\\xff\u2028?q=1&r=\x01"
	out := AppendResult([]byte("pre"), uri, headers)
	if !bytes.HasPrefix(out, []byte(`pre{"uri":"https://b.s3.amazonaws.com/k\"\\\ufffd\u2028?q=1&r=\u0001","headers":{"Authorization":["AWS4-HMAC-SHA256 `)) {
		t.Fatalf("AppendResult = %s", out)
	}
	out = out[len("pre"):]
	if !utf8.Valid(out) || !json.Valid(out) {
		t.Fatalf("AppendResult produced invalid JSON: %q", out)
	}
	var got struct {
		URI     string              `json:"uri"`
		Headers map[string][]string `json:"headers"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	if got.URI != wantDecoded(uri) {
		t.Errorf("uri = %q, want %q", got.URI, wantDecoded(uri))
	}
	want := map[string][]string{}
	for _, h := range headers {
		vals := []string{}
		for _, v := range h.Values {
			vals = append(vals, wantDecoded(v))
		}
		want[h.Name] = vals
	}
	if !reflect.DeepEqual(got.Headers, want) {
		t.Errorf("headers = %q\nwant %q", got.Headers, want)
	}

	// Order is the caller's.
	if got := string(AppendResult(nil, "u", Headers{{"b", []string{"1"}}, {"a", []string{"2", "3"}}})); got != `{"uri":"u","headers":{"b":["1"],"a":["2","3"]}}` {
		t.Errorf("AppendResult = %s", got)
	}
	if got := string(AppendResult(nil, "u", nil)); got != `{"uri":"u","headers":{}}` {
		t.Errorf("AppendResult with no headers = %s", got)
	}
}

func TestAppendError(t *testing.T) {
	if got, want := string(AppendError(nil, 403, "ForbiddenException", `denied: GetObject on "lake/k"`)),
		`{"error":{"message":"denied: GetObject on \"lake/k\"","type":"ForbiddenException","code":403}}`; got != want {
		t.Errorf("AppendError =\n %s\nwant\n %s", got, want)
	}
	for _, s := range trickyStrings {
		out := AppendError([]byte("x"), 400, "Bad\n"+s, s)[1:]
		var got struct {
			Error struct {
				Message string `json:"message"`
				Type    string `json:"type"`
				Code    int    `json:"code"`
			} `json:"error"`
		}
		if !utf8.Valid(out) {
			t.Fatalf("AppendError: invalid UTF-8: %q", out)
		}
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatalf("AppendError(%q) = %q: %v", s, out, err)
		}
		if got.Error.Message != wantDecoded(s) || got.Error.Type != wantDecoded("Bad\n"+s) || got.Error.Code != 400 {
			t.Errorf("AppendError(%q) decodes to %+v", s, got.Error)
		}
	}
}

// What Decode accepts, AppendResult echoes back exactly.
func TestDecodeAppendResultRoundTrip(t *testing.T) {
	req, err := decode(t, readFixture(t, "java_put.json"), Limits{})
	if err != nil {
		t.Fatal(err)
	}
	out := AppendResult(nil, req.URI, req.Headers)
	var got struct {
		URI     string              `json:"uri"`
		Headers map[string][]string `json:"headers"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	if got.URI != req.URI || len(got.Headers) != len(req.Headers) {
		t.Fatalf("round trip: %+v", got)
	}
	for _, h := range req.Headers {
		if !reflect.DeepEqual(got.Headers[h.Name], h.Values) {
			t.Errorf("header %s = %q, want %q", h.Name, got.Headers[h.Name], h.Values)
		}
	}
}
