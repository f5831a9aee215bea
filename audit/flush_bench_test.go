//go:build linux

package audit

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// BenchmarkFlushMethod compares ways to make one group-commit batch durable
// in a zero-filled segment, the log's case: a write and fdatasync (what the
// log does), the same with fdatasync as a raw syscall, a write on an
// O_DSYNC descriptor, and a block-aligned write on an O_DIRECT|O_DSYNC
// descriptor (rewriting the batch's partial first and last blocks).
// cpu-ns/op is the process's CPU per flush: on a virtual disk much of a
// flush's cost is the kernel's, not the wait; thread-cpu-ns/op is the
// flushing thread's own share, the rest the runtime's other threads.
//
//	go test -run '^$' -bench FlushMethod -benchmem ./audit/
//
// Run it with TMPDIR on the disk the log will use. On this project's test
// machine (ext4 on a virtual disk) the three are within 10-25% of each
// other idle (0.19-0.23 ms and 70-100 µs of CPU per flush), and with both
// cores busy none wins consistently (0.45-0.96 ms): the log keeps
// fdatasync, which needs no aligned buffers and works on every file
// system. bench/README.md has the numbers.
func BenchmarkFlushMethod(b *testing.B) {
	const segment = 16 << 20
	for _, batch := range []int{6 << 10, 24 << 10} { // ~8 and ~30 1 KB records
		for _, method := range []string{"fdatasync", "fdatasync_raw", "o_dsync", "o_direct"} {
			b.Run(fmt.Sprintf("%s/%dKiB", method, batch>>10), func(b *testing.B) {
				name := filepath.Join(b.TempDir(), "seg")
				zeroFill(b, name, segment)
				flag := os.O_RDWR
				switch method {
				case "o_dsync":
					flag |= unix.O_DSYNC
				case "o_direct":
					flag |= unix.O_DSYNC | unix.O_DIRECT
				}
				fd, err := unix.Open(name, flag, 0)
				if err != nil {
					b.Fatalf("open %s with %s: %v", name, method, err)
				}
				defer unix.Close(fd)
				buf := alignedBlock(batch + 2*4096)
				for i := range buf {
					buf[i] = 'a' + byte(i%26)
				}
				b.SetBytes(int64(batch))
				var off int64
				// The flushing thread's own CPU against the process's: the
				// rest is the runtime's other threads while the flush waits.
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				cpu, thread := processCPU(), threadCPU()
				for b.Loop() {
					if off+int64(batch)+4096 > segment {
						off = 0
					}
					p, at := buf[:batch], off
					if method == "o_direct" {
						at = off &^ 4095
						p = buf[:(off+int64(batch)+4095)&^4095-at]
					}
					if _, err := unix.Pwrite(fd, p, at); err != nil {
						b.Fatal(err)
					}
					switch method {
					case "fdatasync":
						if err := unix.Fdatasync(fd); err != nil {
							b.Fatal(err)
						}
					case "fdatasync_raw":
						// Without the runtime's syscall bookkeeping: the
						// thread keeps its P through the flush (what the
						// other threads' CPU per flush is made of).
						if _, _, e := unix.RawSyscall(unix.SYS_FDATASYNC, uintptr(fd), 0, 0); e != 0 {
							b.Fatal(e)
						}
					}
					off += int64(batch)
				}
				b.ReportMetric(float64(processCPU()-cpu)/float64(b.N), "cpu-ns/op")
				b.ReportMetric(float64(threadCPU()-thread)/float64(b.N), "thread-cpu-ns/op")
			})
		}
	}
}

func zeroFill(b *testing.B, name string, size int) {
	f, err := os.Create(name)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := f.Write(make([]byte, size)); err != nil {
		b.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		b.Fatal(err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
}

// alignedBlock is a buffer aligned for O_DIRECT.
func alignedBlock(n int) []byte {
	b := make([]byte, n+4096)
	skip := (4096 - int(uintptr(unsafe.Pointer(&b[0]))&4095)) & 4095
	return b[skip : skip+n]
}

// threadCPU is the calling thread's user plus system time so far.
func threadCPU() time.Duration {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_THREAD, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
