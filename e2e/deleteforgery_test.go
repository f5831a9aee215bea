package e2e

import (
	"bytes"
	"hash/crc32"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestDeleteObjectsCRCForgery is the regression test for DeleteObjects
// bound only by a CRC (SECURITY.md). The holder of a token allowed to
// delete wh/ gets a DeleteObjects for wh/t/a.parquet signed, then sends a
// second body of the same length and CRC32, which deletes denied/secret1
// instead. versitygw, like S3, checks the CRC32 and would execute it.
// countersign signs the body's SHA-256 (so versitygw refuses the forged
// body) or refuses to sign.
func TestDeleteObjectsCRCForgery(t *testing.T) {
	h := newHarness(t)
	P := styles(h.s3.Port)[0]
	uri := P.bucket("lake") + "?delete"
	h.adminPut(t, "lake", "wh/t/a.parquet", []byte("a"))

	legit := []byte(`<Delete xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Object><Key>wh/t/a.parquet</Key></Object><!--0123456789--><Quiet>true</Quiet></Delete>`)
	forged := forgeCRC32([]byte(`<Delete xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Object><Key>denied/secret1</Key></Object><!--`),
		[]byte(`--><Quiet>true</Quiet></Delete>`), 6, crc32.ChecksumIEEE(legit))
	if len(forged) != len(legit) || crc32.ChecksumIEEE(forged) != crc32.ChecksumIEEE(legit) {
		t.Fatalf("forgery failed: %q", forged)
	}
	crc := crc32Base64(legit)
	length := strconv.Itoa(len(legit))

	for _, tc := range []struct {
		name    string
		headers map[string][]string
	}{
		// What S3FileIO's Java SDK and aws-sdk-go-v2 send: a CRC32 and
		// no payload hash.
		{"crc32, no payload hash", javaHeaders("x-amz-checksum-crc32", crc, "Content-Length", length)},
		// A client that asks for an unsigned payload.
		{"crc32, UNSIGNED-PAYLOAD", javaHeaders("x-amz-checksum-crc32", crc, "Content-Length", length, "x-amz-content-sha256", "UNSIGNED-PAYLOAD")},
		{"Content-MD5, UNSIGNED-PAYLOAD", javaHeaders("Content-MD5", md5Base64(legit), "Content-Length", length, "x-amz-content-sha256", "UNSIGNED-PAYLOAD")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h.adminPut(t, "lake", "denied/secret1", []byte("secret"))
			body := string(legit)
			status, res, ierr, _ := h.cs.sign(t, "", signRequest{Region: testRegion, URI: uri, Method: "POST", Headers: tc.headers, Body: &body})
			if status != http.StatusOK {
				// Refused: say what to send instead.
				if status != http.StatusBadRequest || !strings.Contains(ierr.Error.Message, "x-amz-checksum-sha256") {
					t.Fatalf("sign: status %d %+v, want 200 or a 400 saying what binds the body", status, ierr)
				}
				if tc.headers["x-amz-content-sha256"] == nil {
					t.Fatalf("sign refused what the real clients send: %+v", ierr)
				}
				return
			}
			// Signed: the forged body must not be executed.
			code, out := h.s3.send(t, "POST", res.URI, res.Headers, forged)
			if !h.adminExists(t, "lake", "denied/secret1") {
				t.Fatalf("the forged same-CRC32 body deleted denied/secret1 (S3 answered %d, signed x-amz-content-sha256 %v)\n%s", code, res.Headers["x-amz-content-sha256"], out)
			}
			if code < 400 && !bytes.Contains(out, []byte("<Error>")) {
				t.Fatalf("forged body: S3 answered %d without an error\n%s", code, out)
			}
			if got := res.Headers["x-amz-content-sha256"]; !slices.Equal(got, []string{sha256Hex(legit)}) {
				t.Fatalf("signed x-amz-content-sha256 %v, want the body's SHA-256", got)
			}
			// The request it was signed for still works.
			if code, out := h.s3.send(t, "POST", res.URI, res.Headers, legit); code != http.StatusOK {
				t.Fatalf("legitimate DeleteObjects: S3 answered %d\n%s", code, out)
			}
			if h.adminExists(t, "lake", "wh/t/a.parquet") {
				t.Fatal("legitimate DeleteObjects did not delete wh/t/a.parquet")
			}
			h.adminPut(t, "lake", "wh/t/a.parquet", []byte("a"))
		})
	}
}

// forgeCRC32 returns prefix + filler + 4 patch bytes + suffix whose CRC32
// (IEEE) is target, with filler and patch printable ASCII that may sit in
// an XML comment. CRC is linear: the patch taking the register from its
// state after prefix+filler to the state that suffix turns into target is
// found by running the CRC backwards; the filler varies until the patch
// happens to be printable (about one try in fifty).
func forgeCRC32(prefix, suffix []byte, fillerLen int, target uint32) []byte {
	tab := crc32.MakeTable(crc32.IEEE)
	var rev [256]byte // rev[top byte of tab[i]] = i (unique for CRC32)
	for i := range 256 {
		rev[tab[i]>>24] = byte(i)
	}
	s := ^target // the register before suffix
	for i := len(suffix) - 1; i >= 0; i-- {
		idx := rev[s>>24]
		s = (s^tab[idx])<<8 | uint32(idx^suffix[i])
	}
	x := s // undo four zero-byte steps: register xor patch word before them
	for range 4 {
		idx := rev[x>>24]
		x = (x^tab[idx])<<8 | uint32(idx)
	}
	ok := func(c byte) bool { return c >= 0x21 && c <= 0x7e && !strings.ContainsRune("-<>&", rune(c)) }
	for n := 0; ; n++ {
		filler := []byte(strconv.Itoa(n))
		for len(filler) < fillerLen {
			filler = append([]byte{'x'}, filler...)
		}
		head := append(append([]byte{}, prefix...), filler...)
		w := ^crc32.Update(0, tab, head) ^ x
		patch := []byte{byte(w), byte(w >> 8), byte(w >> 16), byte(w >> 24)}
		if ok(patch[0]) && ok(patch[1]) && ok(patch[2]) && ok(patch[3]) {
			return append(append(head, patch...), suffix...)
		}
	}
}
