package supervisor

// Terminal attach end to end: the supervisor and runner binaries, clients on
// the terminal WebSocket over the supervisor's socket, real programs on
// real pseudo-terminals.

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/corral-dev/corral/pkg/api"
	"github.com/corral-dev/corral/pkg/client"
	"github.com/corral-dev/corral/pkg/wire"
)

// lineShell echoes what it reads, answers "size" with its terminal's size
// and ends on "exit N".
const lineShell = `echo "pid=$$"; stty -echo; echo ready
while IFS= read -r line; do
  case "$line" in
    size) stty size ;;
    exit*) exit "${line#exit }" ;;
    *) echo "got:$line" ;;
  esac
done`

func TestRealTerminalIsSharedByAnOwnerAndViewers(t *testing.T) {
	d := startTermDaemon(t)
	id := d.newSession()
	owner := d.attach(id, client.TermOptions{TermID: "work", Cols: 100, Rows: 30, Command: shell(lineShell)})
	if cols, rows := owner.Size(); owner.Role() != api.RoleOwner || cols != 100 || rows != 30 {
		t.Fatalf("owner granted %s at %dx%d", owner.Role(), cols, rows)
	}
	ro, _ := record(owner, 0, true)
	pid, err := strconv.Atoi(ro.waitOutput(t, `pid=(\d+)`))
	if err != nil {
		t.Fatal(err)
	}
	ro.waitOutput(t, "ready")

	viewer := d.attach(id, client.TermOptions{TermID: "work", ReadOnly: true})
	// Asking to own a terminal that has an owner gets a viewer's seat.
	second := d.attach(id, client.TermOptions{TermID: "work"})
	for name, v := range map[string]*client.Terminal{"viewer": viewer, "second owner": second} {
		if cols, rows := v.Size(); v.Role() != api.RoleReadOnly || cols != 100 || rows != 30 {
			t.Fatalf("%s granted %s at %dx%d", name, v.Role(), cols, rows)
		}
	}
	rv, _ := record(viewer, 0, true)
	rs, _ := record(second, 0, true)

	if err := owner.Input(termCtx(t), []byte("hello\n")); err != nil {
		t.Fatal(err)
	}
	for _, r := range []*recorder{ro, rv, rs} {
		r.waitOutput(t, "got:hello")
	}

	// A viewer's keys and resizes are refused and reach nothing.
	if err := viewer.Input(termCtx(t), []byte("intruder\n")); err != nil {
		t.Fatal(err)
	}
	if err := second.Resize(termCtx(t), 50, 10); err != nil {
		t.Fatal(err)
	}
	for _, r := range []*recorder{rv, rs} {
		r.waitFor(t, "a refusal", func(r *recorder) bool {
			return len(r.notices) == 1 && errors.Is(r.notices[0], wire.ErrConflict)
		})
	}
	if err := owner.Input(termCtx(t), []byte("after\n")); err != nil {
		t.Fatal(err)
	}
	ro.waitOutput(t, "got:after")

	// A late viewer sees the screen it joined: everything so far.
	late := d.attach(id, client.TermOptions{TermID: "work", ReadOnly: true})
	rl, _ := record(late, 0, true)
	rl.waitOutput(t, "got:after")
	if out := rl.output(); !bytes.HasPrefix(out, []byte("pid=")) {
		t.Fatalf("late viewer's replay starts with %q", clipTail(out, 40))
	}

	// The owner's resize reaches the program.
	if err := owner.Resize(termCtx(t), 120, 40); err != nil {
		t.Fatal(err)
	}
	if err := owner.Input(termCtx(t), []byte("size\n")); err != nil {
		t.Fatal(err)
	}
	for _, r := range []*recorder{ro, rv, rs, rl} {
		r.waitOutput(t, "40 120")
	}

	if err := owner.Input(termCtx(t), []byte("exit 7\n")); err != nil {
		t.Fatal(err)
	}
	for name, r := range map[string]*recorder{"owner": ro, "viewer": rv, "second": rs, "late": rl} {
		if ex, err := r.ended(t); err != nil || ex == nil || ex.Code != 7 || ex.Signal != "" {
			t.Fatalf("%s: exit %+v, err %v", name, ex, err)
		}
	}
	// One stream, whenever each joined: the replay and the live output
	// meet with no gap and no duplicate.
	want := ro.output()
	for name, r := range map[string]*recorder{"viewer": rv, "second": rs, "late": rl} {
		if got := r.output(); !bytes.Equal(got, want) {
			t.Errorf("%s saw %q\nowner saw %q", name, got, want)
		}
	}
	if bytes.Contains(want, []byte("intruder")) {
		t.Fatalf("a viewer's input reached the program: %q", want)
	}
	gone(t, pid)
}

