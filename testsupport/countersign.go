package testsupport

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// Countersign is a running `countersign serve`.
type Countersign struct {
	URL string        // http://127.0.0.1:PORT
	Log *LockedBuffer // its stdout and stderr, as they arrive
	Cmd *exec.Cmd
	// Stop sends SIGINT, which countersign handles as SIGTERM (finish
	// in-flight requests, seal the audit segment with a final checkpoint),
	// and waits for the process, killing it after 10 s. The test's cleanup
	// calls it too; calls after the first do nothing.
	Stop func()
}

// StartCountersign writes config (YAML text) to a file, runs `countersign
// serve -config` on it with env added to the environment, and waits (up
// to 60 s) until it logs that it is serving. It is stopped when the test
// ends.
func (s *Servers) StartCountersign(t testing.TB, config string, env ...string) *Countersign {
	t.Helper()
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "countersign.yaml")
	if err := os.WriteFile(cfgPath, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(s.CountersignBin, "serve", "-config", cfgPath)
	cmd.Env = append(os.Environ(), env...)
	logBuf := &LockedBuffer{}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout = logBuf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	addrc := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		// Long log lines must not stop the scan: that would leave stderr
		// undrained and block the server once the pipe is full.
		sc.Buffer(make([]byte, 64<<10), 4<<20)
		sent := false
		for sc.Scan() {
			line := sc.Text()
			logBuf.WriteString(line + "\n")
			if sent {
				continue
			}
			var rec struct {
				Msg  string `json:"msg"`
				Addr string `json:"addr"`
			}
			if json.Unmarshal([]byte(line), &rec) == nil && rec.Msg == "countersign serving" {
				addrc <- rec.Addr
				sent = true
			}
		}
		close(addrc)
	}()
	stop := sync.OnceFunc(func() { stopProcess(cmd) })
	t.Cleanup(stop)
	select {
	case addr, ok := <-addrc:
		if !ok {
			t.Fatalf("countersign exited before serving:\n%s", logBuf.String())
		}
		return &Countersign{URL: "http://" + addr, Log: logBuf, Cmd: cmd, Stop: stop}
	case <-time.After(60 * time.Second):
		t.Fatalf("countersign did not start:\n%s", logBuf.String())
	}
	return nil
}

// LockedBuffer is a goroutine-safe log sink. It is the twin of the main
// module's internal/syncbuf.Buffer, written again because this module does
// not require the main one (the tests' helpers build without its
// dependencies).
type LockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *LockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// WriteString appends s.
func (b *LockedBuffer) WriteString(s string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf.WriteString(s)
}

func (b *LockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
