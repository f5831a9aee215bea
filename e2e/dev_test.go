package e2e

import (
	"bufio"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/testsupport"
)

// TestServeDev: `countersign serve -dev` prints a working bearer token; a
// request signed with it succeeds against a real S3 server.
func TestServeDev(t *testing.T) {
	srv := startS3(t)
	srv.CreateBucket(t, "warehouse")
	h := &harness{s3: srv, ctx: t.Context()}
	h.adminPut(t, "warehouse", "db/t/f.parquet", []byte("PAR1"))

	// -dev supplies everything else; the file only points it at this
	// versitygw and its keys, and a free port.
	cfg := fmt.Sprintf("listen: 127.0.0.1:%d\nendpoints:\n  - name: dev\n    scheme: http\n    host: localhost\n    port: %d\n    regions: [us-east-1]\ncredentials:\n  source: static\n  access_key_id: %s\n",
		testsupport.FreePort(t), srv.Port, testAccessKey)
	path := filepath.Join(t.TempDir(), "dev.yaml")
	os.WriteFile(path, []byte(cfg), 0o600)
	cmd := exec.Command(servers.CountersignBin, "serve", "-dev", "-config", path)
	cmd.Env = append(os.Environ(), secretEnv()...)
	stdout, _ := cmd.StdoutPipe()
	logs := &testsupport.LockedBuffer{}
	cmd.Stderr = logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Signal(os.Interrupt); cmd.Wait() })

	tokenc := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		next := false
		for sc.Scan() {
			line := strings.TrimSpace(sc.Text())
			if next {
				tokenc <- line
				next = false
			}
			if strings.HasPrefix(line, "Development bearer token") {
				next = true
			}
		}
	}()
	var token string
	select {
	case token = <-tokenc:
	case <-time.After(30 * time.Second):
		t.Fatalf("no dev token printed:\n%s", logs.String())
	}
	addr := strings.TrimPrefix(strings.SplitN(cfg, "\n", 2)[0], "listen: ")
	if err := testsupport.WaitPort(mustAtoi(strings.Split(addr, ":")[1]), 10*time.Second); err != nil {
		t.Fatal(err)
	}
	cs := &signerProc{url: "http://" + addr, log: logs, token: token}
	status, res, ierr, _ := cs.sign(t, "", signRequest{Region: testRegion, URI: styles(srv.Port)[0].object("warehouse", "db/t/f.parquet"), Method: "GET", Headers: javaHeaders()})
	if status != http.StatusOK {
		t.Fatalf("sign with the dev token: %d %+v", status, ierr)
	}
	if st, body := srv.send(t, "GET", res.URI, res.Headers, nil); st != http.StatusOK || string(body) != "PAR1" {
		t.Fatalf("S3: %d %s", st, body)
	}
	// The dev policy still refuses other buckets and anonymous callers.
	if status, _, _, _ := cs.sign(t, "", signRequest{Region: testRegion, URI: styles(srv.Port)[0].object("other", "k"), Method: "GET", Headers: javaHeaders()}); status != http.StatusForbidden {
		t.Fatalf("other bucket: %d", status)
	}
	if status, _, _, _ := cs.as("").sign(t, "", signRequest{Region: testRegion, URI: styles(srv.Port)[0].object("warehouse", "k"), Method: "GET", Headers: javaHeaders()}); status != http.StatusUnauthorized {
		t.Fatalf("anonymous: %d", status)
	}
}

func mustAtoi(s string) int {
	var n int
	fmt.Sscanf(s, "%d", &n)
	return n
}
