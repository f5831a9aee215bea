package remotesign

import (
	"errors"
	"math"
	"os"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

const minimal = `{"region":"us-east-1","uri":"https://b.s3.amazonaws.com/k","method":"GET","headers":{}}`

// withMember returns minimal with extra members added before the others.
func withMember(members string) string {
	return `{` + members + `,` + minimal[1:]
}

func minimalRequest() *Request {
	return &Request{Region: "us-east-1", URI: "https://b.s3.amazonaws.com/k", Method: "GET", Provider: "s3"}
}

func decode(t testing.TB, body string, lim Limits) (*Request, error) {
	t.Helper()
	var d Decoder
	return d.Decode([]byte(body), lim)
}

func TestDecodeValid(t *testing.T) {
	tests := []struct {
		name string
		body string
		want func(r *Request)
	}{
		{"minimal", minimal, nil},
		{"whitespace around", " \n\t" + minimal + "\r\n ", nil},
		{"null optionals",
			withMember(`"properties":null,"body":null,"provider":null`), nil},
		{"empty properties", withMember(`"properties":{}`), nil},
		{"provider s3", withMember(`"provider":"s3"`), nil},
		{"unknown members ignored",
			withMember(`"extra":{"a":[1,-2.5e+3,true,false,null,{"b":"\u00e9\ud83d\ude00"}]},"x-future":[[[]]],"n":0`), nil},
		{"unknown member with invalid UTF-8 ignored", withMember("\"extra\":\"\xff\xfe\""), nil},
		{"duplicate unknown members ignored", withMember(`"x":1,"x":2`), nil},
		{"nested unknown member within limit",
			withMember(`"deep":` + strings.Repeat("[", maxNesting-1) + strings.Repeat("]", maxNesting-1)), nil},
		{"escaped member name", `{"re\u0067ion":"us-east-1","uri":"https://b.s3.amazonaws.com/k","method":"GET","headers":{}}`, nil},
		{"empty body string", withMember(`"body":""`), func(r *Request) { r.HasBody = true }},
		{"body", withMember(`"body":"<Delete>\n<Object><Key>a\"b</Key></Object></Delete>"`), func(r *Request) {
			r.Body, r.HasBody = "<Delete>\n<Object><Key>a\"b</Key></Object></Delete>", true
		}},
		{"properties", withMember(`"properties":{"a":"1","b":"","ü":"ß"}`), func(r *Request) {
			r.Properties = map[string]string{"a": "1", "b": "", "ü": "ß"}
		}},
		{"every method", `{"region":"r","uri":"u","method":"OPTIONS","headers":{}}`, func(r *Request) {
			r.Region, r.URI, r.Method = "r", "u", "OPTIONS"
		}},
		{"headers in order with values", `{"region":"us-east-1","uri":"https://b.s3.amazonaws.com/k","method":"GET","headers":` +
			`{"X-B":["2","1"],"x-a":[""],"X-Amz-Meta-Name":["na\u00efve \t\u65e5\u672c \ud83d\ude00"],"!#$%&'*+-.^_` + "`" + `|~09AZaz":["x"]}}`,
			func(r *Request) {
				r.Headers = Headers{
					{Name: "X-B", Values: []string{"2", "1"}},
					{Name: "x-a", Values: []string{""}},
					{Name: "X-Amz-Meta-Name", Values: []string{"naïve \t日本 😀"}},
					{Name: "!#$%&'*+-.^_`|~09AZaz", Values: []string{"x"}},
				}
			}},
		{"escaped slash and unicode in uri", `{"region":"us-east-1","uri":"https:\/\/b.s3.amazonaws.com\/k\u00e9","method":"GET","headers":{}}`,
			func(r *Request) { r.URI = "https://b.s3.amazonaws.com/ké" }},
		{"header limits reached exactly", `{"region":"us-east-1","uri":"https://b.s3.amazonaws.com/k","method":"GET","headers":{"ab":["cd","ef"]}}`,
			func(r *Request) { r.Headers = Headers{{Name: "ab", Values: []string{"cd", "ef"}}} }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			lim := Limits{}
			if strings.HasPrefix(tc.name, "header limits") {
				lim = Limits{MaxHeaders: 1, MaxHeaderValues: 2, MaxHeaderBytes: 6}
			}
			got, err := decode(t, tc.body, lim)
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			want := minimalRequest()
			if tc.want != nil {
				tc.want(want)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("Decode:\n got %#v\nwant %#v", got, want)
			}
		})
	}
}

