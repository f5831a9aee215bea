package signer

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/countersign/countersign/remotesign"
)

// TestSignedParts checks what sign assembles in its one allocation
// (signedBox) against the Authorization header it returns, on random
// requests and on requests whose headers overflow the box's arrays: the
// client's headers echoed in order, then the added ones; SignedHeaders the
// header's list; the scope, date and digests well-formed and unshared
// between calls.
func TestSignedParts(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	overflowHeaders, overflowNames, overflowText := 0, 0, 0
	var prev *Signed // the last call's result, and copies of its strings
	var prevAuth, prevScope, prevDigests string
	var prevAuthValues []string // the last result's Authorization values, in its storage
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
		if prev != nil && (prevAuthValues[0] != prevAuth ||
			prev.CredentialScope != prevScope || prev.CanonicalRequestSHA256+prev.SignatureSHA256 != prevDigests) {
			t.Fatalf("request %d: the previous result's strings changed: storage shared between calls", i)
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
		if len(signed.AmzDate)+len(auth)+4*32 > len(signedBox{}.text) {
			overflowText++
		}
		prev, prevAuthValues = signed, added[0].Values
		prevAuth, prevScope = strings.Clone(auth), strings.Clone(signed.CredentialScope)
		prevDigests = strings.Clone(signed.CanonicalRequestSHA256 + signed.SignatureSHA256)
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
	if overflowHeaders < 100 || overflowNames < 100 || overflowText < 100 || overflowText > 2900 {
		t.Fatalf("%d requests overflowed the box's headers, %d its names and %d its text: the test misses the fallback or the box", overflowHeaders, overflowNames, overflowText)
	}
}

// TestSignedBoxSize keeps the box in the size class its text was sized to
// fill: 1,280 bytes with the 8-byte header the runtime puts before an
// object with pointers larger than 512 bytes. A field added to Signed or
// the box moves it to the next class (1,408 bytes) on every signature, so
// the text should shrink with it.
func TestSignedBoxSize(t *testing.T) {
	if n := unsafe.Sizeof(signedBox{}); n+8 > 1280 {
		t.Errorf("signedBox is %d bytes, past the 1,280-byte size class with its malloc header: shrink its text", n)
	}
}
