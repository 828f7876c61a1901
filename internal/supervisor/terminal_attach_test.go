package supervisor

// `supervisor attach` driven through tmux: a real terminal (a tmux pane)
// running a shell, into which the test types, and whose screen it reads.

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/testenv"
)

// tmuxPane is a shell in a detached tmux session of its own server.
type tmuxPane struct {
	t    *testing.T
	sock string
}

func startTmuxPane(t *testing.T, cols, rows int, env ...string) *tmuxPane {
	t.Helper()
	testenv.NeedTmux(t)
	p := &tmuxPane{t: t, sock: filepath.Join(t.TempDir(), "tmux.sock")}
	args := []string{"new-session", "-d", "-s", "outer", "-x", strconv.Itoa(cols), "-y", strconv.Itoa(rows)}
	for _, kv := range env {
		args = append(args, "-e", kv)
	}
	p.run(append(args, "sh")...)
	t.Cleanup(func() { exec.Command("tmux", "-S", p.sock, "kill-server").Run() })
	p.waitScreen("a shell prompt", func(s string) bool { return strings.ContainsAny(s, "#$") })
	// A prompt of its own (a shell run by root ignores one from the
	// environment), typed so the command line itself does not show it.
	p.typeLine("PS1='out''er$ '")
	p.waitText("outer$")
	return p
}

func (p *tmuxPane) run(args ...string) string {
	p.t.Helper()
	out, err := exec.Command("tmux", append([]string{"-S", p.sock, "-f", "/dev/null"}, args...)...).CombinedOutput()
	if err != nil {
		p.t.Fatalf("tmux %v: %v: %s", args, err, out)
	}
	return string(out)
}

func (p *tmuxPane) screen() string { return p.run("capture-pane", "-p", "-t", "outer") }

// typeLine types s and Enter into the pane.
func (p *tmuxPane) typeLine(s string) {
	p.t.Helper()
	p.run("send-keys", "-t", "outer", "-l", s)
	p.run("send-keys", "-t", "outer", "Enter")
}

func (p *tmuxPane) waitScreen(what string, ok func(string) bool) {
	p.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		s := p.screen()
		if ok(s) {
			return
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("the screen never showed %s:\n%s", what, s)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (p *tmuxPane) waitText(text string) {
	p.t.Helper()
	p.waitScreen(text, func(s string) bool { return strings.Contains(s, text) })
}

func TestRealAttachInATerminal(t *testing.T) {
	d := startTermDaemon(t)
	id := d.newSession()
	files := t.TempDir()
	before, after := filepath.Join(files, "before"), filepath.Join(files, "after")
	p := startTmuxPane(t, 100, 30, "CORRAL_STATE="+d.state)

	p.typeLine("stty -g > " + before)
	p.typeLine(d.bin + " attach " + id)
	p.waitText("[attached to " + id + "/main; detach with Ctrl-] then q]")

	// Typing reaches the session's shell, and its output the screen.
	p.typeLine("echo inner-$((6*7))")
	p.waitText("inner-42")
	// The terminal has the pane's size, and follows it.
	p.typeLine("stty size")
	p.waitText("30 100")
	p.run("resize-window", "-t", "outer", "-x", "90", "-y", "25")
	// The new size travels (SIGWINCH, the attach client, the supervisor,
	// the runner) while the shell may already be running what is typed
	// next, as in any terminal: ask until the shell sees it.
	for deadline := time.Now().Add(30 * time.Second); !strings.Contains(p.screen(), "25 90"); {
		if time.Now().After(deadline) {
			t.Fatalf("the session's terminal never took the pane's new size:\n%s", p.screen())
		}
		p.typeLine("stty size")
		p.waitText("stty size") // typed and echoed; its answer follows
		time.Sleep(200 * time.Millisecond)
	}

	// Ctrl-] q detaches and gives the outer shell its terminal back as it
	// was: same settings, echo and line editing working.
	p.run("send-keys", "-t", "outer", "C-]")
	p.run("send-keys", "-t", "outer", "q")
	p.waitText("[detached from " + id + "/main; the program keeps running]")
	p.typeLine("stty -g > " + after + "; echo outer-$((2+3))")
	p.waitText("outer-5")
	b, errB := os.ReadFile(before)
	a, errA := os.ReadFile(after)
	if errB != nil || errA != nil || len(b) == 0 || !bytes.Equal(a, b) {
		t.Fatalf("terminal settings before attach %q (%v), after detach %q (%v)", b, errB, a, errA)
	}

	// The session's shell kept running: a viewer attaching sees it again.
	p.typeLine("clear")
	p.waitScreen("a cleared screen", func(s string) bool { return !strings.Contains(s, "inner-42") })
	p.typeLine(d.bin + " attach --read-only " + id)
	p.waitText("[watching " + id + "/main read-only; detach with Ctrl-] then q]")
	p.waitText("inner-42")
	p.run("send-keys", "-t", "outer", "C-]", "q")
	p.waitText("[detached from")

	// A program's exit status is attach's.
	p.typeLine(d.bin + " attach --term once " + id + " -- sh -c 'echo bye; exit 3'; echo status=$?")
	p.waitText("status=3")
}

func TestRealAttachNeedsATerminal(t *testing.T) {
	d := startTermDaemon(t)
	id := d.newSession()
	cmd := exec.Command(d.bin, "attach", "--state", d.state, id)
	var stderr bytes.Buffer
	cmd.Stdin, cmd.Stderr = nil, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(stderr.String(), "not a terminal") {
		t.Fatalf("attach without a terminal: %v, stderr %q", err, stderr.String())
	}
}
