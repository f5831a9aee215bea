package s3req

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"hash/crc32"
	"strconv"
	"testing"
)

// forgeCRC32 returns prefix + filler + 4 patch bytes + suffix whose CRC32
// (IEEE) is target, with the filler and patch printable ASCII other than
// '-' and '<' so they can sit inside an XML comment. CRC is linear: the
// patch that takes the register from its state after prefix+filler to the
// state that suffix turns into target is computed by running the CRC
// backwards; the filler varies until the patch happens to be printable.
func forgeCRC32(prefix, suffix []byte, fillerLen int, target uint32) []byte {
	tab := crc32.MakeTable(crc32.IEEE)
	var rev [256]byte // rev[top byte of tab[i]] = i (unique for CRC32)
	for i := range 256 {
		rev[tab[i]>>24] = byte(i)
	}
	// The register before suffix such that suffix ends at target.
	s := ^target
	for i := len(suffix) - 1; i >= 0; i-- {
		idx := rev[s>>24]
		s = (s^tab[idx])<<8 | uint32(idx^suffix[i])
	}
	// Undo four zero-byte steps: x is what the register xor the patch word
	// must be before them.
	x := s
	for range 4 {
		idx := rev[x>>24]
		x = (x^tab[idx])<<8 | uint32(idx)
	}
	ok := func(c byte) bool { return c >= 0x21 && c <= 0x7e && c != '-' && c != '<' && c != '>' && c != '&' }
	for n := 0; ; n++ {
		filler := []byte(strconv.Itoa(n))
		for len(filler) < fillerLen {
			filler = append([]byte{'x'}, filler...)
		}
		head := append(append([]byte{}, prefix...), filler...)
		w := ^crc32.Update(0, tab, head) ^ x // crc32.Update applies the final inversion
		patch := []byte{byte(w), byte(w >> 8), byte(w >> 16), byte(w >> 24)}
		if ok(patch[0]) && ok(patch[1]) && ok(patch[2]) && ok(patch[3]) {
			return append(append(head, patch...), suffix...)
		}
	}
}

func TestForgeCRC32(t *testing.T) {
	want := crc32.ChecksumIEEE([]byte("<Delete><Object><Key>wh/t/a.parquet</Key></Object></Delete>"))
	got := forgeCRC32([]byte("<Delete><Object><Key>denied/x</Key></Object><!--"), []byte("--></Delete>"), 6, want)
	if crc32.ChecksumIEEE(got) != want || !bytes.HasPrefix(got, []byte("<Delete><Object><Key>denied/x")) {
		t.Fatalf("forged %q: crc %08x, want %08x", got, crc32.ChecksumIEEE(got), want)
	}
}

// TestDeleteObjectsCRCForgery is the regression test for DeleteObjects
// bound only by a CRC: the holder of a signature for a body deleting an
// allowed key could send a second body, of the same length and CRC32,
// deleting a key no policy allowed. countersign must sign the body's
// SHA-256 (which the forged body does not have), or refuse.
func TestDeleteObjectsCRCForgery(t *testing.T) {
	c := testClassifier(t)
	legit := []byte("<Delete><Object><Key>wh/t/a.parquet</Key></Object><!--0123456789--></Delete>")
	forged := forgeCRC32([]byte("<Delete><Object><Key>denied/secret1</Key></Object><!--"), []byte("--></Delete>"), 6, crc32.ChecksumIEEE(legit))
	if len(forged) != len(legit) || crc32.ChecksumIEEE(forged) != crc32.ChecksumIEEE(legit) {
		t.Fatalf("forgery failed: %q", forged)
	}
	if keys, err := ParseDeleteBody(forged, 10); err != nil || keys[0].Key != "denied/secret1" {
		t.Fatalf("forged body does not parse as deleting denied/secret1: %v %v", keys, err)
	}
	crc := base64.StdEncoding.EncodeToString(binary.BigEndian.AppendUint32(nil, crc32.ChecksumIEEE(legit)))
	forgedSum := sha256.Sum256(forged)

	// What Java's S3FileIO and the AWS SDKs send: a CRC32 and no payload
	// hash. countersign signs the legitimate body's SHA-256.
	in := req("POST", "http://localhost:7070/lake?delete", hdrs("x-amz-checksum-crc32", crc, "Content-Length", strconv.Itoa(len(legit))))
	in.Body, in.HasBody = string(legit), true
	r, err := c.Classify(in)
	if err != nil {
		t.Fatal(err)
	}
	legitSum := sha256.Sum256(legit)
	if r.ContentSHA256 != hex.EncodeToString(legitSum[:]) || r.ContentSHA256 == hex.EncodeToString(forgedSum[:]) {
		t.Fatalf("signed payload hash %q: the forged body would pass (want the legitimate body's SHA-256)", r.ContentSHA256)
	}
	if len(r.Targets) != 1 || r.Targets[0].Key != "wh/t/a.parquet" {
		t.Fatalf("targets %+v", r.Targets)
	}

	// The same CRC with an unsigned payload would let the forged body
	// through: refused.
	in = req("POST", "http://localhost:7070/lake?delete", hdrs("x-amz-checksum-crc32", crc, "x-amz-content-sha256", "UNSIGNED-PAYLOAD"))
	in.Body, in.HasBody = string(legit), true
	if r, err := c.Classify(in); err == nil {
		t.Fatalf("DeleteObjects bound only by a CRC32 was accepted with %q", r.ContentSHA256)
	}
}
