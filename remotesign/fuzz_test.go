package remotesign

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/countersign/countersign/internal/jsonstr"
)

// FuzzDecode feeds arbitrary bytes to Decode: it must never panic, must
// fail only with a bounded *DecodeError, and whatever it accepts must keep
// Request's promises and read exactly as encoding/json reads it.
func FuzzDecode(f *testing.F) {
	for _, name := range []string{"java_get.json", "java_put.json"} {
		f.Add([]byte(readFixture(f, name)))
	}
	for _, s := range []string{
		minimal,
		withMember(`"properties":{"a":"b"},"body":"<Delete/>","provider":null,"x":[1,{"y":null}]`),
		`{"region":"r","uri":"u","method":"GET","headers":{"A":["1"],"a":["2"]}}`,
		`{"region":"r","uri":"u","method":"GET","headers":{"A":["x\r\nB: y"]}}`,
		`{"region":"r","uri":"u","method":"GET","headers":{"A":["\ud83d\ude00"],"B":["\ud800"]}}`,
		"{\"region\":\"\xff\",\"uri\":\"u\",\"method\":\"GET\",\"headers\":{}}",
		`{"region":"r","uri":"u","method":"get","headers":{},"provider":"gcs"}`,
		`{"re\u0067ion":"r","region":"r"}`,
		`{"x":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]`,
		`{"x":-0.5e-7,"y":1E+2,"z":[true,false,null]}`,
		`{"region":"r",`,
		`[]`,
		``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		in := bytes.Clone(data)
		var d Decoder
		req, err := d.Decode(data, Limits{})
		if !bytes.Equal(in, data) {
			t.Fatal("Decode modified its input")
		}
		if err != nil {
			var de *DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("error %T is not a *DecodeError: %v", err, err)
			}
			if strings.Contains(de.Msg, "parser disagreement") {
				t.Fatalf("checkSyntax accepted what fastjson rejects: %q", data)
			}
			checkErrorText(t, de)
			return
		}
		checkInvariants(t, req)
		checkAgainstEncodingJSON(t, data, req)

		// Decoding again with a used Decoder gives the same result.
		again, err := d.Decode(data, Limits{})
		if err != nil || !reflect.DeepEqual(again, req) {
			t.Fatalf("second Decode differs: %v\n%#v\n%#v", err, again, req)
		}
	})
}

// checkInvariants asserts what Decode promises about every Request.
func checkInvariants(t *testing.T, r *Request) {
	t.Helper()
	switch r.Method {
	case "PUT", "GET", "HEAD", "POST", "DELETE", "PATCH", "OPTIONS":
	default:
		t.Fatalf("method %q", r.Method)
	}
	if r.Provider != "s3" {
		t.Fatalf("provider %q", r.Provider)
	}
	for _, s := range []string{r.Region, r.URI} {
		if s == "" || !utf8.ValidString(s) || hasControl([]byte(s), false) {
			t.Fatalf("bad region or uri %q", s)
		}
	}
	if !utf8.ValidString(r.Body) || (!r.HasBody && r.Body != "") {
		t.Fatalf("bad body %q (HasBody %v)", r.Body, r.HasBody)
	}
	if len(r.Headers) > DefaultMaxHeaders {
		t.Fatalf("%d headers", len(r.Headers))
	}
	total := 0
	for i, h := range r.Headers {
		if _, ok := tokenFold([]byte(h.Name)); !ok {
			t.Fatalf("header name %q is not a token", h.Name)
		}
		for _, o := range r.Headers[:i] {
			if strings.EqualFold(o.Name, h.Name) {
				t.Fatalf("headers %q and %q collide", o.Name, h.Name)
			}
		}
		if len(h.Values) == 0 || len(h.Values) > DefaultMaxHeaderValues {
			t.Fatalf("header %q has %d values", h.Name, len(h.Values))
		}
		total += len(h.Name)
		for _, v := range h.Values {
			total += len(v)
			if strings.ContainsAny(v, "\r\n\x00") || hasControl([]byte(v), true) || !utf8.ValidString(v) {
				t.Fatalf("header %q value %q", h.Name, v)
			}
		}
	}
	if total > DefaultMaxHeaderBytes {
		t.Fatalf("%d header bytes", total)
	}
	for k, v := range r.Properties {
		if !utf8.ValidString(k) || !utf8.ValidString(v) {
			t.Fatalf("property %q=%q", k, v)
		}
	}
	if r.Properties != nil && len(r.Properties) == 0 {
		t.Fatal("empty non-nil Properties")
	}
}