func TestDecodeErrors(t *testing.T) {
	const mh = `{"region":"us-east-1","uri":"https://b.s3.amazonaws.com/k","method":"GET","headers":`
	hdrs := func(h string) string { return mh + h + `}` }
	many := func(n int) string {
		var b strings.Builder
		b.WriteString("{")
		for i := range n {
			if i > 0 {
				b.WriteString(",")
			}
			b.WriteString(`"h` + strings.Repeat("x", i) + `":["v"]`)
		}
		b.WriteString("}")
		return b.String()
	}
	values := func(n int) string {
		return `{"X":[` + strings.TrimSuffix(strings.Repeat(`"v",`, n), ",") + `]}`
	}

	tests := []struct {
		name  string
		body  string
		lim   Limits
		field string // "" for errors about the body as a whole
		msg   string // substring of the message
	}{
		// The body as a whole.
		{"empty", "", Limits{}, "", "empty body"},
		{"whitespace only", " \n ", Limits{}, "", "empty body"},
		{"array", `[]`, Limits{}, "", "must be a JSON object, got array"},
		{"string", `"GET"`, Limits{}, "", "must be a JSON object, got string"},
		{"null", `null`, Limits{}, "", "must be a JSON object, got null"},
		{"number", `12`, Limits{}, "", "must be a JSON object, got number"},
		{"truncated in string", `{"region":"us-east-1","uri":"htt`, Limits{}, "uri", "unterminated string"},
		{"truncated after comma", `{"region":"us-east-1",`, Limits{}, "", "unexpected end of input"},
		{"truncated after colon", `{"region":`, Limits{}, "region", "unexpected end of input"},
		{"truncated in headers", hdrs(`{"a":["b"]`)[:len(hdrs(`{"a":["b"]`))-3], Limits{}, "headers", "malformed JSON"},
		{"truncated object", `{`, Limits{}, "", "unexpected end of input"},
		{"trailing data", minimal + `{}`, Limits{}, "", "unexpected data after the JSON value"},
		{"missing comma", `{"region":"a" "uri":"b"}`, Limits{}, "region", "expected ',' or '}'"},
		{"trailing comma", `{"region":"a",}`, Limits{}, "", `expected '"' to start`},
		{"single quotes", `{'region':'a'}`, Limits{}, "", `expected '"' to start`},
		{"raw control char in unknown member", withMember("\"x\":\"a\nb\""), Limits{}, "x", "control character in string"},
		{"bad escape", withMember(`"x":"\x41"`), Limits{}, "x", "invalid escape character"},
		{"short unicode escape", withMember(`"x":"\u12"`), Limits{}, "x", `invalid \u escape`},
		{"lone high surrogate", `{"region":"\ud800","uri":"u","method":"GET","headers":{}}`, Limits{}, "region", "unpaired UTF-16 surrogate"},
		{"high surrogate then non-low", `{"region":"\ud800\u0041","uri":"u","method":"GET","headers":{}}`, Limits{}, "region", "unpaired UTF-16 surrogate"},
		{"lone low surrogate", `{"region":"\udc00","uri":"u","method":"GET","headers":{}}`, Limits{}, "region", "unpaired UTF-16 surrogate"},
		{"NaN", withMember(`"x":NaN`), Limits{}, "x", "unexpected character 'N'"},
		{"byte order mark", "\xef\xbb\xbf" + minimal, Limits{}, "", "unexpected byte 0xef where a value should start"},
		{"leading zero", withMember(`"x":01`), Limits{}, "x", "expected ',' or '}'"},
		{"bare minus", withMember(`"x":-`), Limits{}, "x", "invalid number"},
		{"bad fraction", withMember(`"x":1.`), Limits{}, "x", "digit expected after '.'"},
		{"bad exponent", withMember(`"x":1e+`), Limits{}, "x", "digit expected in exponent"},
		{"bad literal", withMember(`"x":tru`), Limits{}, "x", "invalid literal"},
		{"deep nesting", withMember(`"deep":` + strings.Repeat("[", 10000) + strings.Repeat("]", 10000)), Limits{}, "deep", "nesting deeper than 64 levels"},
		{"nesting one too deep", withMember(`"deep":` + strings.Repeat("[", maxNesting) + strings.Repeat("]", maxNesting)), Limits{}, "deep", "nesting deeper than 64 levels"},

		// Required members.
		{"missing region", `{"uri":"u","method":"GET","headers":{}}`, Limits{}, "region", "required"},
		{"missing uri", `{"region":"r","method":"GET","headers":{}}`, Limits{}, "uri", "required"},
		{"missing method", `{"region":"r","uri":"u","headers":{}}`, Limits{}, "method", "required"},
		{"missing headers", `{"region":"r","uri":"u","method":"GET"}`, Limits{}, "headers", "required"},
		{"empty object", `{}`, Limits{}, "region", "required"},
		{"region number", `{"region":1,"uri":"u","method":"GET","headers":{}}`, Limits{}, "region", "must be a non-empty string, got number"},
		{"region null", `{"region":null,"uri":"u","method":"GET","headers":{}}`, Limits{}, "region", "must be a non-empty string, got null"},
		{"region empty", `{"region":"","uri":"u","method":"GET","headers":{}}`, Limits{}, "region", "must be a non-empty string"},
		{"region control", `{"region":"us\n","uri":"u","method":"GET","headers":{}}`, Limits{}, "region", "control characters"},
		{"region invalid UTF-8", "{\"region\":\"us-\xff\",\"uri\":\"u\",\"method\":\"GET\",\"headers\":{}}", Limits{}, "region", "invalid UTF-8"},
		{"uri array", `{"region":"r","uri":["u"],"method":"GET","headers":{}}`, Limits{}, "uri", "must be a non-empty string, got array"},
		{"uri empty", `{"region":"r","uri":"","method":"GET","headers":{}}`, Limits{}, "uri", "must be a non-empty string"},
		{"uri CRLF", `{"region":"r","uri":"https://h/k\r\nX: y","method":"GET","headers":{}}`, Limits{}, "uri", "control characters"},
		{"uri NUL", `{"region":"r","uri":"https://h/k\u0000","method":"GET","headers":{}}`, Limits{}, "uri", "control characters"},
		{"uri invalid UTF-8", "{\"region\":\"r\",\"uri\":\"https://h/\xc3\x28\",\"method\":\"GET\",\"headers\":{}}", Limits{}, "uri", "invalid UTF-8"},
		{"method lower case", `{"region":"r","uri":"u","method":"get","headers":{}}`, Limits{}, "method", `must be one of PUT, GET, HEAD, POST, DELETE, PATCH, OPTIONS (case-sensitive), got "get"`},
		{"method unknown", `{"region":"r","uri":"u","method":"CONNECT","headers":{}}`, Limits{}, "method", "must be one of PUT, GET, HEAD, POST, DELETE, PATCH, OPTIONS"},
		{"method with space", `{"region":"r","uri":"u","method":"GET ","headers":{}}`, Limits{}, "method", "must be one of"},
		{"method number", `{"region":"r","uri":"u","method":1,"headers":{}}`, Limits{}, "method", "must be one of PUT, GET, HEAD, POST, DELETE, PATCH, OPTIONS, got number"},
		{"method null", `{"region":"r","uri":"u","method":null,"headers":{}}`, Limits{}, "method", "got null"},
		{"headers array", `{"region":"r","uri":"u","method":"GET","headers":[]}`, Limits{}, "headers", "must be an object mapping names to arrays of strings, got array"},
		{"headers null", `{"region":"r","uri":"u","method":"GET","headers":null}`, Limits{}, "headers", "got null"},

		// Duplicate members.
		{"duplicate region", withMember(`"region":"eu-west-1"`), Limits{}, "region", "duplicate member"},
		{"duplicate region via escape", withMember(`"regio\u006e":"eu-west-1"`), Limits{}, "region", "duplicate member"},
		{"duplicate headers", withMember(`"headers":{"a":["b"]}`), Limits{}, "headers", "duplicate member"},
		{"duplicate null provider", withMember(`"provider":null,"provider":"s3"`), Limits{}, "provider", "duplicate member"},
		{"duplicate body", withMember(`"body":"a","body":"b"`), Limits{}, "body", "duplicate member"},

		// Headers.
		{"header value string", hdrs(`{"Range":"bytes=0-1"}`), Limits{}, "headers.Range", "must be an array of strings, got string"},
		{"header value object", hdrs(`{"Range":{}}`), Limits{}, "headers.Range", "must be an array of strings, got object"},
		{"header value null", hdrs(`{"Range":null}`), Limits{}, "headers.Range", "must be an array of strings, got null"},
		{"header element number", hdrs(`{"Range":["a",1]}`), Limits{}, "headers.Range", "values must be strings, got number"},
		{"header element null", hdrs(`{"Range":[null]}`), Limits{}, "headers.Range", "values must be strings, got null"},
		{"header no values", hdrs(`{"Range":[]}`), Limits{}, "headers.Range", "must have at least one value"},
		{"header duplicate ignoring case", hdrs(`{"Content-Type":["a"],"content-TYPE":["a"]}`), Limits{}, "headers.content-TYPE", `duplicate header: same name as "Content-Type"`},
		{"header exact duplicate", hdrs(`{"a":["1"],"b":["2"],"a":["3"]}`), Limits{}, "headers.a", "duplicate header"},
		{"header duplicate via escape", hdrs(`{"Host":["a"],"\u0068ost":["b"]}`), Limits{}, "headers.host", "duplicate header"},
		{"header name empty", hdrs(`{"":["a"]}`), Limits{}, "headers", "empty header name"},
		{"header name space", hdrs(`{"Bad Name":["a"]}`), Limits{}, "headers.Bad Name", "not a valid HTTP token"},
		{"header name colon", hdrs(`{"X-A:b":["a"]}`), Limits{}, "headers.X-A:b", "not a valid HTTP token"},
		{"header name CRLF", hdrs(`{"X-A\r\nX-B":["a"]}`), Limits{}, "headers.X-A\r\nX-B", "not a valid HTTP token"},
		{"header name non-ASCII", hdrs(`{"Ünicode":["a"]}`), Limits{}, "headers.Ünicode", "not a valid HTTP token"},
		{"header name invalid UTF-8", hdrs("{\"X-\xff\":[\"a\"]}"), Limits{}, "headers.X-\xff", "not a valid HTTP token"},
		{"header value CRLF", hdrs(`{"X-A":["a\r\nX-Evil: 1"]}`), Limits{}, "headers.X-A", "control character"},
		{"header value LF", hdrs(`{"X-A":["a\nb"]}`), Limits{}, "headers.X-A", "control character"},
		{"header value CR", hdrs(`{"X-A":["ok","a\rb"]}`), Limits{}, "headers.X-A", "control character"},
		{"header value NUL", hdrs(`{"X-A":["a\u0000"]}`), Limits{}, "headers.X-A", "control character"},
		{"header value other control", hdrs(`{"X-A":["\u0001"]}`), Limits{}, "headers.X-A", "control character"},
		{"header value DEL", hdrs(`{"X-A":["a\u007f"]}`), Limits{}, "headers.X-A", "control character"},
		{"header value invalid UTF-8", hdrs("{\"X-A\":[\"caf\xe9\"]}"), Limits{}, "headers.X-A", "not valid UTF-8"},
		{"header value surrogate as UTF-8", hdrs("{\"X-A\":[\"\xed\xa0\x80\"]}"), Limits{}, "headers.X-A", "not valid UTF-8"},

		// Limits.
		{"too many headers default", hdrs(many(DefaultMaxHeaders + 1)), Limits{}, "headers", "more than 64 headers"},
		{"too many headers", hdrs(many(3)), Limits{MaxHeaders: 2}, "headers", "more than 2 headers"},
		{"too many values default", hdrs(values(DefaultMaxHeaderValues + 1)), Limits{}, "headers.X", "more than 16 values"},
		{"too many values", hdrs(values(3)), Limits{MaxHeaderValues: 2}, "headers.X", "more than 2 values"},
		{"too many header bytes default", hdrs(`{"X":["` + strings.Repeat("v", DefaultMaxHeaderBytes) + `"]}`), Limits{}, "headers", "names and values exceed 16384 bytes"},
		{"too many header bytes", hdrs(`{"ab":["cd","efg"]}`), Limits{MaxHeaderBytes: 6}, "headers", "exceed 6 bytes"},
		{"header name alone too long", hdrs(`{"abcdefg":["x"]}`), Limits{MaxHeaderBytes: 6}, "headers", "exceed 6 bytes"},

		{"too many properties default", withMember(`"properties":{` + strings.TrimSuffix(strings.Repeat(`"k":"v",`, DefaultMaxProperties+1), ",") + `}`), Limits{}, "properties", "more than 256 properties"},
		{"too many properties", withMember(`"properties":{"a":"1","b":"2"}`), Limits{MaxProperties: 1}, "properties", "more than 1 properties"},
		{"too many JSON values in an ignored member", withMember(`"x":[` + strings.Repeat("0,", DefaultLimits().maxValues()) + `0]`), Limits{}, "x", "JSON values"},
		{"too many JSON values at top level", `{` + strings.Repeat(`"x":0,`, DefaultLimits().maxValues()) + `"y":0}`, Limits{}, "x", "JSON values"},

		// Provider.
		{"provider gcs", withMember(`"provider":"gcs"`), Limits{}, "provider", `only "s3" is supported, got "gcs"`},
		{"provider upper case", withMember(`"provider":"S3"`), Limits{}, "provider", `only "s3" is supported, got "S3"`},
		{"provider empty", withMember(`"provider":""`), Limits{}, "provider", `only "s3" is supported`},
		{"provider number", withMember(`"provider":3`), Limits{}, "provider", "must be a string, got number"},

		// Properties.
		{"properties array", withMember(`"properties":["a"]`), Limits{}, "properties", "must be an object of strings, got array"},
		{"properties string", withMember(`"properties":"a=b"`), Limits{}, "properties", "must be an object of strings, got string"},
		{"property number", withMember(`"properties":{"a":"1","b":2}`), Limits{}, "properties.b", "must be a string, got number"},
		{"property null", withMember(`"properties":{"a":null}`), Limits{}, "properties.a", "must be a string, got null"},
		{"property duplicate", withMember(`"properties":{"a":"1","a":"2"}`), Limits{}, "properties.a", "duplicate key"},
		{"property value invalid UTF-8", withMember("\"properties\":{\"a\":\"\xff\"}"), Limits{}, "properties.a", "value is not valid UTF-8"},
		{"property key invalid UTF-8", withMember("\"properties\":{\"\xff\":\"a\"}"), Limits{}, "properties.\xff", "key is not valid UTF-8"},

		// Body.
		{"body number", withMember(`"body":1`), Limits{}, "body", "must be a string, got number"},
		{"body object", withMember(`"body":{}`), Limits{}, "body", "must be a string, got object"},
		{"body invalid UTF-8", withMember("\"body\":\"<Key>\xff</Key>\""), Limits{}, "body", "invalid UTF-8"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req, err := decode(t, tc.body, tc.lim)
			if err == nil {
				t.Fatalf("Decode succeeded: %#v", req)
			}
			if req != nil {
				t.Errorf("Decode returned a request with its error")
			}
			var de *DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("error %T is not a *DecodeError: %v", err, err)
			}
			if de.Field != tc.field {
				t.Errorf("Field = %q, want %q (error: %v)", de.Field, tc.field, err)
			}
			if !strings.Contains(de.Msg, tc.msg) {
				t.Errorf("Msg = %q, want it to contain %q", de.Msg, tc.msg)
			}
			checkErrorText(t, de)
		})
	}
}

