package signer

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/internal/policyinput"
	"github.com/countersign/countersign/s3req"
	"github.com/countersign/countersign/session"
)

// fixedSessions is this package's test Sessions: one session for every
// caller, or an error.
type fixedSessions struct {
	c    session.Credentials
	err  error
	keys []session.Key
}

func (f *fixedSessions) Get(_ context.Context, k session.Key, _ *policyinput.Principal, _ *policyinput.Table) (session.Credentials, error) {
	f.keys = append(f.keys[:0], k)
	return f.c, f.err
}

// sessionToken is as long as SeaweedFS's and AWS's session tokens (~1 KB).
var sessionToken = strings.Repeat("T", 984)

func benchRequest() *s3req.Request {
	return &s3req.Request{
		Method: "GET", Region: "us-east-1", Scheme: "https",
		Host:          "lake.s3.us-east-1.amazonaws.com",
		RawPath:       "/warehouse/db/events/data/00042-17-7f3c9a1e-00001.parquet",
		Headers:       hdrs("amz-sdk-request", "attempt=1; max=4", "Range", "bytes=4-1048579"),
		Targets:       []s3req.Target{{Operation: "GetObject", Action: "s3:GetObject", Access: s3req.AccessRead, Bucket: "lake", Key: "warehouse/db/events/data/00042-17-7f3c9a1e-00001.parquet", Role: "object"}},
		ContentSHA256: "UNSIGNED-PAYLOAD", AddContentSHA256: true,
	}
}

func TestSignForSession(t *testing.T) {
	f := &fixedSessions{c: session.Credentials{AccessKeyID: "ASIASESSION", SecretAccessKey: "s", SessionToken: "tok", Expires: time.Now().Add(time.Hour), SourceIdentity: "alice", SessionName: "alice"}}
	s := New(staticCreds(""), Options{Sessions: f})
	p := &policyinput.Principal{ID: "alice"}
	r := benchRequest()
	signed, err := s.SignFor(context.Background(), r, Caller{TokenHash: [32]byte{1}, Principal: p, Table: &policyinput.Table{Name: "t", Location: "s3://lake/wh/t"}, TablePath: "prod/namespaces/db/tables/t"})
	if err != nil {
		t.Fatal(err)
	}
	if signed.AccessKeyID != "ASIASESSION" || signed.SourceIdentity != "alice" || signed.SessionName != "alice" || !signed.Headers.Has("X-Amz-Security-Token") {
		t.Fatalf("signed %+v", signed)
	}
	k := f.keys[0]
	if k.Token != ([32]byte{1}) || k.TablePath != "prod/namespaces/db/tables/t" || k.TableLocation != "s3://lake/wh/t" ||
		k.Needs[0] != (session.Need{Action: "s3:GetObject", Access: "read", Bucket: "lake"}) || k.Needs[1] != (session.Need{}) {
		t.Fatalf("key %+v", k)
	}
	// mTLS (no token): keyed by the principal.
	if _, err := s.SignFor(context.Background(), r, Caller{Principal: p}); err != nil || f.keys[0].Token != session.PrincipalKey(p) {
		t.Fatalf("mTLS key %+v %v", f.keys[0], err)
	}
	// Without a caller, or without a session, nothing is signed.
	if _, err := s.Sign(context.Background(), r); !errors.Is(err, ErrCredentials) {
		t.Fatalf("no caller: %v", err)
	}
	f.err = session.ErrUnavailable
	if _, err := s.SignFor(context.Background(), r, Caller{Principal: p}); !errors.Is(err, ErrCredentials) || !errors.Is(err, session.ErrUnavailable) {
		t.Fatalf("STS down: %v", err)
	}
}

// BenchmarkSignSession signs with a per-principal session (a cache hit);
// BenchmarkSignSessionToken with one credential carrying a session token
// of the same length: the difference is the session lookup.
func BenchmarkSignSession(b *testing.B) {
	f := &fixedSessions{c: session.Credentials{AccessKeyID: "ASIASESSION", SecretAccessKey: "s", SessionToken: sessionToken, Expires: time.Now().Add(time.Hour)}}
	s := New(staticCreds(""), Options{Sessions: f})
	c := Caller{TokenHash: [32]byte{1}, Principal: &policyinput.Principal{ID: "alice"}}
	r := benchRequest()
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.SignFor(ctx, r, c); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkSignSessionToken(b *testing.B) {
	s := New(staticCreds(sessionToken), Options{})
	r := benchRequest()
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.SignFor(ctx, r, Caller{}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkSignNoToken(b *testing.B) {
	s := New(staticCreds(""), Options{})
	r := benchRequest()
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.SignFor(ctx, r, Caller{}); err != nil {
			b.Fatal(err)
		}
	}
}

// TestKeyCacheManySessions: the derived keys of 64 sessions used in turn
// stay cached (each miss would allocate the key's derivation again).
func TestKeyCacheManySessions(t *testing.T) {
	var c keyCache
	ids, secrets := make([]string, 64), make([]string, 64)
	date := []byte("20261202")
	for i := range ids {
		ids[i] = "ASIA" + strings.Repeat(string(rune('A'+i%26)), 3) + string(rune('a'+i/26))
		secrets[i] = "secret-" + ids[i]
		c.get(ids[i], secrets[i], date, "us-east-1")
	}
	if allocs := testing.AllocsPerRun(10, func() {
		for i, id := range ids {
			c.get(id, secrets[i], date, "us-east-1")
		}
	}); allocs != 0 {
		t.Fatalf("%v allocations for 64 cached keys, want 0: keys were evicted", allocs)
	}
}