// checkAgainstEncodingJSON decodes the same bytes with encoding/json and
// requires the same reading: an accepted request must be valid JSON whose
// members every other parser interprets exactly as Decode did.
func checkAgainstEncodingJSON(t *testing.T, data []byte, r *Request) {
	t.Helper()
	if !json.Valid(data) {
		t.Fatalf("Decode accepted invalid JSON %q", data)
	}
	var top map[string]json.RawMessage // exact member names, unlike a struct
	if err := json.Unmarshal(data, &top); err != nil {
		t.Fatalf("encoding/json: %v", err)
	}
	str := func(name string) (string, bool) {
		raw, ok := top[name]
		if !ok || string(raw) == "null" {
			return "", false
		}
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			t.Fatalf("encoding/json %s: %v", name, err)
		}
		return s, true
	}
	for name, got := range map[string]string{"region": r.Region, "uri": r.URI, "method": r.Method} {
		if want, _ := str(name); want != got {
			t.Fatalf("%s: Decode read %q, encoding/json %q", name, got, want)
		}
	}
	if body, ok := str("body"); ok != r.HasBody || body != r.Body {
		t.Fatalf("body: Decode read %q (%v), encoding/json %q (%v)", r.Body, r.HasBody, body, ok)
	}
	var headers map[string][]string
	if err := json.Unmarshal(top["headers"], &headers); err != nil {
		t.Fatalf("encoding/json headers: %v", err)
	}
	if len(headers) != len(r.Headers) {
		t.Fatalf("headers: Decode read %d, encoding/json %d", len(r.Headers), len(headers))
	}
	for _, h := range r.Headers {
		if !reflect.DeepEqual(headers[h.Name], h.Values) {
			t.Fatalf("header %q: Decode read %q, encoding/json %q", h.Name, h.Values, headers[h.Name])
		}
	}
	var props map[string]string
	if raw, ok := top["properties"]; ok {
		if err := json.Unmarshal(raw, &props); err != nil {
			t.Fatalf("encoding/json properties: %v", err)
		}
	}
	if len(props) != len(r.Properties) {
		t.Fatalf("properties: Decode read %q, encoding/json %q", r.Properties, props)
	}
	for k, v := range props {
		if got, ok := r.Properties[k]; !ok || got != v {
			t.Fatalf("property %q: Decode read %q, encoding/json %q", k, got, v)
		}
	}
}

// FuzzDecodeMembers reaches the member validation that random bytes rarely
// get to: it encodes arbitrary member values with jsonstr.Append (so the
// body is always valid JSON) and compares Decode's verdict with an
// independent statement of the rules.
func FuzzDecodeMembers(f *testing.F) {
	f.Add("us-east-1", "https://b.s3.amazonaws.com/k", "GET", "Range", "bytes=0-1", "User-Agent", "a\tb", "", byte(0))
	f.Add("r", "u", "PUT", "Content-Type", "x\r\ny", "content-type", "z", "<Delete/>", byte(1))
	f.Add("", "u\x00", "get", "a b", "\xff", "Ä", "\u2028", "\xfe", byte(2))
	f.Fuzz(func(t *testing.T, region, uri, method, name1, val1, name2, val2, body string, mode byte) {
		var provider string
		switch mode % 4 {
		case 1:
			provider = `"s3"`
		case 2:
			provider = "null"
		case 3:
			provider = `"gcs"`
		}
		b := []byte(`{"region":`)
		b = jsonstr.Append(b, region)
		b = append(b, `,"uri":`...)
		b = jsonstr.Append(b, uri)
		b = append(b, `,"method":`...)
		b = jsonstr.Append(b, method)
		// An unknown member holding the same strings must change nothing.
		b = AppendResult(append(b, `,"x":`...), "", Headers{{Name: name1, Values: []string{val1}}, {Name: name2, Values: []string{val1, val2}}})
		b = append(b, `,"headers":{`...)
		b = jsonstr.Append(b, name1)
		b = append(b, ":["...)
		b = jsonstr.Append(b, val1)
		b = append(b, "],"...)
		b = jsonstr.Append(b, name2)
		b = append(b, ":["...)
		b = jsonstr.Append(b, val1)
		b = append(b, ","...)
		b = jsonstr.Append(b, val2)
		b = append(b, "]}"...)
		if body != "" {
			b = jsonstr.Append(append(b, `,"body":`...), body)
		}
		if provider != "" {
			b = append(append(b, `,"provider":`...), provider...)
		}
		b = append(b, '}')

		// What the client meant, as a JSON parser reads it back.
		region, uri, method = wantDecoded(region), wantDecoded(uri), wantDecoded(method)
		name1, name2 = wantDecoded(name1), wantDecoded(name2)
		val1, val2, body = wantDecoded(val1), wantDecoded(val2), wantDecoded(body)

		text := func(s string) bool { return s != "" && !hasControl([]byte(s), false) }
		token := func(s string) bool { _, ok := tokenFold([]byte(s)); return ok }
		value := func(s string) bool { return !hasControl([]byte(s), true) }
		methodOK := false
		for _, m := range strings.Split("PUT GET HEAD POST DELETE PATCH OPTIONS", " ") {
			methodOK = methodOK || method == m
		}
		wantOK := text(region) && text(uri) && methodOK &&
			token(name1) && token(name2) && !strings.EqualFold(name1, name2) &&
			value(val1) && value(val2) &&
			len(name1)+len(name2)+2*len(val1)+len(val2) <= DefaultMaxHeaderBytes &&
			mode%4 != 3

		var d Decoder
		req, err := d.Decode(b, Limits{})
		if (err == nil) != wantOK {
			t.Fatalf("Decode(%s): err = %v, want success %v", b, err, wantOK)
		}
		if err != nil {
			var de *DecodeError
			if !errors.As(err, &de) || de.Field == "" {
				t.Fatalf("error does not name a field: %v", err)
			}
			checkErrorText(t, de)
			return
		}
		checkInvariants(t, req)
		want := &Request{Region: region, URI: uri, Method: method, Provider: "s3",
			Headers: Headers{{Name: name1, Values: []string{val1}}, {Name: name2, Values: []string{val1, val2}}},
			Body:    body, HasBody: body != ""}
		if !reflect.DeepEqual(req, want) {
			t.Fatalf("Decode(%s)\n got %#v\nwant %#v", b, req, want)
		}
	})
}
