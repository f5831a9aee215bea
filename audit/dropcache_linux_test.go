package audit

import (
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// residentPages is how many of path's pages are in the page cache
// (mincore(2) of a read-only mapping, which reads nothing by itself), and
// how many it has.
func residentPages(t *testing.T, path string) (resident, pages int) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() == 0 {
		return 0, 0
	}
	m, err := unix.Mmap(int(f.Fd()), 0, int(fi.Size()), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(m)
	ps := os.Getpagesize()
	vec := make([]byte, (len(m)+ps-1)/ps)
	// x/sys/unix has no wrapper for mincore.
	if _, _, e := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&m[0])), uintptr(len(m)), uintptr(unsafe.Pointer(&vec[0]))); e != 0 {
		t.Fatal(os.NewSyscallError("mincore", e))
	}
	for _, v := range vec {
		if v&1 != 0 {
			resident++
		}
	}
	return resident, len(vec)
}

// TestSealedSegmentsLeaveThePageCache: once a segment is sealed, the
// preparer drops its pages from the page cache (prealloc.go says why),
// while the segment being written stays cached; the sealed segments still
// verify, read back from the device.
func TestSealedSegmentsLeaveThePageCache(t *testing.T) {
	dir := t.TempDir()
	var fs unix.Statfs_t
	if err := unix.Statfs(dir, &fs); err != nil {
		t.Fatal(err)
	}
	if fs.Type == unix.TMPFS_MAGIC {
		t.Skipf("%s is on tmpfs, whose pages cannot be dropped: run with TMPDIR on a disk", dir)
	}
	k := newTestKeys(t)
	cfg := testConfig(dir)
	cfg.SegmentMaxBytes = 256 << 10
	var (
		mu     sync.Mutex
		sealed []string
	)
	opts := k.options()
	opts.OnSeal = func(s SegmentInfo) {
		mu.Lock()
		sealed = append(sealed, s.Name)
		mu.Unlock()
	}
	l := openLog(t, cfg, opts)
	defer l.Close()
	// About 1,200 records of ~700 bytes: three segments sealed.
	for len(sealedNames(&mu, &sealed)) < 3 {
		appendConcurrently(t, l, 8, 50)
	}
	names := sealedNames(&mu, &sealed)
	for _, name := range names {
		path := filepath.Join(dir, name)
		waitFor(t, func() bool { r, _ := residentPages(t, path); return r == 0 })
	}
	// The control: the pages of the segment being written are cached
	// (mincore sees them), and only the sealed ones were dropped.
	cur := l.Stats().Segment
	if r, n := residentPages(t, filepath.Join(dir, cur)); n == 0 || r == 0 {
		t.Fatalf("the current segment %s has %d of %d pages cached: want its written pages cached", cur, r, n)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	verifyDir(t, dir, k)
}

func sealedNames(mu *sync.Mutex, sealed *[]string) []string {
	mu.Lock()
	defer mu.Unlock()
	return append([]string(nil), *sealed...)
}

// BenchmarkZeroFillAfterSeal is the preparer's zero-fill of the next
// segment (Log.prepare, 68 MiB for 64 MiB segments) in a row of segments
// each then sealed: renamed, and with drop its pages dropped as the
// preparer drops them (keep: left cached, as before). cpu-ms/MiB is the
// process's CPU per MiB of zeros. Run it long enough for the kept segments
// to outgrow the memory the kernel has touched lately (-benchtime 24x,
// 1.6 GB): that is what a server that has written its log for minutes
// sees, and where the two differ (prealloc.go).
//
//	go test -run '^$' -bench ZeroFillAfterSeal -benchtime 24x ./audit/
func BenchmarkZeroFillAfterSeal(b *testing.B) {
	for _, drop := range []bool{false, true} {
		name := "keep"
		if drop {
			name = "drop"
		}
		b.Run(name, func(b *testing.B) {
			dir := b.TempDir()
			cfg := testConfig(dir)
			cfg.SegmentMaxBytes = 64 << 20
			l := &Log{cfg: cfg, openFile: openOSFile, log: slog.New(slog.DiscardHandler)}
			var cpu time.Duration
			i := 0
			for b.Loop() {
				start := processCPU()
				if err := l.prepare(); err != nil {
					b.Fatal(err)
				}
				path := filepath.Join(dir, SegmentName(uint64(i)))
				if err := os.Rename(filepath.Join(dir, preallocName), path); err != nil {
					b.Fatal(err)
				}
				if drop {
					l.dropCache(path)
				}
				cpu += processCPU() - start
				i++
			}
			b.ReportMetric(float64(cpu)/1e6/(float64(b.N)*float64(l.preallocSize())/(1<<20)), "cpu-ms/MiB")
		})
	}
}