// bgShell prints its pid and a background job's, then waits.
const bgShell = `echo "pid=$$"; sleep 1000 & echo "bg=$!"; wait`

func TestRealTerminalEndsWithItsSession(t *testing.T) {
	tests := []struct {
		name string
		end  func(d *termDaemon, id string)
		want error
	}{
		{"runner killed with SIGKILL", func(d *termDaemon, id string) {
			if err := syscall.Kill(d.runnerPID(id), syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
		}, wire.ErrRunnerCrashed},
		{"session removed", func(d *termDaemon, id string) {
			if err := d.c.DeleteSession(termCtx(t), id); err != nil {
				t.Fatal(err)
			}
		}, wire.ErrUnavailable},
		{"supervisor stopped", func(d *termDaemon, id string) { d.stop() }, wire.ErrUnavailable},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := startTermDaemon(t)
			id := d.newSession()
			owner := d.attach(id, client.TermOptions{Command: shell(bgShell)})
			viewer := d.attach(id, client.TermOptions{ReadOnly: true})
			ro, _ := record(owner, 0, true)
			rv, _ := record(viewer, 0, true)
			pid, _ := strconv.Atoi(ro.waitOutput(t, `pid=(\d+)`))
			bg, _ := strconv.Atoi(ro.waitOutput(t, `bg=(\d+)`))
			if !alive(pid) || !alive(bg) {
				t.Fatalf("the program (%d) or its job (%d) is not running", pid, bg)
			}
			runner := d.runnerPID(id)

			tc.end(d, id)
			for name, r := range map[string]*recorder{"owner": ro, "viewer": rv} {
				ex, err := r.ended(t)
				if ex != nil || !errors.Is(err, tc.want) {
					t.Fatalf("%s: exit %+v, err %v; want %v", name, ex, err, tc.want)
				}
			}
			for _, p := range []int{pid, bg, runner} {
				gone(t, p)
			}
			select {
			case <-d.exited:
			default:
				// The supervisor let go of the master it was handed.
				waitNoMasters(t, d.cmd.Process.Pid)
			}
		})
	}
}

func TestRealSlowViewerIsCutWhileTheOthersCarryOn(t *testing.T) {
	const size = 32 << 20
	d := startTermDaemon(t)
	id := d.newSession()
	owner := d.attach(id, client.TermOptions{Command: shell("stty -echo; echo ready; read go; head -c " + strconv.Itoa(size) + " /dev/zero; echo; echo done")})
	ro, _ := record(owner, 64<<10, true)
	ro.waitOutput(t, "ready")
	stalled := d.attach(id, client.TermOptions{ReadOnly: true})
	rs, resume := record(stalled, 64<<10, false)

	if err := owner.Input(termCtx(t), []byte("go\n")); err != nil {
		t.Fatal(err)
	}
	if ex, err := ro.ended(t); err != nil || ex == nil || ex.Code != 0 {
		t.Fatalf("owner: exit %+v, err %v", ex, err)
	}
	ro.mu.Lock()
	total, tail := ro.total, string(clipTail(ro.out, 16))
	ro.mu.Unlock()
	if total < size || !bytes.HasSuffix([]byte(tail), []byte("done\r\n")) {
		t.Fatalf("owner got %d bytes ending %q, want all %d and done", total, tail, size)
	}

	resume()
	ex, err := rs.ended(t)
	if ex != nil || !errors.Is(err, wire.ErrTimeout) {
		t.Fatalf("stalled viewer: exit %+v, err %v; want cut with timeout", ex, err)
	}
	if rs.total >= size {
		t.Fatalf("stalled viewer got all %d bytes", rs.total)
	}
}

