package e2e

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestAuditDiskFullFailsClosed fills the file system under the audit log
// for real (a small tmpfs): countersign must answer 503, sign nothing and
// report not-ready while the log cannot record, and recover by itself when
// space comes back.
func TestAuditDiskFullFailsClosed(t *testing.T) {
	mnt := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", mnt).CombinedOutput(); err != nil {
		t.Fatalf("this test needs root to mount a small tmpfs for a real disk-full fault: %v %s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", "-l", mnt).Run() })

	srv := startS3(t)
	cfg := baseConfig(t, srv.Port)
	// Point the audit log into the tmpfs, with small segments.
	lines := strings.Split(cfg, "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, "  dir: ") && i > 0 && strings.HasPrefix(lines[i-1], "audit:") {
			lines[i] = "  dir: " + quote(filepath.Join(mnt, "audit")) + "\n  segment_max_bytes: 262144"
		}
	}
	cfg = strings.Join(lines, "\n")
	cs := startCountersign(t, cfg, secretEnv()...)
	sr := signRequest{Region: testRegion, URI: styles(srv.Port)[0].object("lake", "wh/f.parquet"), Method: "GET", Headers: javaHeaders()}
	if st, _, ierr, _ := cs.sign(t, "", sr); st != http.StatusOK {
		t.Fatalf("before the fault: %d %+v", st, ierr)
	}

	// Fill the file system.
	filler := filepath.Join(mnt, "filler")
	exec.Command("dd", "if=/dev/zero", "of="+filler, "bs=64k").Run()

	// Within a few seconds the log hits the full disk (at the latest at the
	// next checkpoint) and from then on nothing is signed.
	deadline := time.Now().Add(15 * time.Second)
	for {
		st, res, ierr, hdr := cs.sign(t, "", sr)
		if st == http.StatusServiceUnavailable {
			if res != nil || hdr.Get("Retry-After") == "" || !strings.Contains(ierr.Error.Message, "audit") {
				t.Fatalf("503 without Retry-After or with a signature: %+v %+v", res, ierr)
			}
			break
		}
		if st != http.StatusOK {
			t.Fatalf("unexpected status %d %+v", st, ierr)
		}
		if time.Now().After(deadline) {
			t.Fatalf("the audit log never noticed the full disk\n%s", cs.log.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	for range 5 {
		if st, res, _, _ := cs.sign(t, "", sr); st != http.StatusServiceUnavailable || res != nil {
			t.Fatalf("signed while the audit log is down: %d", st)
		}
	}
	if st := getStatus(t, cs.url+"/readyz"); st != http.StatusServiceUnavailable {
		t.Fatalf("/readyz while the audit log is down: %d", st)
	}

	// Space comes back: the log recovers into a new segment by itself.
	os.Remove(filler)
	deadline = time.Now().Add(15 * time.Second)
	for {
		st, _, _, _ := cs.sign(t, "", sr)
		if st == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no recovery after space was freed: %d\n%s", st, cs.log.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	if st := getStatus(t, cs.url+"/readyz"); st != http.StatusOK {
		t.Fatalf("/readyz after recovery: %d", st)
	}
}

func getStatus(t testing.TB, url string) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(fmt.Errorf("GET %s: %w", url, err))
	}
	resp.Body.Close()
	return resp.StatusCode
}
