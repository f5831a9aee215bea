//go:build linux

package audit

import (
	"fmt"
	"os"
	"testing"
	"time"
)

// BenchmarkAppendCPU is the process's CPU per durable record, user plus
// system (getrusage), at 64 concurrent appenders of one signed record
// each, the server's shape: the callers' side, the writer's, the kernel's
// write and fdatasync, and whatever the scheduler burns while everyone
// waits for the flush. The log is on the local disk (the test's TMPDIR)
// and on tmpfs (/dev/shm: the flush is free). cpu-ns/record is what the
// audit adds to a signed request's server CPU; ns/op is wall time per
// record and depends on the disk and the machine's load far more. The
// segment (64 MiB) does not rotate within a run: rotation and the
// background zero-fill of the next segment are per segment, not per
// record. delay is Config.CommitDelay; sync=syscall is Config.SyncMode
// syscall against the default keep_p (with no other work for the Ps, the
// runtime hands no P off here either way: the difference shows in situ,
// bench/README.md "Flushing in place").
//
//	go test -run '^$' -bench AppendCPU -benchmem ./audit/
func BenchmarkAppendCPU(b *testing.B) {
	const writers = 64
	for _, where := range []string{"disk", "tmpfs"} {
		for _, v := range []struct {
			delay time.Duration
			sync  string
		}{{0, ""}, {0, SyncSyscall}, {100 * time.Microsecond, ""}, {300 * time.Microsecond, ""}} {
			delay := v.delay
			name := fmt.Sprintf("%s/delay=%s", where, delay)
			if v.sync != "" {
				name += "/sync=" + v.sync
			}
			b.Run(name, func(b *testing.B) {
				dir := b.TempDir()
				if where == "tmpfs" {
					d, err := os.MkdirTemp("/dev/shm", "audit-cpu-bench-")
					if err != nil {
						b.Fatalf("tmpfs: %v", err)
					}
					b.Cleanup(func() { os.RemoveAll(d) })
					dir = d
				}
				k := newTestKeys(b)
				cfg := testConfig(dir)
				cfg.SegmentMaxBytes = 64 << 20
				cfg.CheckpointInterval = time.Second
				cfg.CommitDelay = delay
				cfg.SyncMode = v.sync
				l := openLog(b, cfg, k.options())
				defer l.Close()
				// The next segment's zero-fill runs in the background after
				// Open; once per segment in a server, it is not a record's.
				for !l.prep.ready.Load() {
					time.Sleep(time.Millisecond)
				}
				recs := make([]*Record, writers)
				for i := range recs {
					recs[i] = signedRecord(i)
				}
				before := l.Stats()
				run := appenders(b, l, recs)
				b.ReportAllocs()
				b.ResetTimer()
				cpu0 := processCPU()
				run()
				cpu := processCPU() - cpu0
				b.StopTimer()
				after := l.Stats()
				b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/record")
				if n := after.Batches - before.Batches; n > 0 {
					b.ReportMetric(float64(after.Records-before.Records)/float64(n), "records/batch")
				}
			})
		}
	}
}
