package remotesign
import "testing"
func BenchmarkTmpDecode(b *testing.B) {
	body := []byte(readFixture(b, "java_get.json"))
	var d Decoder
	b.ReportAllocs()
	for b.Loop() { d.Decode(body, Limits{}) }
}
