package syncbuf

import (
	"strings"
	"sync"
	"testing"
)

// TestConcurrentWriteAndRead: writers and a reader at once (run with
// -race), and every write is in the end.
func TestConcurrentWriteAndRead(t *testing.T) {
	var b Buffer
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 100 {
				b.Write([]byte("x"))
				_ = b.String()
			}
		})
	}
	wg.Wait()
	if got := b.String(); got != strings.Repeat("x", 400) {
		t.Fatalf("%d bytes, want 400", len(got))
	}
}
