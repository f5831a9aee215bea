package auth

import (
	"context"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"math/big"
	"net/url"
	"strings"
	"testing"
	"time"
)

// testCerts makes a CA and a client certificate signed by it, and returns
// the client chain as crypto/tls would verify it.
func testCerts(t *testing.T, notBefore, notAfter time.Time) []*x509.Certificate {
	t.Helper()
	return testCertsSubject(t, notBefore, notAfter, pkix.Name{CommonName: "spark-etl", Organization: []string{"data"}})
}

// testCertsSubject is testCerts with the client certificate's subject.
func testCertsSubject(t *testing.T, notBefore, notAfter time.Time, subject pkix.Name) []*x509.Certificate {
	t.Helper()
	caKey := mustEC()
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "Test CA", Organization: []string{"countersign"}},
		NotBefore:             notBefore.Add(-time.Hour),
		NotAfter:              notAfter.Add(time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	leafKey := mustEC()
	spiffe, _ := url.Parse("spiffe://example.org/ns/etl/sa/spark")
	leafTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(0xabc),
		Subject:      subject,
		URIs:         []*url.URL{spiffe},
		DNSNames:     []string{"spark.etl.svc", "spark"},
		NotBefore:    notBefore,
		NotAfter:     notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	leafDER, err := x509.CreateCertificate(rand.Reader, leafTmpl, ca, &leafKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	leaf, _ := x509.ParseCertificate(leafDER)
	roots := x509.NewCertPool()
	roots.AddCert(ca)
	chains, err := leaf.Verify(x509.VerifyOptions{Roots: roots, CurrentTime: notBefore.Add(time.Minute),
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	if err != nil {
		t.Fatal(err)
	}
	return chains[0]
}

func TestMTLS(t *testing.T) {
	c := newClock(t0)
	chain := testCerts(t, t0.Add(-time.Hour), t0.Add(time.Hour))
	ctx := context.Background()

	for mode, want := range map[string]string{
		MTLSSubjectCN: "spark-etl",
		MTLSSANURI:    "spiffe://example.org/ns/etl/sa/spark",
		MTLSSANDNS:    "spark.etl.svc",
	} {
		t.Run(mode, func(t *testing.T) {
			a := newAuth(t, Config{MTLSPrincipal: mode}, c)
			id, err := a.Authenticate(ctx, nil, chain)
			if err != nil {
				t.Fatal(err)
			}
			p := id.Principal
			if p.ID != want || id.Method != MethodMTLS {
				t.Fatalf("id %q method %q, want %q", p.ID, id.Method, want)
			}
			if p.Issuer != "CN=Test CA,O=countersign" || p.Groups == nil {
				t.Fatalf("issuer %q groups %#v", p.Issuer, p.Groups)
			}
			if p.Claims["x509_subject"] != "CN=spark-etl,O=data" || p.Claims["x509_serial"] != "abc" {
				t.Fatalf("claims %v", p.Claims)
			}
			if !id.ExpiresAt.Equal(chain[0].NotAfter) || id.TokenHash != ([32]byte{}) {
				t.Fatal("expiry or token hash")
			}
			// mTLS only: an Authorization header (Iceberg forwards the
			// catalog token) is ignored, the certificate decides.
			if id, err := a.Authenticate(ctx, []byte("Bearer whatever"), chain); err != nil || id.Principal.ID != want {
				t.Fatalf("with a header: %v", err)
			}
			expectReason(t, a, nil, ReasonMissingToken)
		})
	}

	t.Run("missing SAN", func(t *testing.T) {
		cert := *chain[0]
		cert.URIs = nil
		a := newAuth(t, Config{MTLSPrincipal: MTLSSANURI}, c)
		if _, err := a.Authenticate(ctx, nil, []*x509.Certificate{&cert}); err == nil {
			t.Fatal("certificate without URI SAN accepted")
		} else if r, _ := ReasonOf(err); r != ReasonMissingPrincipal {
			t.Fatalf("reason %v", r)
		}
	})

	t.Run("expired and not yet valid", func(t *testing.T) {
		a := newAuth(t, Config{MTLSPrincipal: MTLSSubjectCN}, c)
		for _, tc := range []struct {
			d    time.Duration
			want Reason
		}{{2 * time.Hour, ReasonExpired}, {-2 * time.Hour, ReasonNotYetValid}} {
			cl := newClock(t0.Add(tc.d))
			a.now = cl.Now
			_, err := a.Authenticate(ctx, nil, chain)
			if r, _ := ReasonOf(err); r != tc.want {
				t.Fatalf("%v: reason %v, want %v", tc.d, r, tc.want)
			}
		}
	})

	t.Run("several or blank common names", func(t *testing.T) {
		a := newAuth(t, Config{MTLSPrincipal: MTLSSubjectCN}, c)
		oidCN := []int{2, 5, 4, 3}
		for name, subject := range map[string]pkix.Name{
			"two CNs": {ExtraNames: []pkix.AttributeTypeAndValue{
				{Type: oidCN, Value: "carol"}, {Type: []int{2, 5, 4, 11}, Value: "x"}, {Type: oidCN, Value: "admin"}}},
			"blank CN":          {CommonName: " "},
			"CN with a newline": {CommonName: "carol\nadmin"},
		} {
			chain := testCertsSubject(t, t0.Add(-time.Hour), t0.Add(time.Hour), subject)
			if _, err := a.Authenticate(ctx, nil, chain); err == nil {
				t.Fatalf("%s: accepted", name)
			} else if r, _ := ReasonOf(err); r != ReasonMissingPrincipal {
				t.Fatalf("%s: reason %v", name, r)
			}
		}
		// One CN among other attributes is the principal.
		chain := testCertsSubject(t, t0.Add(-time.Hour), t0.Add(time.Hour), pkix.Name{CommonName: "carol", OrganizationalUnit: []string{"x"}})
		if id, err := a.Authenticate(ctx, nil, chain); err != nil || id.Principal.ID != "carol" {
			t.Fatalf("one CN: %v %v", id, err)
		}
	})

	t.Run("token and an expired certificate", func(t *testing.T) {
		srv := newJWKSServer(t, defaultJWKS())
		cfg := jwksConfig(srv.URL)
		cfg.MTLSPrincipal = MTLSSubjectCN
		a := newAuth(t, cfg, c)
		// A keep-alive connection outlives its certificate: the token is
		// still valid, the certificate's subject may no longer reach the
		// policy.
		short := testCerts(t, t0.Add(-time.Hour), t0.Add(time.Minute))
		tok := bearer(mint(hdr("RS256", "rsa1"), claimsAt(t0), rs256(testRSA())))
		if _, err := a.Authenticate(ctx, tok, short); err != nil {
			t.Fatal(err)
		}
		later := newClock(t0.Add(2 * time.Minute))
		a.now = later.Now
		expectReasonCert(t, a, tok, short, ReasonExpired)
		early := newClock(t0.Add(-2 * time.Hour))
		a.now = early.Now
		expectReasonCert(t, a, bearer(mint(hdr("RS256", "rsa1"), claimsAt(early.Now()), rs256(testRSA()))), short, ReasonNotYetValid)
		// Without the certificate the token alone still authenticates.
		a.now = later.Now
		if _, err := a.Authenticate(ctx, tok, nil); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("token and certificate", func(t *testing.T) {
		srv := newJWKSServer(t, defaultJWKS())
		cfg := jwksConfig(srv.URL)
		cfg.MTLSPrincipal = MTLSSubjectCN
		a := newAuth(t, cfg, c)
		// A token that claims any x509_* name of its own is refused with
		// mTLS on: those names are reserved for the verified certificate.
		for _, name := range []string{"x509_subject", "x509_san_uri", "x509_san_dns", "x509_issuer", "x509_serial", "x509_future", "X509_SAN_URI"} {
			forged := mint(hdr("RS256", "rsa1"), with(claimsAt(c.Now()), name, "spiffe://prod/admin"), rs256(testRSA()))
			for _, certs := range [][]*x509.Certificate{chain, nil} {
				_, err := a.Authenticate(ctx, bearer(forged), certs)
				var ae *Error
				if !errors.As(err, &ae) || ae.Reason != ReasonMalformedToken || !strings.Contains(ae.Msg, "reserved for the client certificate") {
					t.Fatalf("token claiming %s (certificate %v): %v, want a malformed_token refusal naming the reservation", name, certs != nil, err)
				}
				if isCertClaim(name) != strings.Contains(ae.Msg, name) {
					t.Errorf("message %q: names the claim only when it is one of countersign's", ae.Msg)
				}
			}
		}
		tok := mint(hdr("RS256", "rsa1"), claimsAt(c.Now()), rs256(testRSA()))
		id, err := a.Authenticate(ctx, bearer(tok), chain)
		if err != nil {
			t.Fatal(err)
		}
		if id.Principal.ID != "alice" || id.Method != MethodBearer {
			t.Fatalf("token did not win: %q %q", id.Principal.ID, id.Method)
		}
		if id.Principal.Claims["x509_subject"] != "CN=spark-etl,O=data" {
			t.Fatalf("x509_subject %v", id.Principal.Claims["x509_subject"])
		}
		// The copy's claims differ from the cached token's: not its Key.
		checkKey(t, &id.Principal, false)
		// The cached identity is not modified by the per-request copy.
		plain, err := a.Authenticate(ctx, bearer(tok), nil)
		if err != nil {
			t.Fatal(err)
		}
		if v, ok := plain.Principal.Claims["x509_subject"]; ok {
			t.Fatalf("x509_subject %v without a certificate", v)
		}
		checkKey(t, &plain.Principal, true)
		// Without a header, the certificate is the principal.
		id, err = a.Authenticate(ctx, nil, chain)
		if err != nil || id.Principal.ID != "spark-etl" {
			t.Fatalf("certificate fallback: %v", err)
		}
		// A non-Bearer header is refused, not replaced by the certificate.
		expectReasonCert(t, a, []byte("Basic dXNlcjpwYXNz"), chain, ReasonMissingToken)
		// A bad token is refused even with a good certificate.
		expectReasonCert(t, a, bearer(tok[:len(tok)-4]+"AAAA"), chain, ReasonBadSignature)
	})

	t.Run("mtls off ignores certificates", func(t *testing.T) {
		srv := newJWKSServer(t, defaultJWKS())
		a := newAuth(t, jwksConfig(srv.URL), c)
		expectReasonCert(t, a, nil, chain, ReasonMissingToken)
		tok := mint(hdr("RS256", "rsa1"), with(claimsAt(c.Now()), "x509_subject", "CN=from-idp"), rs256(testRSA()))
		id, err := a.Authenticate(ctx, bearer(tok), chain)
		if err != nil || id.Principal.Claims["x509_subject"] != "CN=from-idp" {
			t.Fatalf("%v %v", err, id)
		}
	})
}

func expectReasonCert(t *testing.T, a *Authenticator, h []byte, chain []*x509.Certificate, want Reason) {
	t.Helper()
	_, err := a.Authenticate(context.Background(), h, chain)
	if r, _ := ReasonOf(err); err == nil || r != want {
		t.Fatalf("err %v, want %v", err, want)
	}
}
