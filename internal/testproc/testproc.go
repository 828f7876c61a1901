// Package testproc runs a program a test needs as a process of its own (a
// supervisor, a NATS server, a daemon in a child test binary): in its own
// process group and dying with the test process (proc.Configure), its end
// watched, stopped with SIGTERM or killed with SIGKILL when the test says.
package testproc

import (
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/proc"
)

// Process is a started program.
type Process struct {
	cmd    *exec.Cmd
	exited chan struct{}
	err    error
}

// Start configures and starts cmd, failing the test if it cannot start.
func Start(tb testing.TB, cmd *exec.Cmd) *Process {
	tb.Helper()
	proc.Configure(cmd)
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	p := &Process{cmd: cmd, exited: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.exited)
	}()
	return p
}

// Exited is closed once the process has ended and its output is read.
func (p *Process) Exited() <-chan struct{} { return p.exited }

// Err is how the process ended (exec.Cmd.Wait's error), once Exited is
// closed.
func (p *Process) Err() error {
	<-p.exited
	return p.err
}

// Pid is the process's id, which is also its process group's.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Stop sends the process SIGTERM and waits for it; if it has not ended
// within grace, it kills its whole group and waits. It reports whether it
// had to kill.
func (p *Process) Stop(grace time.Duration) (killed bool) {
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
		return false
	case <-time.After(grace):
		proc.KillGroup(p.Pid())
		<-p.exited
		return true
	}
}

// Kill sends the process SIGKILL, as a crash would, and waits for it.
func (p *Process) Kill() {
	p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.exited
}