// TestRealFloodReachesEveryClientExactly streams 16 MiB of numbered lines
// to two WebSocket clients. The supervisor reuses the buffers output
// arrives in once every client has sent it on, so a buffer reused too early
// would show a client lines from elsewhere in the stream: every line is
// different, and both clients must get the file byte for byte.
//
// The program writes the file in parts of 2 MiB and waits for the owner's
// go-ahead before each, which the test gives once both clients have the
// previous part. A viewer is cut when it falls 4 MiB behind the fastest
// client (docs/terminal.md), and a test's reader on a busy machine can fall
// that far behind in a flood; paced this way it never can, whatever the
// machine's load, and the buffers are still reused many times over.
func TestRealFloodReachesEveryClientExactly(t *testing.T) {
	const parts, partSize = 8, 2 << 20
	var content []byte
	var files []string
	dir := t.TempDir()
	for i := 0; len(content) < parts*partSize; i++ {
		content = fmt.Appendf(content, "%09d\n", i)
	}
	content = content[:parts*partSize]
	for p := range parts {
		file := filepath.Join(dir, fmt.Sprintf("part%d", p))
		if err := os.WriteFile(file, content[p*partSize:(p+1)*partSize], 0o600); err != nil {
			t.Fatal(err)
		}
		files = append(files, file)
	}
	d := startTermDaemon(t)
	id := d.newSession()
	// In raw mode the terminal passes every byte through as it is.
	owner := d.attach(id, client.TermOptions{Command: shell("stty raw -echo; echo ready; for f in " + strings.Join(files, " ") + "; do read go; cat $f; done")})
	ro, _ := record(owner, 0, true)
	ro.waitOutput(t, "ready")
	viewer := d.attach(id, client.TermOptions{ReadOnly: true})
	rv, _ := record(viewer, 0, true)
	rv.waitOutput(t, "ready")
	recorders := map[string]*recorder{"owner": ro, "viewer": rv}
	start := map[string]int{}
	for name, r := range recorders {
		out := r.output()
		start[name] = bytes.Index(out, []byte("ready\n")) + len("ready\n")
	}
	for p := range parts {
		if err := owner.Input(termCtx(t), []byte("go\n")); err != nil {
			t.Fatal(err)
		}
		for name, r := range recorders {
			want := start[name] + (p+1)*partSize
			r.waitFor(t, fmt.Sprintf("%s to have part %d", name, p), func(r *recorder) bool { return len(r.out) >= want })
		}
	}
	for name, r := range recorders {
		if ex, err := r.ended(t); err != nil || ex == nil || ex.Code != 0 {
			t.Fatalf("%s: exit %+v, err %v", name, ex, err)
		}
		got := r.output()
		_, after, ok := bytes.Cut(got, []byte("ready\n"))
		if !ok || !bytes.Equal(after, content) {
			t.Errorf("%s got %d bytes after ready, not the file's %d bytes (first difference at %d)",
				name, len(after), len(content), firstDifference(after, content))
		}
	}
}

// firstDifference returns the first index at which a and b differ.
func firstDifference(a, b []byte) int {
	n := min(len(a), len(b))
	for i := range n {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

func TestRealAttachedTerminalKeepsItsRunnerFromTheReaper(t *testing.T) {
	const ttl = time.Second
	d := startTermDaemon(t, "--idle-ttl", ttl.String())
	id := d.newSession()
	runner := d.runnerPID(id)
	owner := d.attach(id, client.TermOptions{Command: shell(`echo "pid=$$"; exec cat`)})
	ro, _ := record(owner, 0, true)
	pid, _ := strconv.Atoi(ro.waitOutput(t, `pid=(\d+)`))

	// Several idle times pass with the terminal attached and silent.
	time.Sleep(4 * ttl)
	if err := owner.Input(termCtx(t), []byte("still here\n")); err != nil {
		t.Fatal(err)
	}
	ro.waitOutput(t, "still here\r\nstill here")
	if !alive(runner) || d.runnerPID(id) != runner {
		t.Fatal("the runner of an attached terminal was reaped")
	}

	// Detached, the runner goes at its next idle time, and the terminal's
	// program with it.
	if err := owner.Close(); err != nil {
		t.Fatal(err)
	}
	gone(t, runner)
	gone(t, pid)
}

// A supervisor started with SIGHUP ignored (under nohup) still gives a
// terminal's program SIGHUP at its default, so the program's jobs end with
// the terminal.
func TestRealTerminalProgramDoesNotInheritAnIgnoredHangup(t *testing.T) {
	signal.Ignore(syscall.SIGHUP) // inherited by the supervisor and its runners
	d := startTermDaemon(t)
	signal.Reset(syscall.SIGHUP)
	id := d.newSession()
	term := d.attach(id, client.TermOptions{Command: shell(`grep '^SigIgn:' /proc/self/status`)})
	r, _ := record(term, 0, true)
	mask, err := strconv.ParseUint(r.waitOutput(t, `SigIgn:\s*([0-9a-f]+)`), 16, 64)
	if err != nil {
		t.Fatal(err)
	}
	if mask&(1<<(syscall.SIGHUP-1)) != 0 {
		t.Fatalf("the terminal's program ignores SIGHUP (SigIgn %x)", mask)
	}
}
