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

// An audit access record as the log writes it (1.2 KB, 42 names).
var benchRecord = []byte(`{"v":1,"seq":13272,"id":"4396a15942bde5cd00000000000033d8","time":"2026-11-02T00:54:58.432957089Z","node":"node-1","kind":"access","source_ip":"10.12.0.29","request_id":"node-1-0000000000001cf6","principal":{"issuer":"https://idp.example.com/realms/lakehouse","id":"spark-etl","groups":["etl-writers","service"],"jti":"00000000-9a4d-4c1e-8f61-000000000000","token_hmac":"ba659bcbbf6cf5cfd69539c1e978a463eb0c097be8a418b19b977973b7892f2e"},"operation":"GetObject","action":"s3:GetObject","access":"read","bucket":"lake-prod","key":"warehouse/marketing.db/t03/data/dt=2026-11-22/01533-0-7233b8ed-part-00000.parquet","region":"us-east-1","table":{"prefix":"prod","namespace":["marketing"],"name":"t03"},"role":"object","decision":"allow","reason":"","status":200,"policy_revision":"sha256:9f2c4e1a7b3d","eval_us":22,"signing":{"access_key_id":"AKIAIOSFODNN7EXAMPLE","scope":"20261102/us-east-1/s3/aws4_request","amz_date":"20261102T005458Z","signed_headers":["host","range","x-amz-content-sha256","x-amz-date"],"payload":"UNSIGNED-PAYLOAD","canonical_request_sha256":"a54d5c1da08c4940f16e0515216f07475c138eb63e20db845d24399a8f778ca1","signature_sha256":"42ab5cfdd3902d44b9a90762aaec6b0c78bb1cbf2dc1215aafb1f9c85977b6b2"}}`)

// BenchmarkCheckRecord is the audit log's check of every line it reads
// (audit.checkJSON), with the scratch kept between lines as verify does.
func BenchmarkCheckRecord(b *testing.B) {
	o := Options{ValidUTF8: true, UniqueNames: true, SpaceOnly: true, MaxDepth: 300}
	var c Checker
	b.SetBytes(int64(len(benchRecord)))
	b.ReportAllocs()
	for b.Loop() {
		if e := c.Check(benchRecord, o); e != nil {
			b.Fatal(e)
		}
	}
}

// BenchmarkCheckRecordOnce is BenchmarkCheckRecord without a Checker.
func BenchmarkCheckRecordOnce(b *testing.B) {
	o := Options{ValidUTF8: true, UniqueNames: true, SpaceOnly: true, MaxDepth: 300}
	b.SetBytes(int64(len(benchRecord)))
	b.ReportAllocs()
	for b.Loop() {
		if e := Check(benchRecord, o); e != nil {
			b.Fatal(e)
		}
	}
}
