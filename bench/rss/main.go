// Command rss measures the memory anonymous callers make countersign hold
// with the catalog front on: its peak resident set (VmHWM of
// /proc/<pid>/status) while
//
//   - bodies: -conns connections (512) each send one request whose body is
//     maximal (Content-Length = catalog.max_request_bytes, 16 MiB), without
//     a token, to a sign route, a forwarded catalog route, and a route
//     whose body the front reads (createTable); one fresh countersign per
//     route;
//   - answers: -answers requests (8) are answered by the catalog with a
//     maximal loadTable answer (~60 MiB of JSON, under
//     catalog.max_response_bytes), which the front reads to rewrite.
//
// It starts the countersign binary it is given (serve -dev with a catalog
// front before a stand-in catalog in this process), so the same command
// measures an older build:
//
//	go build -o /tmp/countersign ./cmd/countersign
//	go run ./bench/rss -bin /tmp/countersign
//
// A run whose resident set passes -cap (default 4 GiB) is stopped there
// and reported as "> cap": the machine is not made to swap or kill.
package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

const maxRequestBytes = 16 << 20 // catalog.max_request_bytes' default

func main() {
	bin := flag.String("bin", "/tmp/countersign", "countersign binary")
	conns := flag.Int("conns", 512, "connections sending a maximal body")
	answers := flag.Int("answers", 8, "concurrent maximal catalog answers")
	answerMiB := flag.Int("answer-mib", 60, "size of a maximal loadTable answer, MiB")
	capMiB := flag.Int("cap", 4096, "stop a run whose resident set passes this, MiB")
	only := flag.String("only", "", "run only the scenarios whose name contains this")
	flag.Parse()

	up := newCatalog(*answerMiB << 20)
	defer up.Close()
	type scenario struct {
		name string
		run  func(addr string) string
	}
	body := func(path string) func(string) string {
		return func(addr string) string { return sendBodies(addr, path, *conns) }
	}
	scenarios := []scenario{
		{"bodies: POST /v1/aws/s3/sign (sign route)", body("/v1/aws/s3/sign")},
		{"bodies: POST /v1/namespaces (forwarded, createNamespace)", body("/v1/namespaces")},
		{"bodies: POST /v1/namespaces/db/tables (read by the front, createTable)", body("/v1/namespaces/db/tables")},
		{"answers: GET /v1/namespaces/db/tables/tN (loadTable, " + strconv.Itoa(*answerMiB) + " MiB answers)", func(addr string) string {
			return loadTables(addr, *answers)
		}},
	}
	fmt.Printf("countersign %s; %d connections x %d MiB bodies; %d x %d MiB answers\n", *bin, *conns, maxRequestBytes>>20, *answers, *answerMiB)
	for _, sc := range scenarios {
		if *only != "" && !strings.Contains(sc.name, *only) {
			continue
		}
		idle, peak, capped, outcome, err := measure(*bin, up.URL, int64(*capMiB)<<20, sc.run)
		if err != nil {
			fmt.Fprintln(os.Stderr, "rss:", sc.name+":", err)
			os.Exit(1)
		}
		p := fmt.Sprintf("%d MB", peak/1e6)
		if capped {
			p = fmt.Sprintf("> %d MB (stopped at the cap)", peak/1e6)
		}
		fmt.Printf("%-80s idle %4d MB  peak %s  answers %s\n", sc.name, idle/1e6, p, outcome)
	}
}

// measure starts countersign, runs load against it while sampling its
// resident set, and returns its resident set before the load and its peak.
func measure(bin, upstream string, capBytes int64, load func(addr string) string) (idle, peak int64, capped bool, outcome string, err error) {
	dir, err := os.MkdirTemp("", "countersign-rss-")
	if err != nil {
		return
	}
	defer os.RemoveAll(dir)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return
	}
	addr := ln.Addr().String()
	ln.Close()
	cfg := filepath.Join(dir, "countersign.yaml")
	if err = os.WriteFile(cfg, []byte("listen: "+addr+"\ncatalog:\n  upstream: "+upstream+"\n"), 0o600); err != nil {
		return
	}
	cmd := exec.Command(bin, "serve", "-dev", "-config", cfg)
	cmd.Env = append(os.Environ(), "TMPDIR="+dir)
	cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
	if err = cmd.Start(); err != nil {
		return
	}
	defer func() { cmd.Process.Signal(os.Interrupt); cmd.Wait() }()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if resp, e := http.Get("http://" + addr + "/readyz"); e == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				break
			}
		}
		if time.Now().After(deadline) {
			return 0, 0, false, "", fmt.Errorf("countersign did not become ready on %s", addr)
		}
	}
	pid := cmd.Process.Pid
	time.Sleep(500 * time.Millisecond)
	idle, _ = memory(pid)
	done := make(chan string, 1)
	go func() { done <- load(addr) }()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case outcome = <-done:
			time.Sleep(200 * time.Millisecond)
			_, peak = memory(pid)
			return idle, peak, false, outcome, nil
		case <-tick.C:
			if rss, hwm := memory(pid); rss > capBytes {
				cmd.Process.Kill()
				<-done
				return idle, max(rss, hwm), true, "stopped", nil
			}
		}
	}
}