// checkErrorText checks what every DecodeError text must be: prefixed,
// naming the field, bounded, one line of valid UTF-8.
func checkErrorText(t testing.TB, de *DecodeError) {
	t.Helper()
	text := de.Error()
	want := "invalid sign request: "
	if de.Field != "" {
		want += "field \""
	}
	if !strings.HasPrefix(text, want) {
		t.Errorf("Error() = %q, want prefix %q", text, want)
	}
	if len(text) > 400 {
		t.Errorf("Error() is %d bytes long: %.100q...", len(text), text)
	}
	if !utf8.ValidString(text) || strings.ContainsAny(text, "\r\n\x00") {
		t.Errorf("Error() is not one line of valid UTF-8: %q", text)
	}
}

func TestDecodeErrorText(t *testing.T) {
	_, err := decode(t, `{"region":"r","uri":"u","method":"get","headers":{}}`, Limits{})
	const want = `invalid sign request: field "method": must be one of PUT, GET, HEAD, POST, DELETE, PATCH, OPTIONS (case-sensitive), got "get"`
	if err == nil || err.Error() != want {
		t.Errorf("error = %v\nwant %s", err, want)
	}
	_, err = decode(t, `[1]`, Limits{})
	if want := "invalid sign request: body must be a JSON object, got array"; err == nil || err.Error() != want {
		t.Errorf("error = %v\nwant %s", err, want)
	}
	_, err = decode(t, `{"region":"a" x}`, Limits{})
	if want := `invalid sign request: field "region": malformed JSON at byte 14: expected ',' or '}' after object member`; err == nil || err.Error() != want {
		t.Errorf("error = %v\nwant %s", err, want)
	}
}

