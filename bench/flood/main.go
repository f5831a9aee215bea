// Command flood measures what an anonymous client costs countersign
// (issue 14, defect 7): the audit bytes per second of a flood of refused
// requests, the connection slots idle connections hold, and the signing
// success rate of engines beside 5,000 idle connections.
//
// It starts the countersign binary it is given in development mode
// (serve -dev: nothing is sent to S3), so the same command measures an
// older build:
//
//	go build -o /tmp/countersign ./cmd/countersign
//	go run ./bench/flood -bin /tmp/countersign
//
// Idle connections come from 20 loopback source addresses (127.0.0.2 ...)
// so that per-source limits alone do not decide the outcome; raise
// `ulimit -n` above 2 x -idle + 1000.
package main

import (
	"bufio"
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

func main() {
	bin := flag.String("bin", "/tmp/countersign", "countersign binary")
	floodFor := flag.Duration("flood", 10*time.Second, "length of the anonymous flood")
	floodConns := flag.Int("flood-conns", 32, "keep-alive connections of the flood")
	idle := flag.Int("idle", 5000, "idle connections beside the engines")
	sources := flag.Int("sources", 20, "loopback source addresses of the idle connections")
	signFor := flag.Duration("sign", 6*time.Second, "how long engines sign beside the idle connections")
	engines := flag.Int("engines", 16, "engine workers; each opens a new connection every 20 requests")
	flag.Parse()
	log.SetOutput(io.Discard) // net/http's notes on unsolicited 503s

	addr, token, endpoint, auditDir, stop, err := start(*bin)
	if err != nil {
		fmt.Fprintln(os.Stderr, "flood:", err)
		os.Exit(1)
	}
	defer stop()
	body := []byte(`{"region":"us-east-1","uri":"` + endpoint + `/warehouse/t/data/x.parquet","method":"GET","headers":{}}`)

	// 1. The anonymous flood: sign requests without a token.
	before := auditBytes(auditDir)
	statuses, sent := flood(addr, body, *floodConns, *floodFor)
	time.Sleep(500 * time.Millisecond)
	grown := auditBytes(auditDir) - before
	fmt.Printf("anonymous flood: %d requests in %s over %d connections (%.0f/s), statuses %v\n",
		sent, *floodFor, *floodConns, float64(sent)/floodFor.Seconds(), statuses)
	fmt.Printf("  audit growth: %d bytes = %.0f bytes/s\n", grown, float64(grown)/floodFor.Seconds())

	// 2. Idle connections: one GET /healthz each, then nothing.
	conns, refused := openIdle(addr, *idle, *sources)
	fmt.Printf("idle connections: %d opened and answered, %d refused or unanswered\n", len(conns), refused)
	time.Sleep(time.Second)
	fmt.Printf("  slots held after 1 s: %d\n", held(conns))

	// 3. Engines beside them.
	ok, total, errs := sign(addr, token, body, *engines, *signFor)
	fmt.Printf("engines beside the idle connections: %d of %d sign requests succeeded (%.1f%%) over %s; failures %v\n",
		ok, total, 100*float64(ok)/float64(max(total, 1)), *signFor, errs)
	fmt.Printf("  slots held by the idle connections after the engines ran: %d\n", held(conns))
	time.Sleep(15*time.Second - *signFor)
	fmt.Printf("  slots held 16 s after they opened: %d\n", held(conns))
}

// start runs `bin serve -dev` and reads its banner.
func start(bin string) (addr, token, endpoint, auditDir string, stop func(), err error) {
	cmd := exec.Command(bin, "serve", "-dev")
	out, err := cmd.StdoutPipe()
	if err != nil {
		return
	}
	cmd.Stderr = io.Discard
	if err = cmd.Start(); err != nil {
		return
	}
	stop = func() { cmd.Process.Signal(os.Interrupt); cmd.Wait() }
	var banner bytes.Buffer
	sc := bufio.NewScanner(out)
	deadline := time.Now().Add(30 * time.Second)
	for sc.Scan() && time.Now().Before(deadline) {
		banner.WriteString(sc.Text() + "\n")
		if strings.HasPrefix(strings.TrimSpace(sc.Text()), "token=") {
			break
		}
	}
	go io.Copy(io.Discard, out)
	find := func(re string) string {
		if m := regexp.MustCompile(re).FindStringSubmatch(banner.String()); m != nil {
			return m[1]
		}
		return ""
	}
	addr = find(`s3\.signer\.uri=http://(\S+)`)
	token = find(`\n\s+token=(\S+)`)
	endpoint = find(`s3\.endpoint=(\S+)`)
	auditDir = find(`audit log\s+:\s+(\S+)`)
	if addr == "" || token == "" || endpoint == "" || auditDir == "" {
		stop()
		err = fmt.Errorf("could not read the dev banner:\n%s", banner.String())
	}
	return
}

// auditBytes is the audit log's content: the segments are preallocated,
// so their content ends at the first NUL byte.
func auditBytes(dir string) int64 {
	var n int64
	files, _ := filepath.Glob(filepath.Join(dir, "seg-*.jsonl"))
	for _, f := range files {
		data, _ := os.ReadFile(f)
		if i := bytes.IndexByte(data, 0); i >= 0 {
			data = data[:i]
		}
		n += int64(len(data))
	}
	return n
}

func flood(addr string, body []byte, conns int, d time.Duration) (map[int]int, int) {
	var mu sync.Mutex
	statuses := map[int]int{}
	sent := 0
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var wg sync.WaitGroup
	for range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}, Timeout: 5 * time.Second}
			defer client.CloseIdleConnections()
			for ctx.Err() == nil {
				req, _ := http.NewRequestWithContext(ctx, "POST", "http://"+addr+"/v1/aws/s3/sign", bytes.NewReader(body))
				resp, err := client.Do(req)
				code := -1
				if err == nil {
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					code = resp.StatusCode
				} else if ctx.Err() != nil {
					return
				}
				mu.Lock()
				statuses[code]++
				sent++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return statuses, sent
}