// memory is a process's resident set and its peak, from /proc.
func memory(pid int) (rss, hwm int64) {
	data, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		n, _ := strconv.ParseInt(f[1], 10, 64)
		switch f[0] {
		case "VmRSS:":
			rss = n << 10
		case "VmHWM:":
			hwm = n << 10
		}
	}
	return
}

// sendBodies opens conns connections at once; each sends a request with a
// maximal body to path, without a token, and reads the answer. It returns
// the count of each status (0: no answer, the connection ended).
func sendBodies(addr, path string, conns int) string {
	chunk := bytes.Repeat([]byte("x"), 256<<10)
	var mu sync.Mutex
	statuses := map[int]int{}
	var wg sync.WaitGroup
	start := make(chan struct{})
	for range conns {
		wg.Go(func() {
			status := 0
			defer func() { mu.Lock(); statuses[status]++; mu.Unlock() }()
			c, err := net.Dial("tcp", addr)
			if err != nil {
				return
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(60 * time.Second))
			<-start
			answered := make(chan int, 1)
			go func() {
				resp, err := http.ReadResponse(bufio.NewReader(c), nil)
				if err != nil {
					answered <- 0
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				answered <- resp.StatusCode
			}()
			fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: countersign\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", path, maxRequestBytes)
			for sent := 0; sent < maxRequestBytes; sent += len(chunk) {
				if _, err := c.Write(chunk); err != nil {
					break
				}
			}
			status = <-answered
		})
	}
	close(start)
	wg.Wait()
	return summary(statuses)
}

// loadTables asks for n tables at once; the catalog answers each with a
// maximal loadTable answer.
func loadTables(addr string, n int) string {
	var mu sync.Mutex
	statuses := map[int]int{}
	var wg sync.WaitGroup
	client := &http.Client{Timeout: 120 * time.Second}
	for i := range n {
		wg.Go(func() {
			status := 0
			defer func() { mu.Lock(); statuses[status]++; mu.Unlock() }()
			resp, err := client.Get("http://" + addr + "/v1/namespaces/db/tables/t" + strconv.Itoa(i))
			if err != nil {
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			status = resp.StatusCode
		})
	}
	wg.Wait()
	return summary(statuses)
}

func summary(statuses map[int]int) string {
	var parts []string
	for st, n := range statuses {
		parts = append(parts, fmt.Sprintf("%d x %d", n, st))
	}
	return strings.Join(parts, ", ")
}

// newCatalog is a stand-in Iceberg REST catalog (the memory under test is
// countersign's, not a catalog's): it reads and drops request bodies and
// answers 401 to requests without a token, except loadTable, which it
// answers with a table whose metadata is padded with snapshots to size
// bytes.
func newCatalog(size int) *httpServer {
	var answer []byte
	var once sync.Once
	var served atomic.Int64
	mux := http.NewServeMux()
	mux.HandleFunc("/v1/config", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"defaults":{},"overrides":{}}`)
	})
	mux.HandleFunc("GET /v1/namespaces/db/tables/{table}", func(w http.ResponseWriter, r *http.Request) {
		once.Do(func() { answer = loadTableAnswer(size) })
		served.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.Write(answer)
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		io.WriteString(w, `{"error":{"message":"Authorization required","type":"NotAuthorizedException","code":401}}`)
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	s := &http.Server{Handler: mux}
	go s.Serve(ln)
	return &httpServer{URL: "http://" + ln.Addr().String(), s: s}
}

type httpServer struct {
	URL string
	s   *http.Server
}

func (h *httpServer) Close() { h.s.Close() }

// loadTableAnswer is a LoadTableResult of about size bytes.
func loadTableAnswer(size int) []byte {
	var b bytes.Buffer
	b.WriteString(`{"metadata-location":"s3://lake/wh/db/t/metadata/00001.metadata.json","metadata":{"format-version":2,` +
		`"table-uuid":"9c12d441-03fe-4693-9a96-a0705ddf69c1","location":"s3://lake/wh/db/t","last-updated-ms":1602638573590,` +
		`"schemas":[],"current-schema-id":0,"snapshots":[`)
	for i := 0; b.Len() < size-200; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"snapshot-id":%d,"timestamp-ms":1602638573590,"manifest-list":"s3://lake/wh/db/t/metadata/snap-%d-1-7e6b2a8f.avro","summary":{"operation":"append"}}`, i+1, i+1)
	}
	b.WriteString(`]},"config":{}}`)
	return b.Bytes()
}
