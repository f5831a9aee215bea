package s3req

import (
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
)

// Addressing says where an endpoint expects the bucket name.
type Addressing string

const (
	// AddressingAuto accepts both forms where they are unambiguous: for
	// AWS always; for a custom endpoint path-style at Host and, only when
	// VirtualHostDomain names the server's virtual-host domain,
	// "<bucket>." + VirtualHostDomain as virtual-hosted.
	AddressingAuto    Addressing = "auto"
	AddressingPath    Addressing = "path"
	AddressingVirtual Addressing = "virtual"
)

// Endpoint is one S3 service countersign is allowed to sign for. A signer
// that signs for any host is a credential oracle, so everything not matching
// a configured endpoint is refused.
type Endpoint struct {
	// Name identifies the endpoint in logs and audit records.
	Name string `yaml:"name"`
	// Scheme is "https" (default) or "http".
	Scheme string `yaml:"scheme"`
	// Host is the service host without bucket, e.g. "s3.example.com" or
	// "127.0.0.1". For AWS set AWS instead.
	Host string `yaml:"host"`
	// Port is the TCP port; 0 means the scheme's default.
	Port int `yaml:"port"`
	// Addressing is "auto" (default), "path" or "virtual".
	Addressing Addressing `yaml:"addressing"`
	// VirtualHostDomain is the domain under which the S3 server itself
	// serves virtual-hosted buckets ("<bucket>.<domain>"): MinIO's
	// MINIO_DOMAIN, Ceph's rgw_dns_name, versitygw's --virtual-domain. It
	// must be set for a custom endpoint to accept virtual-hosted requests,
	// because a server without virtual hosting reads
	// "lake.host/other/secret" as bucket "other": countersign can only
	// know which bucket the server serves if it is told. Empty: the
	// endpoint is path-style. Not used with AWS.
	VirtualHostDomain string `yaml:"virtual_host_domain"`
	// Regions lists the regions a request may name. Required.
	Regions []string `yaml:"regions"`
	// AWS matches Amazon S3's own host names for the configured regions:
	// s3.amazonaws.com (us-east-1 only), s3.<region>.amazonaws.com and
	// s3.dualstack.<region>.amazonaws.com, each path-style or with a
	// "<bucket>." prefix. Host must then be empty.
	AWS bool `yaml:"aws"`
}

// Validate checks the endpoint configuration and fills defaults. Errors name
// the field.
func (e *Endpoint) Validate() error {
	if e.Scheme == "" {
		e.Scheme = "https"
	}
	if e.Scheme != "https" && e.Scheme != "http" {
		return fmt.Errorf("endpoint %q: scheme must be \"https\" or \"http\", got %q", e.Name, e.Scheme)
	}
	if e.Addressing == "" {
		e.Addressing = AddressingAuto
	}
	switch e.Addressing {
	case AddressingAuto, AddressingPath, AddressingVirtual:
	default:
		return fmt.Errorf("endpoint %q: addressing must be auto, path or virtual, got %q", e.Name, e.Addressing)
	}
	if len(e.Regions) == 0 {
		return fmt.Errorf("endpoint %q: regions must list at least one region", e.Name)
	}
	for _, r := range e.Regions {
		if !validRegion(r) {
			return fmt.Errorf("endpoint %q: region %q is not a valid region name", e.Name, r)
		}
	}
	if e.Port < 0 || e.Port > 65535 {
		return fmt.Errorf("endpoint %q: port %d out of range", e.Name, e.Port)
	}
	if e.AWS {
		if e.Host != "" {
			return fmt.Errorf("endpoint %q: host must be empty when aws is true", e.Name)
		}
		if e.VirtualHostDomain != "" {
			return fmt.Errorf("endpoint %q: virtual_host_domain must be empty when aws is true (Amazon S3's virtual-host names are built in)", e.Name)
		}
		return nil
	}
	if e.Host == "" {
		return fmt.Errorf("endpoint %q: host is required (or set aws: true)", e.Name)
	}
	if e.Host != strings.ToLower(e.Host) || strings.HasSuffix(e.Host, ".") || strings.ContainsAny(e.Host, "/:@[] ") {
		if _, err := netip.ParseAddr(strings.Trim(e.Host, "[]")); err != nil {
			return fmt.Errorf("endpoint %q: host %q must be a lower-case host name or IP address without port", e.Name, e.Host)
		}
	}
	switch d := e.VirtualHostDomain; {
	case d == "" && e.Addressing == AddressingVirtual:
		return fmt.Errorf("endpoint %q: addressing: virtual needs virtual_host_domain, the domain the S3 server serves \"<bucket>.\" names under "+
			"(MinIO's MINIO_DOMAIN, Ceph's rgw_dns_name, versitygw's --virtual-domain); without it use addressing: path", e.Name)
	case d == "":
	case e.Addressing == AddressingPath:
		return fmt.Errorf("endpoint %q: virtual_host_domain %q contradicts addressing: path (use auto or virtual, or drop virtual_host_domain)", e.Name, d)
	case isIPAddr(strings.Trim(d, "[]")):
		return fmt.Errorf("endpoint %q: virtual_host_domain %q must be a host name, not an IP address", e.Name, d)
	case checkHostName(d) != nil:
		return fmt.Errorf("endpoint %q: virtual_host_domain %q must be a lower-case host name without port or trailing dot", e.Name, d)
	}
	return nil
}

