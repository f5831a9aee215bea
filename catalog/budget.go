package catalog

import (
	"errors"
	"io"
	"net/http"

	"golang.org/x/sync/semaphore"
)

// Every answer the front reads (to clean or rewrite it, or to learn a
// table's location) is held whole while it is read and rewritten. The
// answers being read at once share one budget of bytes,
// catalog.answer_budget_bytes: a read takes its bytes from it as they
// arrive, chunk by chunk, and gives them back when the answer has been
// handed on. A read that finds the budget spent is answered 503 with
// Retry-After instead of waiting, so that slow or large answers cannot
// hold the process's memory beyond the budget (plus the rewritten copy,
// at most about as large again).

var (
	errAnswerBudget   = errors.New("the budget for catalog answers being read (catalog.answer_budget_bytes) is spent")
	errAnswerTooLarge = errors.New("the catalog's answer is larger than catalog.max_response_bytes")
)

// answerChunk is the unit read and charged to the budget at a time.
const answerChunk = 64 << 10

// readAnswer reads an answer's body whole, within max_response_bytes and
// the shared budget; release gives the bytes back to the budget (call it
// once the body is no longer needed, also on error).
func (f *Front) readAnswer(resp *http.Response) (data []byte, release func(), err error) {
	return readBudgeted(resp.Body, f.budget, f.cfg.MaxResponseBytes)
}

func readBudgeted(r io.Reader, budget *semaphore.Weighted, limit int64) ([]byte, func(), error) {
	var held int64
	release := func() {
		if held > 0 {
			budget.Release(held)
			held = 0
		}
	}
	var buf []byte
	for {
		if int64(len(buf)) > limit {
			return nil, release, errAnswerTooLarge
		}
		if len(buf) == cap(buf) {
			grow := int64(answerChunk)
			if int64(cap(buf)) > grow {
				grow = int64(cap(buf)) // double, as append would
			}
			if room := limit + answerChunk - int64(cap(buf)); grow > room {
				grow = room // enough to see that the answer is over the limit
			}
			if !budget.TryAcquire(grow) {
				return nil, release, errAnswerBudget
			}
			held += grow
			nb := make([]byte, len(buf), int64(cap(buf))+grow)
			copy(nb, buf)
			buf = nb
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			if int64(len(buf)) > limit {
				return nil, release, errAnswerTooLarge
			}
			return buf, release, nil
		}
		if err != nil {
			return nil, release, err
		}
	}
}
