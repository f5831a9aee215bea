package server

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/countersign/countersign/audit"
)

// Issue 20 #2: SIGTERM (Shutdown) during a keep-alive burst. Every request
// a client has sent is answered (no reset, no EOF instead of an answer),
// and every answered one is in the audit log. Clients that dial after the
// listener closed are refused at connect: they never sent anything.
func TestShutdownFinishesKeepAliveRequests(t *testing.T) {
	for round := range 3 {
		dir := t.TempDir()
		s := newTestServer(t, testPolicy, nil, Options{})
		log := openTestAuditIn(t, dir)
		s.handler.stages.Audit = log
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		go s.Serve(ln)
		url := "http://" + ln.Addr().String() + "/v1/aws/s3/sign"

		const clients = 32
		tr := &http.Transport{MaxIdleConnsPerHost: clients, MaxConnsPerHost: clients}
		defer tr.CloseIdleConnections()
		client := &http.Client{Transport: tr, Timeout: 10 * time.Second}
		var (
			mu       sync.Mutex
			answered []string
			failures []error
			refused  atomic.Int64
			n        atomic.Int64
			done     atomic.Int64 // answered so far
			wg       sync.WaitGroup
		)
		body := signBody("GET", "http://localhost:7070/lake/wh/f.parquet")
		for range clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					id := fmt.Sprintf("%024x", n.Add(1))
					req, _ := http.NewRequest("POST", url, strings.NewReader(body))
					req.Header.Set("Authorization", "Bearer "+aliceToken())
					req.Header.Set("X-Request-Id", id)
					resp, err := client.Do(req)
					if err != nil {
						if errors.Is(err, syscall.ECONNREFUSED) {
							refused.Add(1) // a new connection after the listener closed
						} else {
							mu.Lock()
							failures = append(failures, err)
							mu.Unlock()
						}
						return
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode != 200 {
						mu.Lock()
						failures = append(failures, fmt.Errorf("status %d", resp.StatusCode))
						mu.Unlock()
						return
					}
					mu.Lock()
					answered = append(answered, id)
					mu.Unlock()
					done.Add(1)
				}
			}()
		}
		// Shut down mid-burst: once the clients are well under way,
		// however slowly a loaded machine runs them (not after a fixed
		// time, which on a busy CI machine can be before the burst).
		const started = 100
		for deadline := time.Now().Add(2 * time.Minute); done.Load() < started; time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("round %d: only %d of %d requests answered in 2 minutes before the shutdown", round, done.Load(), started)
			}
		}
		if err := s.Shutdown(); err != nil {
			t.Fatalf("Shutdown: %v", err)
		}
		wg.Wait()
		if err := log.Close(); err != nil {
			t.Fatal(err)
		}
		if len(failures) > 0 {
			t.Fatalf("round %d: %d requests sent on open connections failed instead of being answered, e.g. %v (%d answered)", round, len(failures), failures[0], len(answered))
		}
		recorded := map[string]bool{}
		for _, r := range accessRecords(t, dir, audit.KindAccess) {
			recorded[r.RequestID] = true
		}
		for _, id := range answered {
			if !recorded[id] {
				t.Fatalf("answered request %s has no audit record", id)
			}
		}
		t.Logf("round %d: %d answered and recorded, %d refused at connect, 0 reset", round, len(answered), refused.Load())
	}
}