func (e *Endpoint) allowsRegion(region string) bool {
	return slices.Contains(e.Regions, region)
}

// effectivePort is the port a URI without an explicit port would use.
func (e *Endpoint) effectivePort() int {
	if e.Port != 0 {
		return e.Port
	}
	if e.Scheme == "http" {
		return 80
	}
	return 443
}

// hostMatch is the result of matching a URI host against the endpoints.
type hostMatch struct {
	endpoint *Endpoint
	bucket   string // non-empty for virtual-hosted addressing
	virtual  bool
}

// match finds the endpoint serving host (lower-case, without port) for the
// given scheme, port and region. region is checked here because AWS host
// names carry their own region.
func matchEndpoint(endpoints []Endpoint, scheme, host string, port int, region string) (hostMatch, error) {
	var regionErr error
	for i := range endpoints {
		e := &endpoints[i]
		if e.Scheme != scheme || e.effectivePort() != port {
			continue
		}
		m, ok := e.matchHost(host, region)
		if !ok {
			continue
		}
		if !e.allowsRegion(region) {
			regionErr = forbidden("region %q is not allowed for endpoint %q", region, e.Name)
			continue
		}
		return m, nil
	}
	if regionErr != nil {
		return hostMatch{}, regionErr
	}
	if r, ok := awsHostRegion(host); ok && r != region {
		for i := range endpoints {
			if e := &endpoints[i]; e.AWS && e.Scheme == scheme && e.effectivePort() == port {
				return hostMatch{}, forbidden("host %q is S3's endpoint in region %q, but the request's region is %q: they must agree", truncate(host), r, truncate(region))
			}
		}
	}
	if err := unservedVirtualHost(endpoints, scheme, host, port); err != nil {
		return hostMatch{}, err
	}
	return hostMatch{}, forbidden("host %q (scheme %s, port %d) is not a configured S3 endpoint", truncate(host), scheme, port)
}

func (e *Endpoint) matchHost(host, region string) (hostMatch, bool) {
	if e.AWS {
		return matchAWSHost(e, host, region)
	}
	if host == e.Host && e.Addressing != AddressingVirtual {
		return hostMatch{endpoint: e}, true
	}
	// Virtual-hosted only under the domain the server is configured to
	// serve buckets under (Validate keeps it empty for addressing: path).
	if b, ok := bucketLabel(host, e.VirtualHostDomain); ok {
		return hostMatch{endpoint: e, bucket: b, virtual: true}, true
	}
	return hostMatch{}, false
}

// bucketLabel returns b when host is "b." + domain.
func bucketLabel(host, domain string) (string, bool) {
	if domain == "" || len(host) <= len(domain)+1 || !strings.HasSuffix(host, domain) || host[len(host)-len(domain)-1] != '.' {
		return "", false
	}
	return host[:len(host)-len(domain)-1], true
}

// unservedVirtualHost explains a refusal of "<bucket>.<host>" at a
// path-style custom endpoint, the form that used to be read as
// virtual-hosted although the server may serve another bucket for it.
func unservedVirtualHost(endpoints []Endpoint, scheme, host string, port int) error {
	for i := range endpoints {
		e := &endpoints[i]
		if e.AWS || e.Scheme != scheme || e.effectivePort() != port || isIPAddr(strings.Trim(e.Host, "[]")) {
			continue
		}
		if b, ok := bucketLabel(host, e.Host); ok {
			return forbidden("host %q is a virtual-hosted name under endpoint %q, which is path-style: countersign cannot know that the server serves bucket %q there "+
				"(a server without virtual hosting serves the path's first segment); send path-style requests, or set the endpoint's virtual_host_domain to the server's virtual-host domain",
				truncate(host), e.Name, truncate(b))
		}
	}
	return nil
}

// matchAWSHost recognizes Amazon S3's regional and legacy global endpoints.
// The region in the host must equal the request's region: a signature for
// region A is useless at region B, and a mismatch means a confused client.
func matchAWSHost(e *Endpoint, host, region string) (hostMatch, bool) {
	const suffix = ".amazonaws.com"
	if !strings.HasSuffix(host, suffix) {
		return hostMatch{}, false
	}
	rest := host[:len(host)-len(suffix)]
	candidates := [...]string{"s3." + region, "s3.dualstack." + region, "s3"}
	for i, svc := range candidates {
		if i == 2 && region != "us-east-1" {
			continue // the global endpoint signs for us-east-1 only
		}
		if rest == svc {
			return hostMatch{endpoint: e}, e.Addressing != AddressingVirtual
		}
		if len(rest) > len(svc)+1 && strings.HasSuffix(rest, svc) && rest[len(rest)-len(svc)-1] == '.' {
			return hostMatch{endpoint: e, bucket: rest[:len(rest)-len(svc)-1], virtual: true}, e.Addressing != AddressingPath
		}
	}
	return hostMatch{}, false
}

