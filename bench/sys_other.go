//go:build !linux

package bench

import (
	"os"
	"time"
)

func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// processCPU is not measured on this platform.
func processCPU() time.Duration { return 0 }

// machineCPU is not measured on this platform.
func machineCPU() float64 { return 0 }