type idleConn struct {
	c  net.Conn
	br *bufio.Reader
}

func openIdle(addr string, n, sources int) ([]*idleConn, int) {
	var mu sync.Mutex
	var conns []*idleConn
	refused := 0
	sem := make(chan struct{}, 200)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			d := net.Dialer{Timeout: 5 * time.Second, LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, byte(2+i%sources))}}
			c, err := d.Dial("tcp", addr)
			if err == nil {
				c.SetDeadline(time.Now().Add(5 * time.Second))
				_, err = c.Write([]byte("GET /healthz HTTP/1.1\r\nHost: c\r\n\r\n"))
			}
			var resp *http.Response
			br := bufio.NewReader(c)
			if err == nil {
				resp, err = http.ReadResponse(br, nil)
			}
			if err == nil {
				io.Copy(io.Discard, resp.Body)
				if resp.StatusCode != 200 || resp.Close {
					err = fmt.Errorf("status %d", resp.StatusCode)
				}
			}
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				refused++
				if c != nil {
					c.Close()
				}
				return
			}
			conns = append(conns, &idleConn{c, br})
		}()
	}
	wg.Wait()
	return conns, refused
}

// held counts the idle connections the server still keeps open.
func held(conns []*idleConn) int {
	var n atomic.Int64
	var wg sync.WaitGroup
	sem := make(chan struct{}, 500)
	for _, ic := range conns {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			ic.c.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
			_, err := ic.br.Peek(1)
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				n.Add(1)
			}
		}()
	}
	wg.Wait()
	return int(n.Load())
}

func sign(addr, token string, body []byte, workers int, d time.Duration) (ok, total int, errs map[string]int) {
	var mu sync.Mutex
	errs = map[string]int{}
	deadline := time.Now().Add(d)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var client *http.Client
			for i := 0; time.Now().Before(deadline); i++ {
				if i%20 == 0 { // a new connection, as a new engine or pool does
					if client != nil {
						client.CloseIdleConnections()
					}
					client = &http.Client{Transport: &http.Transport{}, Timeout: 5 * time.Second}
				}
				req, _ := http.NewRequest("POST", "http://"+addr+"/v1/aws/s3/sign", bytes.NewReader(body))
				req.Header.Set("Authorization", "Bearer "+token)
				resp, err := client.Do(req)
				what := ""
				if err != nil {
					what = "error"
				} else {
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode != 200 {
						what = fmt.Sprint(resp.StatusCode)
					}
				}
				mu.Lock()
				total++
				if what == "" {
					ok++
				} else {
					errs[what]++
				}
				mu.Unlock()
				if err != nil {
					time.Sleep(100 * time.Millisecond) // as a client backs off
				}
			}
		}()
	}
	wg.Wait()
	return ok, total, errs
}
