package e2e

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// wireReq is an HTTP/1.1 request exactly as it goes on the wire: the
// oracle writes it itself, because net/http trims header values and
// orders headers, and the mutations are about precisely those bytes.
type wireReq struct {
	method  string
	target  string // path and query, as sent
	headers []wireHeader
	body    []byte
	chunked bool // send the body with Transfer-Encoding: chunked
}

type wireHeader struct{ name, value string }

type wireResp struct {
	status int
	header http.Header
	body   []byte
}

func (r wireReq) clone() wireReq {
	c := r
	c.headers = slices.Clone(r.headers)
	c.body = slices.Clone(r.body)
	return c
}

// get returns the values of the header name (case-insensitive).
func (r wireReq) get(name string) []string {
	var vs []string
	for _, h := range r.headers {
		if strings.EqualFold(h.name, name) {
			vs = append(vs, h.value)
		}
	}
	return vs
}

// wireFromSigned is the request a client sends after signing: the signed
// URI's authority as Host, its path and query as the target, every header
// of the sign result (sorted by name, for a deterministic order).
func wireFromSigned(method string, res *signResult, body []byte) wireReq {
	rest := strings.TrimPrefix(res.URI, "http://")
	slash := strings.IndexByte(rest, '/')
	r := wireReq{method: method, target: rest[slash:], body: body}
	r.headers = append(r.headers, wireHeader{"Host", rest[:slash]})
	names := make([]string, 0, len(res.Headers))
	for n := range res.Headers {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		switch strings.ToLower(n) {
		case "host", "content-length":
			continue // Host is above; the length is the body's
		}
		for _, v := range res.Headers[n] {
			r.headers = append(r.headers, wireHeader{n, v})
		}
	}
	return r
}

// rawSend writes r to the loopback port and reads the answer.
func rawSend(port int, r wireReq) (wireResp, error) {
	conn, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(port), 5*time.Second)
	if err != nil {
		return wireResp{}, err
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(20 * time.Second))
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s %s HTTP/1.1\r\n", r.method, r.target)
	for _, h := range r.headers {
		fmt.Fprintf(&b, "%s:%s\r\n", h.name, headerValueOnWire(h.value))
	}
	switch {
	case r.chunked:
		b.WriteString("Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n")
		if len(r.body) > 0 {
			fmt.Fprintf(&b, "%x\r\n%s\r\n", len(r.body), r.body)
		}
		b.WriteString("0\r\n\r\n")
	default:
		if len(r.body) > 0 || r.method == "PUT" || r.method == "POST" {
			fmt.Fprintf(&b, "Content-Length: %d\r\n", len(r.body))
		}
		b.WriteString("Connection: close\r\n\r\n")
		b.Write(r.body)
	}
	if _, err := conn.Write(b.Bytes()); err != nil {
		return wireResp{}, err
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), &http.Request{Method: r.method})
	if err != nil {
		return wireResp{}, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return wireResp{}, err
	}
	return wireResp{status: resp.StatusCode, header: resp.Header, body: data}, nil
}

// headerValueOnWire puts the one space clients write after the colon,
// unless the value already starts with whitespace (a mutation's).
func headerValueOnWire(v string) string {
	if v != "" && (v[0] == ' ' || v[0] == '\t') {
		return v
	}
	return " " + v
}
