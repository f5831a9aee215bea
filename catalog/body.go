package catalog

import (
	"bytes"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/valyala/fasthttp"
	"golang.org/x/sync/semaphore"
)

// heldBodies is how many maximal request bodies (catalog.max_request_bytes)
// the front holds in memory at once, summed over the requests whose body
// it reads whole: its budget of buffered request bytes.
const heldBodies = 4

// requestBody is the body a forwarded request sends the catalog. Read
// whole (whole set) on the routes whose body the front reads itself, under
// the front's budget of held bytes; streamed from the client otherwise,
// never held. close detaches it from the client's connection and returns
// its bytes to the budget: it is called once the front is done with the
// request, before the connection serves the next one.
type requestBody struct {
	whole  []byte
	stream *clientBody // nil when whole, or when there is no stream
	length int64       // -1: unknown (chunked), sent chunked
	held   int64
	budget *semaphore.Weighted // nil: nothing held
}

// bodyRefusal is why a request body is not forwarded: an answer.
type bodyRefusal struct {
	status     int
	msg        string
	retryAfter int
}

// requestBody takes the request's body as the route needs it: whole when
// whole is set (a createTable's or registerTable's, which the front reads),
// streamed otherwise. Bodies over catalog.max_request_bytes are refused
// before a byte of them is read when their length is declared, and cut
// off (the catalog gets a broken request) when it is not.
func (f *Front) requestBody(ctx *fasthttp.RequestCtx, whole bool) (*requestBody, *bodyRefusal) {
	limit := f.cfg.MaxRequestBytes
	tooLarge := &bodyRefusal{http.StatusRequestEntityTooLarge,
		"catalog request body is larger than the configured limit of " + strconv.Itoa(limit) + " bytes (catalog.max_request_bytes)", 0}
	stream := ctx.RequestBodyStream()
	if stream == nil {
		// The server read it (within its own limit).
		b := ctx.PostBody()
		if len(b) > limit {
			return nil, tooLarge
		}
		return &requestBody{whole: b, length: int64(len(b))}, nil
	}
	n := ctx.Request.Header.ContentLength()
	if n > limit {
		return nil, tooLarge // unread: the server closes the connection after the answer
	}
	if !whole {
		if n < 0 {
			n = -1
		}
		return &requestBody{stream: &clientBody{r: stream, left: int64(limit), conn: ctx.Conn()}, length: int64(n)}, nil
	}
	held := int64(n)
	if n < 0 {
		held = int64(limit)
	}
	if !f.bodies.TryAcquire(held) {
		return nil, &bodyRefusal{http.StatusServiceUnavailable,
			"countersign is holding its limit of " + strconv.FormatInt(heldBodies*int64(limit), 10) + " bytes of catalog request bodies it reads (" +
				strconv.Itoa(heldBodies) + " x catalog.max_request_bytes); retry", 1}
	}
	b := &requestBody{held: held, budget: f.bodies}
	var err error
	if n >= 0 {
		b.whole = make([]byte, n)
		_, err = io.ReadFull(stream, b.whole)
	} else {
		b.whole, err = io.ReadAll(io.LimitReader(stream, int64(limit)+1))
		if err == nil && len(b.whole) > limit {
			b.close()
			return nil, tooLarge
		}
	}
	if err != nil {
		b.close()
		return nil, &bodyRefusal{http.StatusBadRequest, "the request body broke off: " + err.Error(), 0}
	}
	b.length = int64(len(b.whole))
	ctx.Request.SetBodyRaw(b.whole) // what the answer's treatment reads
	return b, nil
}

// reader is the body as the upstream request sends it; nil for none.
func (b *requestBody) reader() io.Reader {
	switch {
	case b.stream != nil && b.length != 0:
		return b.stream
	case len(b.whole) > 0:
		return bytes.NewReader(b.whole)
	}
	return nil
}

func (b *requestBody) close() {
	if b.stream != nil {
		b.stream.detach()
	}
	if b.budget != nil {
		b.budget.Release(b.held)
		b.budget = nil
	}
}

// clientBody streams a client's body to the catalog: at most left bytes
// (more is an error, which breaks off the upstream request), and nothing
// once detached. The upstream transport may still be reading when the
// front answers (a catalog that answers before the body is sent): a read
// waiting for the client then is ended by a read deadline in the past,
// which also ends the connection, and detaching waits for it, so the
// client's connection is never read from once the server has it back.
type clientBody struct {
	mu       sync.Mutex
	r        io.Reader
	left     int64
	detached bool
	conn     net.Conn
}

var errBodyDetached = errors.New("the catalog request is over")

func (c *clientBody) Read(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.detached {
		return 0, errBodyDetached
	}
	if int64(len(p)) > c.left+1 {
		p = p[:c.left+1]
	}
	n, err := c.r.Read(p)
	c.left -= int64(n)
	if c.left < 0 {
		return 0, errors.New("catalog request body is larger than catalog.max_request_bytes")
	}
	return n, err
}

func (c *clientBody) detach() {
	if !c.mu.TryLock() {
		if c.conn != nil {
			c.conn.SetReadDeadline(time.Now()) //nolint:errcheck // a closed connection ends the read too
		}
		c.mu.Lock()
	}
	c.detached = true
	c.mu.Unlock()
}
