package audit

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The crash tests re-execute the test binary as a child that writes to a
// log under load and reports every acknowledged record on stdout ("ack
// <seq> <id>", one write(2) per line, after Append returned nil). The
// parent kills it with SIGKILL, reopens the log, and checks that every
// acknowledged record is there and that verify passes.

const (
	crashDirEnv  = "COUNTERSIGN_AUDIT_CRASH_DIR"
	crashModeEnv = "COUNTERSIGN_AUDIT_CRASH_MODE"
	crashKeysEnv = "COUNTERSIGN_AUDIT_CRASH_KEYS"
)

// TestCrashChild is the child's body; it does nothing in a normal run.
func TestCrashChild(t *testing.T) {
	dir := os.Getenv(crashDirEnv)
	if dir == "" {
		t.Skip("crash-test child; runs only when re-executed by the crash tests")
	}
	keys := strings.SplitN(os.Getenv(crashKeysEnv), "\n", 2)
	cfg := testConfig(dir)
	cfg.CheckpointInterval = 10 * time.Millisecond
	if os.Getenv(crashModeEnv) == "bulk" {
		cfg.CheckpointInterval = time.Second
	}
	l, err := Open(cfg, Options{CheckpointKey: keys[0], HMACKey: []byte(keys[1])})
	if err != nil {
		fmt.Fprintln(os.Stdout, "error", err)
		os.Exit(3)
	}
	var mu sync.Mutex
	ack := func(r *Record) {
		mu.Lock()
		os.Stdout.WriteString("ack " + strconv.FormatUint(r.Seq, 10) + " " + r.ID + "\n")
		mu.Unlock()
	}
	os.Stdout.WriteString("ready\n")
	if os.Getenv(crashModeEnv) == "bulk" {
		// Many records in big batches, a checkpoint, then a few more: the
		// tail Open has to read after the kill.
		const total, per = 60_000, 2000
		for i := 0; i < total; i += per {
			recs := make([]*Record, per)
			for j := range recs {
				recs[j] = benchRecord(i + j)
			}
			if err := l.Append(context.Background(), recs...); err != nil {
				fmt.Fprintln(os.Stdout, "error", err)
				os.Exit(3)
			}
		}
		time.Sleep(1500 * time.Millisecond) // a checkpoint covers them
		for i := range 100 {
			r := benchRecord(i)
			if err := l.Append(context.Background(), r); err != nil {
				os.Exit(3)
			}
		}
		os.Stdout.WriteString("done\n")
		time.Sleep(time.Minute)
		os.Exit(0)
	}
	for g := range 32 {
		go func() {
			for i := 0; ; i++ {
				var recs []*Record
				for j := range 1 + i%3 {
					recs = append(recs, accessRecord(g*1_000_000+i*4+j))
				}
				if err := l.Append(context.Background(), recs...); err != nil {
					fmt.Fprintln(os.Stdout, "error", err)
					os.Exit(3)
				}
				for _, r := range recs {
					ack(r)
				}
			}
		}()
	}
	time.Sleep(time.Minute) // killed long before
	os.Exit(0)
}

// runCrashChild starts the child and returns its acknowledgements once
// kill says so, after SIGKILL.
func runCrashChild(t *testing.T, dir, mode string, k testKeys, kill func(acks int, line string) bool) map[uint64]string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), crashDirEnv+"="+dir, crashModeEnv+"="+mode, crashKeysEnv+"="+k.signer+"\n"+string(k.hmac))
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	acked := map[uint64]string{}
	sc := bufio.NewScanner(out)
	killed := false
	timeout := time.AfterFunc(2*time.Minute, func() { cmd.Process.Kill() })
	defer timeout.Stop()
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "ack "):
			f := strings.Fields(line)
			seq, _ := strconv.ParseUint(f[1], 10, 64)
			acked[seq] = f[2]
		case strings.HasPrefix(line, "error"):
			t.Fatalf("child: %s", line)
		}
		if !killed && kill(len(acked), line) {
			// SIGKILL: no deferred function, no Close, no flush.
			if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			killed = true
			// Keep reading: acks written before the kill are in the pipe.
		}
	}
	err = cmd.Wait()
	if !killed {
		t.Fatalf("child exited before the kill: %v", err)
	}
	return acked
}

func TestCrashKill9UnderLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("re-executes the test binary")
	}
	k := newTestKeys(t)
	dir := t.TempDir()
	all := map[uint64]string{}
	// Three crashes into the same log, killed at different points.
	for round, killAt := range []int{300, 1500, 700} {
		acked := runCrashChild(t, dir, "load", k, func(acks int, _ string) bool { return acks >= killAt })
		if len(acked) < killAt {
			t.Fatalf("round %d: only %d acks", round, len(acked))
		}
		// Before any restart, verify accepts the crashed log (a torn tail
		// of the newest segment is a warning, not an error).
		if res, err := Verify(os.DirFS(dir), VerifyOptions{Verifiers: k.verifiers}); err != nil {
			t.Fatalf("round %d: verify of the crashed log: %v", round, err)
		} else {
			t.Logf("round %d: crashed log: %d records, %d uncovered, warnings %v", round, res.Next, res.Uncovered, res.Warnings)
		}
		if round == 1 {
			// As if power failed mid-write: part of a line reached the
			// disk after the last complete one. Open must abandon the
			// segment at the last good line, not cut it off.
			tearNewestSegment(t, dir)
		}
		// Acknowledgements reuse no seq across rounds: the log only grows.
		for seq, id := range acked {
			if old, ok := all[seq]; ok && old != id {
				t.Fatalf("seq %d acknowledged as %s and later as %s", seq, old, id)
			}
			all[seq] = id
		}
		l := openLog(t, testConfig(dir), k.options())
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		res := verifyDir(t, dir, k)
		recs := checkAcked(t, dir, all)
		if round == 1 && (len(res.Abandoned) != 1 || res.Abandoned[0].IgnoredBytes != int64(len(tornBytes))) {
			t.Fatalf("the torn segment must be abandoned with its torn bytes ignored: %+v", res.Abandoned)
		}
		t.Logf("round %d: %d acked before the kill; log has %d records; abandoned %+v; events %s",
			round, len(acked), len(recs), res.Abandoned, events(recs))
	}
}

// TestOpenAfterCrashReadsOnlyTheTail: startup cost does not grow with the
// log. 60,000 records, killed; Open reads the last checkpoints file and
// the records after its last checkpoint only.
func TestOpenAfterCrashReadsOnlyTheTail(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 150 MB")
	}
	k := newTestKeys(t)
	dir := t.TempDir()
	runCrashChild(t, dir, "bulk", k, func(_ int, line string) bool { return line == "done" })
	start := time.Now()
	l := openLog(t, testConfig(dir), k.options())
	took := time.Since(start)
	scanned := l.w.scanned // written by Open before the writer started
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	t.Logf("Open after kill -9 of a %d-record log: %v, %d bytes of records read", 60_000, took, scanned)
	if scanned > 200*1024 {
		t.Fatalf("Open read %d bytes of records; only the ~100 after the last checkpoint should be read", scanned)
	}
	res := verifyDir(t, dir, k)
	if res.Next < 60_100 {
		t.Fatalf("log has %d records", res.Next)
	}
}

const tornBytes = `{"v":1,"seq":123456,"id":"00000000`

func tearNewestSegment(t *testing.T, dir string) {
	t.Helper()
	segs := segmentFiles(t, dir)
	path := segs[len(segs)-1]
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fi, _ := f.Stat()
	end, err := contentEnd(f, fi.Size())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte(tornBytes), end); err != nil {
		t.Fatal(err)
	}
}
