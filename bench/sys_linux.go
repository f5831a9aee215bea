package bench

import (
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

func isTerminal(f *os.File) bool {
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

// processCPU is this process's user+system CPU time.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// machineCPU is the CPU time all processes of the machine have used
// (/proc/stat: user, nice, system, steal), in seconds. Interrupt time is
// left out: it is mostly the kernel's loopback processing of the run's
// own traffic, which no process is charged for.
func machineCPU() float64 {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return 0
	}
	var ticks float64
	for _, i := range []int{1, 2, 3, 8} { // user nice system (idle iowait irq softirq) steal
		v, _ := strconv.ParseFloat(f[i], 64)
		ticks += v
	}
	return ticks / 100 // USER_HZ
}
