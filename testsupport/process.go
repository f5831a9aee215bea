package testsupport

import (
	"os"
	"os/exec"
	"time"
)

// stopProcess stops a server the way its operator would: an interrupt,
// then up to 10 s for a clean exit (countersign seals its audit log),
// then a kill. It returns once the process has exited.
func stopProcess(cmd *exec.Cmd) {
	cmd.Process.Signal(os.Interrupt)
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
		<-done
	}
}
