package signer

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/countersign/countersign/remotesign"
)

// TestSignedParts checks what sign assembles in its two allocations
// (signedBox) against the Authorization header it returns, on random
// requests and on requests whose headers overflow the box's arrays: the
// client's headers echoed in order, then the added ones; SignedHeaders the
// header's list; the scope, date and digests well-formed and unshared
// between calls.
func TestSignedParts(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	overflowHeaders, overflowNames := 0, 0
	for i := 0; i < 3000; i++ {
		r, token, at := randomRequest(rng)
		if i%3 == 0 { // more client headers than the box holds, most of them signed
			for j := 0; j < 4+rng.IntN(8); j++ {
				r.Headers = append(r.Headers, remotesign.Header{Name: fmt.Sprintf("X-Amz-Meta-Extra%d", j), Values: []string{"v"}})
			}
		}
		creds := aws.Credentials{AccessKeyID: testAKID, SecretAccessKey: testSecret, SessionToken: token}
		s := New(aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) { return creds, nil }), Options{Now: func() time.Time { return at }})
		client := cloneHeaders(r.Headers)
		signed, err := s.Sign(context.Background(), r)
		if err != nil {
			continue
		}
		if len(r.Headers) > 7 {
			overflowHeaders++
		}
		if len(signed.SignedHeaders) > 8 {
			overflowNames++
		}
		if len(signed.Headers) < len(client) || !slices.EqualFunc(signed.Headers[:len(client)], client, func(a, b remotesign.Header) bool {
			return a.Name == b.Name && slices.Equal(a.Values, b.Values)
		}) {
			t.Fatalf("request %d: client headers not echoed unchanged: %v", i, signed.Headers)
		}
		added := signed.Headers[len(client):]
		if len(added) == 0 || added[0].Name != hdrAuthorization || len(added[0].Values) != 1 {
			t.Fatalf("request %d: first added header %v, want Authorization", i, added)
		}
		auth := added[0].Values[0]
		wantAdded := []string{hdrAuthorization}
		if _, ok := r.Headers.Get("x-amz-date"); !ok {
			wantAdded = append(wantAdded, hdrAmzDate)
		}
		if token != "" {
			wantAdded = append(wantAdded, hdrSecurityToken)
		}
		if r.AddContentSHA256 {
			wantAdded = append(wantAdded, hdrContentSHA256)
		}
		var gotAdded []string
		for _, h := range added {
			gotAdded = append(gotAdded, h.Name)
		}
		if !slices.Equal(gotAdded, wantAdded) {
			t.Fatalf("request %d: added headers %v, want %v", i, gotAdded, wantAdded)
		}
		if cap(signed.Headers) != len(signed.Headers) {
			t.Fatalf("request %d: Headers has room for %d more: an append by the caller would write into the result's storage", i, cap(signed.Headers)-len(signed.Headers))
		}
		_, rest, _ := strings.Cut(auth, "Credential="+testAKID+"/")
		scope, rest, _ := strings.Cut(rest, ", SignedHeaders=")
		list, sig, _ := strings.Cut(rest, ", Signature=")
		if scope != signed.CredentialScope || !strings.HasPrefix(scope, signed.AmzDate[:8]+"/") || len(signed.AmzDate) != len(amzDateLayout) {
			t.Fatalf("request %d: scope %q, date %q in %q", i, signed.CredentialScope, signed.AmzDate, auth)
		}
		if !slices.Equal(signed.SignedHeaders, strings.Split(list, ";")) {
			t.Fatalf("request %d: SignedHeaders %q, the header lists %q", i, signed.SignedHeaders, list)
		}
		if signed.SignatureSHA256 != sha256Hex(sig) || len(signed.CanonicalRequestSHA256) != 64 {
			t.Fatalf("request %d: digests %q %q for signature %q", i, signed.CanonicalRequestSHA256, signed.SignatureSHA256, sig)
		}
	}
	if overflowHeaders < 100 || overflowNames < 100 {
		t.Fatalf("only %d requests overflowed the box's headers and %d its names: the test misses the fallback", overflowHeaders, overflowNames)
	}
}