// A hostile request must not make its error message large: every echoed
// value is cut to about 64 bytes.
func TestDecodeErrorTruncatesEcho(t *testing.T) {
	long := strings.Repeat("\u00e9", 5000) // two bytes each: cuts must respect rune starts
	for name, body := range map[string]string{
		"method":      `{"region":"r","uri":"u","method":"` + long + `","headers":{}}`,
		"provider":    withMember(`"provider":"` + long + `"`),
		"header name": `{"region":"r","uri":"u","method":"GET","headers":{"` + long + `":["a"]}}`,
		"header dup":  `{"region":"r","uri":"u","method":"GET","headers":{"` + strings.Repeat("a", 5000) + `":["a"],"` + strings.Repeat("A", 5000) + `":["a"]}}`,
		"property":    withMember(`"properties":{"` + long + `":1}`),
		"member name": `{"` + long + `":"` + "\x01" + `"}`,
		"bad literal": `{"x":nul` + strings.Repeat("l", 100000) + `}`,
	} {
		t.Run(name, func(t *testing.T) {
			_, err := decode(t, body, Limits{MaxHeaderBytes: 1 << 20})
			var de *DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("error = %v, want a *DecodeError", err)
			}
			if len(de.Field) > len("properties.")+maxEcho+len("...") {
				t.Errorf("Field is %d bytes long", len(de.Field))
			}
			checkErrorText(t, de)
		})
	}
}

