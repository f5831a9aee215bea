package s3req

import (
	"strings"
	"testing"
)

// TestCustomEndpointAutoIsPathStyle is the regression test for
// "addressing: auto" on a custom endpoint (SECURITY.md): without a
// virtual-host domain the server's reading of "lake.s3host/other/secret"
// is unknown (a server without virtual hosting serves bucket "other"), so
// countersign decides it as path-style or not at all, never as bucket
// "lake".
func TestCustomEndpointAutoIsPathStyle(t *testing.T) {
	c, err := New(Options{Endpoints: []Endpoint{
		{Name: "plain", Scheme: "http", Host: "s3host", Port: 9000, Regions: []string{"us-east-1"}},
		{Name: "hosted", Scheme: "http", Host: "s3.example", Port: 9000, VirtualHostDomain: "s3.example", Regions: []string{"us-east-1"}},
		{Name: "aws", AWS: true, Regions: []string{"us-east-1"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	// Path-style at the custom host: the first segment is the bucket.
	r, err := c.Classify(req("GET", "http://s3host:9000/other/secret", nil))
	if err != nil || r.Bucket != "other" || r.Key != "secret" {
		t.Fatalf("path-style: %+v %v", r, err)
	}
	// "<bucket>." in front of a host without a virtual-host domain: refused,
	// naming the setting.
	r, err = c.Classify(req("GET", "http://lake.s3host:9000/other/secret", nil))
	if err == nil {
		t.Fatalf("lake.s3host/other/secret decided as bucket %q key %q; the server may serve bucket \"other\"", r.Bucket, r.Key)
	}
	if ce := err.(*Error); ce.Status != 403 || !strings.Contains(ce.Msg, "virtual_host_domain") || !strings.Contains(ce.Msg, `"plain"`) {
		t.Fatalf("refusal %v does not say what to configure", err)
	}
	// With the server's virtual-host domain configured both forms are
	// unambiguous.
	if r, err := c.Classify(req("GET", "http://lake.s3.example:9000/other/secret", nil)); err != nil || r.Bucket != "lake" || r.Key != "other/secret" {
		t.Fatalf("virtual-hosted under virtual_host_domain: %+v %v", r, err)
	}
	if r, err := c.Classify(req("GET", "http://s3.example:9000/other/secret", nil)); err != nil || r.Bucket != "other" {
		t.Fatalf("path-style beside virtual_host_domain: %+v %v", r, err)
	}
	// AWS stays auto: Amazon S3 always serves virtual-hosted names.
	if r, err := c.Classify(req("GET", "https://lake.s3.us-east-1.amazonaws.com/other/secret", nil)); err != nil || r.Bucket != "lake" {
		t.Fatalf("AWS virtual-hosted: %+v %v", r, err)
	}
}

func TestVirtualHostDomainValidation(t *testing.T) {
	for _, tc := range []struct {
		ep   Endpoint
		want string // "" means valid
	}{
		{Endpoint{Host: "s3.example", Addressing: AddressingVirtual}, "virtual_host_domain"},
		{Endpoint{Host: "s3.example", Addressing: AddressingVirtual, VirtualHostDomain: "s3.example"}, ""},
		{Endpoint{Host: "10.0.0.5", VirtualHostDomain: "s3.example"}, ""},
		{Endpoint{Host: "s3.example", Addressing: AddressingPath, VirtualHostDomain: "s3.example"}, "contradicts addressing: path"},
		{Endpoint{Host: "s3.example", VirtualHostDomain: "10.0.0.5"}, "not an IP address"},
		{Endpoint{Host: "s3.example", VirtualHostDomain: "S3.Example"}, "lower-case host name"},
		{Endpoint{Host: "s3.example", VirtualHostDomain: "s3.example:9000"}, "lower-case host name"},
		{Endpoint{Host: "s3.example", VirtualHostDomain: "s3.example."}, "lower-case host name"},
		{Endpoint{AWS: true, VirtualHostDomain: "s3.example"}, "aws is true"},
		{Endpoint{Host: "s3.example"}, ""},
	} {
		tc.ep.Name, tc.ep.Regions = "e", []string{"us-east-1"}
		err := tc.ep.Validate()
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%+v: error %v, want %q", tc.ep, err, tc.want)
		}
	}
}
