package supervisor

// The supervisor reads a terminal the runner handed over (term.open with
// export). What the other terminal tests check holds for it too; these
// check what is particular to it.

import (
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/corral-dev/corral/pkg/client"
)

// TestRealTerminalKeepsItsScrollbackWhileNobodyWatches: the output the
// supervisor read goes back to the runner, with the terminal, when the last
// client leaves; a client that comes back sees it, and what the program
// printed meanwhile.
func TestRealTerminalKeepsItsScrollbackWhileNobodyWatches(t *testing.T) {
	d := startTermDaemon(t)
	id := d.newSession()
	const script = `stty -echo; echo ready; read a; echo "first:$a"; read b; sleep 0.2; echo "second:$b"; read c; echo "third:$c"`
	first := d.attach(id, client.TermOptions{TermID: "keep", Command: shell(script)})
	r1, _ := record(first, 0, true)
	r1.waitOutput(t, "ready")
	if err := first.Input(termCtx(t), []byte("one\n")); err != nil {
		t.Fatal(err)
	}
	r1.waitOutput(t, "first:one")
	// The program answers this after its last client has gone.
	if err := first.Input(termCtx(t), []byte("two\n")); err != nil {
		t.Fatal(err)
	}
	first.Close()
	<-r1.done

	time.Sleep(400 * time.Millisecond)
	again := d.attach(id, client.TermOptions{TermID: "keep"})
	r2, _ := record(again, 0, true)
	r2.waitOutput(t, "first:one")
	r2.waitOutput(t, "second:two")
	if err := again.Input(termCtx(t), []byte("three\n")); err != nil {
		t.Fatal(err)
	}
	r2.waitOutput(t, "third:three")
	if exit, err := r2.ended(t); err != nil || exit == nil || exit.Code != 0 {
		t.Fatalf("exit %+v, err %v", exit, err)
	}
	// The supervisor let go of the terminal once it ended.
	waitNoMasters(t, d.cmd.Process.Pid)
}

// TestRealTerminalExitIsNotHeldByAProcessThatLeftItsSession: a process that
// left the program's session keeps the terminal open, so the read of its
// output never ends; the exit still reaches the client, after a grace.
func TestRealTerminalExitIsNotHeldByAProcessThatLeftItsSession(t *testing.T) {
	d := startTermDaemon(t)
	id := d.newSession()
	owner := d.attach(id, client.TermOptions{TermID: "escape", Command: shell(`setsid sleep 60 & echo "escaped=$!"; sleep 0.2; exit 7`)})
	r, _ := record(owner, 0, true)
	escaped, err := strconv.Atoi(r.waitOutput(t, `escaped=(\d+)`))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(escaped, syscall.SIGKILL) })
	if exit, err := r.ended(t); err != nil || exit == nil || exit.Code != 7 {
		t.Fatalf("exit %+v, err %v; want exit 7", exit, err)
	}
	waitNoMasters(t, d.cmd.Process.Pid)
}

// waitNoMasters waits until process pid holds no pseudo-terminal master.
func waitNoMasters(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		held := mastersHeld(t, pid)
		if held == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("process %d still holds %d pseudo-terminal masters", pid, held)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// mastersHeld counts the descriptors of process pid open on /dev/ptmx.
func mastersHeld(t *testing.T, pid int) int {
	t.Helper()
	dir := filepath.Join("/proc", strconv.Itoa(pid), "fd")
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range entries {
		if target, err := os.Readlink(filepath.Join(dir, e.Name())); err == nil && (target == "/dev/ptmx" || target == "/dev/pts/ptmx") {
			n++
		}
	}
	return n
}
