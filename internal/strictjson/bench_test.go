package strictjson

import "testing"

// A typical access token's claims.
var benchClaims = []byte(`{"iss":"https://idp.example.com/realms/lake","sub":"0b6a1c2e-5f0d-4c8e-9a57-3d1f2e4b6c8a","aud":["countersign","account"],"exp":1764633600,"iat":1764630000,"nbf":1764630000,"jti":"b7f3c1d2","ext":{"user":"bob","groups":["analysts","etl"]},"scope":"openid profile"}`)

func BenchmarkCheckUniqueNames(b *testing.B) {
	b.SetBytes(int64(len(benchClaims)))
	b.ReportAllocs()
	for b.Loop() {
		if e := Check(benchClaims, Options{ValidUTF8: true, UniqueNames: true}); e != nil {
			b.Fatal(e)
		}
	}
}

func BenchmarkDecode(b *testing.B) {
	b.SetBytes(int64(len(benchClaims)))
	b.ReportAllocs()
	for b.Loop() {
		if _, e := Decode(benchClaims, Options{ValidUTF8: true, UniqueNames: true}); e != nil {
			b.Fatal(e)
		}
	}
}
