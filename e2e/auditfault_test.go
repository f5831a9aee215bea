package e2e

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestAuditDiskFullFailsClosed fills the file system under the audit log
// for real (a small tmpfs): countersign must answer 503, sign nothing and
// report not-ready while the log cannot record, and recover by itself when
// space comes back.
func TestAuditDiskFullFailsClosed(t *testing.T) {
	mnt := mountTmpfs(t)
	srv := startS3(t)
	cfg := tmpfsAuditConfig(t, baseConfig(t, srv.Port), mnt)
	cs := startCountersign(t, cfg, secretEnv()...)
	sr := signRequest{Region: testRegion, URI: styles(srv.Port)[0].object("lake", "wh/f.parquet"), Method: "GET", Headers: javaHeaders()}
	if st, _, ierr, _ := cs.sign(t, "", sr); st != http.StatusOK {
		t.Fatalf("before the fault: %d %+v", st, ierr)
	}

	filler := fillDisk(mnt)

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

// mountTmpfs mounts a 4 MiB tmpfs, for a real disk-full fault.
func mountTmpfs(t *testing.T) string {
	t.Helper()
	mnt := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", mnt).CombinedOutput(); err != nil {
		t.Fatalf("this test needs root to mount a small tmpfs for a real disk-full fault: %v %s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", "-l", mnt).Run() })
	return mnt
}

// tmpfsAuditConfig points cfg's audit log into mnt/audit, with small
// segments.
func tmpfsAuditConfig(t *testing.T, cfg, mnt string) string {
	t.Helper()
	lines := strings.Split(cfg, "\n")
	found := false
	for i, l := range lines {
		if strings.HasPrefix(l, "  dir: ") && i > 0 && strings.HasPrefix(lines[i-1], "audit:") {
			lines[i] = "  dir: " + quote(filepath.Join(mnt, "audit")) + "\n  segment_max_bytes: 262144"
			found = true
		}
	}
	if !found {
		t.Fatal("no audit.dir line in the config")
	}
	return strings.Join(lines, "\n")
}

// fillDisk fills the file system at mnt and returns the filler's path.
func fillDisk(mnt string) string {
	filler := filepath.Join(mnt, "filler")
	exec.Command("dd", "if=/dev/zero", "of="+filler, "bs=64k").Run()
	return filler
}

// TestAuditDiskFullCleanStop is issue 20's repro: load until the full
// disk answers 503, SIGTERM while it is still full. The stop must say it
// failed (exit 1: the log could not be sealed), and `audit verify` must
// accept the log, naming what it finds as a crash or disk-full artefact,
// not tampering. Meanwhile, the log of refusals stays bounded.
func TestAuditDiskFullCleanStop(t *testing.T) {
	mnt := mountTmpfs(t)
	srv := startS3(t)
	ad := newAuditDir(t)
	cfg := tmpfsAuditConfig(t, baseConfigAudit(t, srv.Port, ad), mnt)
	cs := startCountersign(t, cfg, secretEnv()...)
	sr := signRequest{Region: testRegion, URI: styles(srv.Port)[0].object("lake", "wh/f.parquet"), Method: "GET", Headers: javaHeaders()}
	if st, _, ierr, _ := cs.sign(t, "", sr); st != http.StatusOK {
		t.Fatalf("before the fault: %d %+v", st, ierr)
	}
	fillDisk(mnt)
	deadline := time.Now().Add(15 * time.Second)
	for refused := 0; refused < 50; {
		st, res, ierr, _ := cs.sign(t, "", sr)
		switch {
		case st == http.StatusServiceUnavailable && res == nil:
			refused++
		case st != http.StatusOK:
			t.Fatalf("unexpected status %d %+v", st, ierr)
		}
		if time.Now().After(deadline) {
			t.Fatalf("the audit log never noticed the full disk\n%s", cs.log.String())
		}
	}

	// The episode goes on: every request is refused, but the log grows by
	// a bounded number of lines a second (issue 20 #3), not one per
	// request. The bound follows from serve's rate limit: per distinct
	// warning or error message, at most logBurst (3) lines a second plus
	// one line counting what was suppressed.
	const logBurst, episode = 3, 2 * time.Second
	mark := len(cs.log.String())
	start := time.Now()
	refused := 0
	// At least the episode's length and 100 refusals, however slowly a
	// loaded machine answers (the bound below scales with the time taken).
	for time.Since(start) < episode || refused < 100 && time.Since(start) < time.Minute {
		if st, _, _, _ := cs.sign(t, "", sr); st == http.StatusServiceUnavailable {
			refused++
		}
	}
	secs := time.Since(start).Seconds()
	logged := cs.log.String()[mark:]
	perMsg := map[string]int{}
	longest := 0
	for _, l := range strings.Split(strings.TrimSpace(logged), "\n") {
		var rec struct{ Level, Msg string }
		if json.Unmarshal([]byte(l), &rec) != nil || (rec.Level != "WARN" && rec.Level != "ERROR") {
			continue
		}
		perMsg[rec.Level+" "+rec.Msg]++
		longest = max(longest, len(l)+1)
	}
	windows := int(secs) + 2 // partial windows at both ends
	for msg, n := range perMsg {
		if n > windows*(logBurst+1) {
			t.Errorf("%d lines of %q in %.1f s (%d refused requests), want at most %d", n, msg, secs, refused, windows*(logBurst+1))
		}
	}
	bound := len(perMsg) * windows * (logBurst + 1) * longest
	t.Logf("disk-full episode: %d requests refused in %.1f s, %d log bytes (%.0f B/s), bound %d; lines per message %v",
		refused, secs, len(logged), float64(len(logged))/secs, bound, perMsg)
	if refused < 100 {
		t.Fatalf("only %d requests refused during the episode: the load did not run", refused)
	}
	if len(logged) > bound {
		t.Errorf("%d log bytes during the episode, want at most %d", len(logged), bound)
	}

	// SIGTERM while still full.
	cs.cmd.Process.Signal(syscall.SIGTERM)
	err := cs.cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("stop on a full disk: %v, want exit status 1 (the log could not be sealed)\n%s", err, cs.log.String())
	}
	if !strings.Contains(cs.log.String(), "closing the audit log") {
		t.Errorf("the close error is not logged:\n%s", cs.log.String())
	}

	out, err := exec.Command(servers.CountersignBin, "audit", "verify", "-dir", filepath.Join(mnt, "audit"), "-pubkey", ad.VerifierKeyFile).CombinedOutput()
	if err != nil {
		t.Fatalf("audit verify after a stop on a full disk: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "crash or disk-full artefact (not tampering)") {
		t.Errorf("verify does not name the disk-full artefact:\n%s", out)
	}
	t.Logf("audit verify:\n%s", out)
}
