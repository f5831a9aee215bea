package e2e

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"sync"
	"testing"
	"time"
)

var signatureRE = regexp.MustCompile(`Signature=([0-9a-f]{64})`)

// TestAuditSurvivesKill9: under concurrent signing load the server is
// killed with SIGKILL. Afterwards `countersign audit verify` passes, and
// every signature any client received has its durable record.
func TestAuditSurvivesKill9(t *testing.T) {
	srv := startS3(t)
	ad := newAuditDir(t)
	cs := startCountersign(t, baseConfigAudit(t, srv.Port, ad), secretEnv()...)
	p := styles(srv.Port)[0]

	var (
		mu       sync.Mutex
		received = map[string]bool{} // SHA-256 of each signature a client got
		wg       sync.WaitGroup
		stop     = make(chan struct{})
	)
	client := &http.Client{Timeout: 5 * time.Second}
	for w := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				body, _ := json.Marshal(signRequest{Region: testRegion, URI: p.object("lake", "wh/t/data/f-"+itoa(w)+"-"+itoa(i)+".parquet"), Method: "GET", Headers: javaHeaders()})
				req, _ := http.NewRequest("POST", cs.url+"/v1/aws/s3/sign", bytes.NewReader(body))
				req.Header.Set("Authorization", "Bearer "+cs.token)
				resp, err := client.Do(req)
				if err != nil {
					return // the server is gone
				}
				var res signResult
				ok := resp.StatusCode == http.StatusOK && json.NewDecoder(resp.Body).Decode(&res) == nil
				resp.Body.Close()
				if !ok {
					continue
				}
				m := signatureRE.FindStringSubmatch(res.Headers["Authorization"][0])
				// The record holds the SHA-256 of the hex signature as it
				// appears in the Authorization header.
				sum := sha256.Sum256([]byte(m[1]))
				mu.Lock()
				received[hex.EncodeToString(sum[:])] = true
				mu.Unlock()
			}
		}()
	}
	// Kill once the load is well under way (a race-detector build on a busy
	// machine is slow, so wait for a count, not a time).
	deadline := time.Now().Add(2 * time.Minute)
	for {
		mu.Lock()
		n := len(received)
		mu.Unlock()
		if n >= 300 || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := cs.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cs.cmd.Wait()
	close(stop)
	wg.Wait()
	if len(received) < 100 {
		t.Fatalf("only %d signatures before the kill; the load did not run", len(received))
	}

	// Restart on the same log: recovery continues it; then stop gracefully
	// (drain, seal, final checkpoint).
	cs2 := startCountersign(t, baseConfigAudit(t, srv.Port, ad), secretEnv()...)
	if st, _, ierr, _ := cs2.sign(t, "", signRequest{Region: testRegion, URI: p.object("lake", "after-restart"), Method: "GET", Headers: javaHeaders()}); st != http.StatusOK {
		t.Fatalf("after restart: %d %+v", st, ierr)
	}
	cs2.cmd.Process.Signal(os.Interrupt)
	if err := cs2.cmd.Wait(); err != nil {
		t.Fatalf("graceful stop: %v\n%s", err, cs2.log.String())
	}

	out, err := exec.Command(servers.CountersignBin, "audit", "verify", "-dir", ad.Dir, "-pubkey", ad.VerifierKeyFile).CombinedOutput()
	if err != nil {
		t.Fatalf("audit verify after kill -9: %v\n%s", err, out)
	}

	// Every signature a client received is on record as an allowed, signed
	// access.
	cmd := exec.Command(servers.CountersignBin, "audit", "query", "-dir", ad.Dir, "-decision", "allow", "-format", "jsonl")
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	recorded := map[string]bool{}
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var rec struct {
			Signing *struct {
				SignatureSHA256 string `json:"signature_sha256"`
			} `json:"signing"`
		}
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatalf("query output is not JSON lines: %v: %s", err, sc.Text())
		}
		if rec.Signing != nil {
			recorded[rec.Signing.SignatureSHA256] = true
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("audit query: %v", err)
	}
	missing := 0
	for sig := range received {
		if !recorded[sig] {
			missing++
		}
	}
	if missing > 0 {
		t.Fatalf("%d of %d signatures clients received have no audit record", missing, len(received))
	}
	t.Logf("%d signatures received before kill -9, all on record (%d allowed records)", len(received), len(recorded))
}
