package auth

import (
	"crypto/x509"
	"encoding/asn1"
	"maps"
	"time"

	"github.com/countersign/countersign/internal/policyinput"
)

// x509SubjectClaim carries the client certificate's subject when a bearer
// token is the principal. With mTLS on, every name starting with
// x509ClaimPrefix is reserved: a token claiming one is refused
// (reservedClaim), so the policy can rely on them.
const (
	x509SubjectClaim = "x509_subject"
	x509ClaimPrefix  = "x509_"
)

// isCertClaim reports whether name is one of the claims certIdentity sets.
func isCertClaim(name string) bool {
	switch name {
	case x509SubjectClaim, "x509_issuer", "x509_serial", "x509_san_uri", "x509_san_dns":
		return true
	}
	return false
}

// certIdentity makes the principal from a client certificate.
//
// The certificate must already be verified by crypto/tls against the
// configured client CAs: pass tls.ConnectionState.VerifiedChains[0], not
// PeerCertificates, which are present unverified when the server only
// requests (RequestClientCert) rather than requires and verifies
// (RequireAndVerifyClientCert). Validity dates are checked again here
// because a TLS connection can outlive its certificate.
func certIdentity(mode string, leaf *x509.Certificate, now time.Time) (*Identity, *Error) {
	if err := certInDate(leaf, now); err != nil {
		return nil, err
	}
	var id string
	switch mode {
	case MTLSSubjectCN:
		// Go keeps the last of several CNs, other tools the first: which
		// one is the principal would be a guess.
		if countCN(leaf) > 1 {
			return nil, fail(ReasonMissingPrincipal, "client certificate has more than one subject common name")
		}
		id = leaf.Subject.CommonName
	case MTLSSANURI:
		// The first URI SAN: SPIFFE certificates carry exactly one.
		if len(leaf.URIs) > 0 {
			id = leaf.URIs[0].String()
		}
	case MTLSSANDNS:
		if len(leaf.DNSNames) > 0 {
			id = leaf.DNSNames[0]
		}
	}
	if !validPrincipal(id) {
		return nil, fail(ReasonMissingPrincipal, "client certificate has no "+mode+" principal (absent, blank or with control characters)")
	}
	uris := make([]any, len(leaf.URIs))
	for i, u := range leaf.URIs {
		uris[i] = u.String()
	}
	dns := make([]any, len(leaf.DNSNames))
	for i, d := range leaf.DNSNames {
		dns[i] = d
	}
	return &Identity{
		Principal: policyinput.Principal{
			ID:     id,
			Issuer: leaf.Issuer.String(),
			Groups: []string{},
			Claims: map[string]any{
				x509SubjectClaim: leaf.Subject.String(),
				"x509_issuer":    leaf.Issuer.String(),
				"x509_serial":    leaf.SerialNumber.Text(16),
				"x509_san_uri":   uris,
				"x509_san_dns":   dns,
			},
		},
		Method:    MethodMTLS,
		ExpiresAt: leaf.NotAfter,
	}, nil
}

// oidCommonName is the X.520 commonName attribute type.
var oidCommonName = asn1.ObjectIdentifier{2, 5, 4, 3}

// countCN counts the commonName attributes of the certificate's subject.
func countCN(leaf *x509.Certificate) int {
	n := 0
	for _, a := range leaf.Subject.Names {
		if a.Type.Equal(oidCommonName) {
			n++
		}
	}
	return n
}

// certInDate checks the certificate's validity dates at now. A TLS
// connection can outlive its certificate, so every request checks them
// again, whether the certificate is the principal or only adds its
// subject to a token's claims.
func certInDate(leaf *x509.Certificate, now time.Time) *Error {
	if now.After(leaf.NotAfter) {
		return fail(ReasonExpired, "client certificate expired")
	}
	if now.Before(leaf.NotBefore) {
		return fail(ReasonNotYetValid, "client certificate is not yet valid")
	}
	return nil
}

// withCertSubject returns a copy of a (shared, read-only) token identity
// whose claims also carry the client certificate's subject.
func withCertSubject(id *Identity, leaf *x509.Certificate) *Identity {
	cp := *id
	cp.Principal.Claims = maps.Clone(id.Principal.Claims)
	cp.Principal.Claims[x509SubjectClaim] = leaf.Subject.String()
	// The token's Key encodes the claims without the subject. This copy
	// lives for one request: the fast path encodes it then.
	cp.Principal.Key = ""
	return &cp
}
