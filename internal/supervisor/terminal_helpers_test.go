package supervisor

// Helpers of the terminal tests and benchmarks: a real supervisor binary
// serving real runners, and clients attached to its terminal WebSocket.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/testio"
	"github.com/corral-dev/corral/internal/testproc"
	"github.com/corral-dev/corral/pkg/client"
	"github.com/corral-dev/corral/pkg/wire"
)

// termDaemon is `supervisor serve` started by a test or a benchmark.
type termDaemon struct {
	tb     testing.TB
	bin    string // the supervisor binary
	cmd    *exec.Cmd
	state  string
	cwd    string
	c      *client.Client
	log    *testio.Buffer
	p      *testproc.Process
	exited <-chan struct{}
}

// startTermDaemon starts the supervisor binary on a fresh state folder with
// the real runner; extra flags are appended to serve's.
func startTermDaemon(tb testing.TB, extra ...string) *termDaemon {
	tb.Helper()
	sup, runner := realBinaries(tb)
	base := tb.TempDir()
	d := &termDaemon{tb: tb, bin: sup, state: filepath.Join(base, "state"), cwd: filepath.Join(base, "work"),
		log: &testio.Buffer{}}
	if err := os.Mkdir(d.cwd, 0o700); err != nil {
		tb.Fatal(err)
	}
	args := append([]string{"serve", "--state", d.state, "--runner", runner, "--log-level", "info", "--stop-runners-on-exit"}, extra...)
	d.cmd = exec.Command(sup, args...)
	// A terminal's default program is $SHELL: make it one that starts the
	// same everywhere, whatever rc files this machine's shell reads.
	d.cmd.Env = append(os.Environ(), "SHELL=/bin/sh")
	d.cmd.Stderr = d.log
	d.p = testproc.Start(tb, d.cmd)
	d.exited = d.p.Exited()
	tb.Cleanup(func() {
		d.stop()
		if tb.Failed() {
			tb.Logf("supervisor log:\n%s", d.logText())
		}
	})
	var err error
	if d.c, err = client.ForState(d.state); err != nil {
		tb.Fatal(err)
	}
	waitHealthy(tb, d.c, d.exited, d.logText, 30*time.Second)
	return d
}

// stop ends the supervisor with SIGTERM (SIGKILL to its group if it hangs)
// and waits for it.
func (d *termDaemon) stop() { d.p.Stop(30 * time.Second) }

func (d *termDaemon) logText() string {
	return d.log.String()
}

// newSession creates a script-engine session working in d.cwd.
func (d *termDaemon) newSession() string {
	d.tb.Helper()
	s, err := d.c.CreateSession(termCtx(d.tb), wire.Spec{Engine: "script", Cwd: d.cwd})
	if err != nil {
		d.tb.Fatalf("create: %v", err)
	}
	return s.ID
}

// runnerPID is the pid of session id's runner.
func (d *termDaemon) runnerPID(id string) int {
	d.tb.Helper()
	raw, err := os.ReadFile(filepath.Join(d.state, "sessions", id, pidFile))
	if err != nil {
		d.tb.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(raw)))
	if err != nil {
		d.tb.Fatal(err)
	}
	return pid
}

// attach attaches a client to a terminal of session id.
func (d *termDaemon) attach(id string, opts client.TermOptions) *client.Terminal {
	d.tb.Helper()
	t, err := d.c.AttachTerminal(termCtx(d.tb), id, opts)
	if err != nil {
		d.tb.Fatalf("attach %+v: %v", opts, err)
	}
	d.tb.Cleanup(func() { t.Close() })
	return t
}

func termCtx(tb testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	tb.Cleanup(cancel)
	return ctx
}

// shell is a command that runs script with sh.
func shell(script string) []string { return []string{"sh", "-c", script} }

// recorder reads one terminal client's stream in the background.
type recorder struct {
	term    *client.Terminal
	keep    int // output bytes kept (the most recent); 0 keeps all
	changed chan struct{}
	done    chan struct{}

	mu      sync.Mutex
	out     []byte
	total   int
	notices []*wire.Error
	exit    *client.TermExit
	err     error // how the stream ended, when not by the exit
}

// record starts reading t's stream until it ends. A recorder made with
// startNow false waits for resume before it reads anything, so its
// client falls behind.
func record(t *client.Terminal, keep int, startNow bool) (*recorder, func()) {
	r := &recorder{term: t, keep: keep, changed: make(chan struct{}, 1), done: make(chan struct{})}
	resume := make(chan struct{})
	var once sync.Once
	go func() {
		defer close(r.done)
		<-resume
		r.read()
	}()
	start := func() { once.Do(func() { close(resume) }) }
	if startNow {
		start()
	}
	return r, start
}

func (r *recorder) read() {
	defer r.signal()
	for {
		ev, err := r.term.Next(context.Background())
		r.mu.Lock()
		switch {
		case err != nil:
			if !errors.Is(err, io.EOF) {
				r.err = err
			}
			r.mu.Unlock()
			return
		case ev.Output != nil:
			r.total += len(ev.Output)
			r.out = append(r.out, ev.Output...)
			if r.keep > 0 && len(r.out) > 2*r.keep {
				r.out = append(r.out[:0], r.out[len(r.out)-r.keep:]...)
			}
		case ev.Notice != nil:
			r.notices = append(r.notices, ev.Notice)
		case ev.Exit != nil:
			r.exit = ev.Exit
		}
		r.mu.Unlock()
		r.signal()
	}
}

func (r *recorder) signal() {
	select {
	case r.changed <- struct{}{}:
	default:
	}
}

// waitFor waits until cond holds for the recorder's state.
func (r *recorder) waitFor(tb testing.TB, what string, cond func(r *recorder) bool) {
	tb.Helper()
	deadline := time.NewTimer(30 * time.Second)
	defer deadline.Stop()
	for {
		r.mu.Lock()
		ok := cond(r)
		r.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-r.changed:
		case <-r.done:
			r.mu.Lock()
			ok := cond(r)
			state := fmt.Sprintf("output %q, notices %v, exit %+v, err %v", clipTail(r.out, 400), r.notices, r.exit, r.err)
			r.mu.Unlock()
			if !ok {
				tb.Fatalf("stream ended before %s: %s", what, state)
			}
			return
		case <-deadline.C:
			r.mu.Lock()
			state := fmt.Sprintf("output %q, notices %v, exit %+v, err %v", clipTail(r.out, 400), r.notices, r.exit, r.err)
			r.mu.Unlock()
			tb.Fatalf("timed out waiting for %s: %s", what, state)
		}
	}
}

// waitOutput waits until the output matches re and returns the match's
// first group.
func (r *recorder) waitOutput(tb testing.TB, re string) string {
	tb.Helper()
	rx := regexp.MustCompile(re)
	var m [][]byte
	r.waitFor(tb, "output matching "+re, func(r *recorder) bool {
		m = rx.FindSubmatch(r.out)
		return m != nil
	})
	if len(m) > 1 {
		return string(m[1])
	}
	return string(m[0])
}

// ended waits for the stream's end and returns the exit and the error.
func (r *recorder) ended(tb testing.TB) (*client.TermExit, error) {
	tb.Helper()
	select {
	case <-r.done:
	case <-time.After(60 * time.Second):
		tb.Fatal("the terminal stream did not end")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.exit, r.err
}

func (r *recorder) output() []byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return bytes.Clone(r.out)
}

func clipTail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

// alive reports whether pid runs (a zombie does not).
func alive(pid int) bool {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(raw)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	return len(f) > 0 && f[0] != "Z"
}