func TestDecodeJavaFixtures(t *testing.T) {
	get, err := decode(t, readFixture(t, "java_get.json"), Limits{})
	if err != nil {
		t.Fatal(err)
	}
	want := &Request{
		Region: "us-west-2",
		URI:    "https://lake-prod.s3.us-west-2.amazonaws.com/warehouse/sales.db/orders/data/00042-17-8e4f2b6a-3c1d-4e0f-9a7b-5d6c2e1f0a9b-00001.parquet",
		Method: "GET",
		Headers: Headers{
			{Name: "amz-sdk-invocation-id", Values: []string{"5d0b5b6e-97c4-1f0e-a8a1-3b2f1c9d4e77"}},
			{Name: "amz-sdk-request", Values: []string{"attempt=1; max=4"}},
			{Name: "Range", Values: []string{"bytes=4-1048579"}},
			{Name: "User-Agent", Values: []string{"aws-sdk-java/2.29.52 Linux/6.8.0 Java/17.0.13 vendor/Eclipse_Adoptium io/sync http/Apache cfg/retry-mode/legacy"}},
			{Name: "x-amz-content-sha256", Values: []string{"UNSIGNED-PAYLOAD"}},
		},
		Properties: map[string]string{"s3.signer.endpoint": "v1/aws/s3/sign"},
		Provider:   "s3",
	}
	if !reflect.DeepEqual(get, want) {
		t.Errorf("java_get.json:\n got %#v\nwant %#v", get, want)
	}
	if v, ok := get.Headers.Get("range"); !ok || v != "bytes=4-1048579" {
		t.Errorf(`Headers.Get("range") = %q, %v`, v, ok)
	}

	put, err := decode(t, readFixture(t, "java_put.json"), Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if put.Method != "PUT" || put.HasBody || put.Provider != "s3" || len(put.Headers) != 7 {
		t.Errorf("java_put.json: %#v", put)
	}
	if v := put.Headers.Values("content-type"); !reflect.DeepEqual(v, []string{"application/octet-stream"}) {
		t.Errorf("Content-Type = %q", v)
	}
	if put.Properties["client.region"] != "us-west-2" {
		t.Errorf("Properties = %v", put.Properties)
	}
}

func readFixture(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A Request must not share memory with the Decoder or the input: both are
// reused by the HTTP server while the Request may live on in audit.
func TestDecodeRequestOutlivesDecoderAndInput(t *testing.T) {
	var d Decoder
	in := []byte(readFixture(t, "java_get.json"))
	first, err := d.Decode(in, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	snapshot := *first
	snapshot.Headers = append(Headers(nil), first.Headers...)
	for i := range in {
		in[i] = 'X'
	}
	if _, err := d.Decode([]byte(readFixture(t, "java_put.json")), Limits{}); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Decode([]byte(`{"x":"`+strings.Repeat("Y", 2*maxRetained)+`"}`), Limits{}); err == nil {
		t.Fatal("expected an error")
	}
	if !reflect.DeepEqual(*first, snapshot) || first.URI[:5] != "https" {
		t.Errorf("first request changed after reuse: %#v", first)
	}

	// Appending to one header's values must not clobber the next header.
	r, err := d.Decode([]byte(`{"region":"r","uri":"u","method":"GET","headers":{"a":["1"],"b":["2"]}}`), Limits{})
	if err != nil {
		t.Fatal(err)
	}
	_ = append(r.Headers[0].Values, "x")
	if r.Headers[1].Values[0] != "2" {
		t.Errorf("append to Headers[0].Values overwrote Headers[1]: %q", r.Headers[1].Values)
	}
}

func TestDecoderReuseAfterError(t *testing.T) {
	d := new(Decoder)
	if _, err := d.Decode([]byte(withMember(`"headers":{"a":["b"]},"body":"x","properties":{"k":"v"}`)), Limits{}); err == nil {
		t.Fatal("expected duplicate headers error")
	}
	got, err := d.Decode([]byte(minimal), Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, minimalRequest()) {
		t.Errorf("state leaked from a failed decode: %#v", got)
	}
}

func TestDefaultLimits(t *testing.T) {
	if got := (Limits{}).withDefaults(); got != DefaultLimits() {
		t.Errorf("zero Limits = %+v, want %+v", got, DefaultLimits())
	}
	if got := (Limits{MaxHeaders: -1, MaxHeaderValues: 3}).withDefaults(); got.MaxHeaders != DefaultMaxHeaders || got.MaxHeaderValues != 3 {
		t.Errorf("withDefaults = %+v", got)
	}
	huge := Limits{MaxHeaders: math.MaxInt, MaxHeaderValues: math.MaxInt, MaxHeaderBytes: math.MaxInt, MaxProperties: math.MaxInt}
	if n := huge.maxValues(); n <= 0 {
		t.Errorf("maxValues overflowed: %d", n)
	}
}

// A request that uses every limit to the full is accepted: the JSON value
// budget derived from the limits never cuts in first.
func TestDecodeAtEveryLimit(t *testing.T) {
	lim := Limits{MaxHeaders: 3, MaxHeaderValues: 4, MaxHeaderBytes: 1 << 20, MaxProperties: 5}
	var b strings.Builder
	b.WriteString(`{"region":"r","uri":"u","method":"GET","headers":{`)
	for h := range lim.MaxHeaders {
		if h > 0 {
			b.WriteString(",")
		}
		b.WriteString(`"h` + strings.Repeat("x", h) + `":[` + strings.TrimSuffix(strings.Repeat(`"v",`, lim.MaxHeaderValues), ",") + `]`)
	}
	b.WriteString(`},"properties":{"a":"","b":"","c":"","d":"","e":""},"unknown":[` + strings.Repeat("0,", maxSpareValues-20) + `0]}`)
	req, err := decode(t, b.String(), lim)
	if err != nil {
		t.Fatal(err)
	}
	if len(req.Headers) != 3 || len(req.Headers[2].Values) != 4 || len(req.Properties) != 5 {
		t.Errorf("Decode = %+v", req)
	}
}