// awsHostRegion is the region of an S3 host name on amazonaws.com, path
// or virtual style ("s3.R", "s3.dualstack.R", the global "s3" for
// us-east-1), for the message of a host whose region is not the
// request's.
func awsHostRegion(host string) (string, bool) {
	rest, ok := strings.CutSuffix(host, ".amazonaws.com")
	if !ok {
		return "", false
	}
	labels := strings.Split(rest, ".")
	for j := len(labels) - 1; j >= 0; j-- {
		if labels[j] != "s3" {
			continue
		}
		switch tail := labels[j+1:]; {
		case len(tail) == 0:
			return "us-east-1", true
		case len(tail) == 1 && validRegion(tail[0]):
			return tail[0], true
		case len(tail) == 2 && tail[0] == "dualstack" && validRegion(tail[1]):
			return tail[1], true
		}
		return "", false
	}
	return "", false
}

func validRegion(r string) bool {
	if r == "" || len(r) > 64 {
		return false
	}
	for i := 0; i < len(r); i++ {
		c := r[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// parseAuthority splits "host[:port]" and validates it strictly: lower-case
// host names only, no trailing dot, numeric port without leading zeros.
// It returns the host without brackets for IPv6 and the port (or defPort).
func parseAuthority(auth string, defPort int) (host string, port int, err error) {
	if auth == "" {
		return "", 0, malformed("uri has no host")
	}
	if strings.ContainsRune(auth, '@') {
		return "", 0, malformed("uri must not contain user information")
	}
	hostPart, portPart := auth, ""
	if auth[0] == '[' {
		end := strings.IndexByte(auth, ']')
		if end < 0 {
			return "", 0, malformed("uri host has an unterminated IPv6 literal")
		}
		hostPart = auth[:end+1]
		switch rest := auth[end+1:]; {
		case rest == "":
		case rest[0] == ':':
			portPart = rest[1:]
			if portPart == "" {
				return "", 0, malformed("uri port is empty")
			}
		default:
			return "", 0, malformed("uri host %q is malformed", truncate(auth))
		}
		addr, perr := netip.ParseAddr(hostPart[1 : len(hostPart)-1])
		if perr != nil || !addr.Is6() || addr.Zone() != "" {
			return "", 0, malformed("uri host %q is not a valid IPv6 literal", truncate(hostPart))
		}
		hostPart = "[" + addr.String() + "]"
		if hostPart != auth[:end+1] {
			return "", 0, malformed("uri IPv6 host %q is not in canonical form", truncate(auth[:end+1]))
		}
	} else {
		if i := strings.IndexByte(auth, ':'); i >= 0 {
			hostPart, portPart = auth[:i], auth[i+1:]
			if portPart == "" {
				return "", 0, malformed("uri port is empty")
			}
		}
		if err := checkHostName(hostPart); err != nil {
			return "", 0, err
		}
	}
	port = defPort
	if portPart != "" {
		if portPart[0] == '0' || len(portPart) > 5 {
			return "", 0, malformed("uri port %q is invalid", truncate(portPart))
		}
		p, perr := strconv.Atoi(portPart)
		if perr != nil || p < 1 || p > 65535 {
			return "", 0, malformed("uri port %q is invalid", truncate(portPart))
		}
		port = p
	}
	return hostPart, port, nil
}

func checkHostName(h string) error {
	if h == "" {
		return malformed("uri has no host")
	}
	if len(h) > 253 {
		return malformed("uri host is longer than 253 characters")
	}
	if h[len(h)-1] == '.' {
		return malformed("uri host %q must not end with a dot", truncate(h))
	}
	prevDot := true
	for i := 0; i < len(h); i++ {
		c := h[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '-', c == '_':
			prevDot = false
		case c == '.':
			if prevDot {
				return malformed("uri host %q has an empty label", truncate(h))
			}
			prevDot = true
		case c >= 'A' && c <= 'Z':
			return malformed("uri host %q must be lower-case", truncate(h))
		default:
			return malformed("uri host %q contains an invalid character", truncate(h))
		}
	}
	return nil
}

// isIPAddr is netip.ParseAddr(s) succeeding, without its error allocation
// for the host names and bucket names it is asked about on every request:
// an IPv4 address has only digits and dots, an IPv6 address has a colon.
func isIPAddr(s string) bool {
	if strings.IndexByte(s, ':') < 0 {
		for i := 0; i < len(s); i++ {
			if c := s[i]; c != '.' && (c < '0' || c > '9') {
				return false
			}
		}
	}
	_, err := netip.ParseAddr(s)
	return err == nil
}
