package term

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
)

func TestOwnerAndViewersSeeIdenticalBytes(t *testing.T) {
	h := newTestHub(t, HubOptions{})
	owner, g, ownerOut := attach(t, h, AttachRequest{TermID: "t", ClientID: "owner", Role: RoleOwner,
		Command: shell(`read go; seq 1 3000; echo done`)})
	if g.Role != RoleOwner || !g.Created {
		t.Fatalf("first owner got %+v, want a created terminal with role owner", g)
	}
	_, _, viewer1 := attach(t, h, AttachRequest{TermID: "t", ClientID: "v1", Role: RoleReadOnly})
	_, _, viewer2 := attach(t, h, AttachRequest{TermID: "t", ClientID: "v2", Role: RoleReadOnly})
	input(t, owner, "go\n")

	for name, r := range map[string]*recorder{"owner": ownerOut, "viewer 1": viewer1, "viewer 2": viewer2} {
		r.checkExit(t, name, 0, "")
	}
	if ownerOut.grant != g {
		t.Errorf("Opened(%+v), but Attach granted %+v", ownerOut.grant, g)
	}
	want := ownerOut.output()
	if !strings.Contains(want, "\r\n3000\r\ndone\r\n") {
		t.Fatalf("owner output lacks the program's output: %q", tail(want))
	}
	for name, r := range map[string]*recorder{"viewer 1": viewer1, "viewer 2": viewer2} {
		if got := r.output(); got != want {
			t.Errorf("%s saw %d bytes differing from the owner's %d", name, len(got), len(want))
		}
	}
}

func TestReadOnlyInputNeverReachesProgram(t *testing.T) {
	h := newTestHub(t, HubOptions{})
	owner, _, ownerOut := attach(t, h, AttachRequest{TermID: "t", ClientID: "owner", Role: RoleOwner,
		Command: shell(`stty -echo; echo ready; while read l; do echo "got:$l"; done`)})
	viewer, g, viewerOut := attach(t, h, AttachRequest{TermID: "t", ClientID: "viewer", Role: RoleReadOnly})
	if g.Role != RoleReadOnly {
		t.Fatalf("viewer granted %q", g.Role)
	}
	ownerOut.waitForText(t, "ready")

	if err := viewer.Input([]byte("secret\n")); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("viewer input: got %v, want ErrReadOnly", err)
	}
	if err := viewer.Resize(10, 10); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("viewer resize: got %v, want ErrReadOnly", err)
	}
	// Input is read in order, so had the viewer's line reached the program
	// it would be answered before the owner's.
	input(t, owner, "hello\n")
	viewerOut.waitForText(t, "got:hello")
	for name, r := range map[string]*recorder{"owner": ownerOut, "viewer": viewerOut} {
		if out := r.output(); strings.Contains(out, "secret") {
			t.Errorf("%s saw the viewer's input: %q", name, out)
		}
	}
}

var errNoLines = errors.New("no complete line")

// numberedLines parses a stream of "N\r\n" lines, dropping a trailing
// partial line, and reports the first break in the +1 sequence.
func numberedLines(out string) (first, last int, err error) {
	lines := strings.Split(out, "\r\n")
	lines = lines[:len(lines)-1]
	if len(lines) == 0 {
		return 0, 0, errNoLines
	}
	for i, l := range lines {
		n, err := strconv.Atoi(l)
		if err != nil {
			return 0, 0, fmt.Errorf("line %d is %q, not a number", i, l)
		}
		if i == 0 {
			first = n
		} else if n != last+1 {
			return 0, 0, fmt.Errorf("line %d: %d follows %d", i, n, last)
		}
		last = n
	}
	return first, last, nil
}

func TestLateViewerGetsScrollbackThenLiveWithoutGapOrDuplicate(t *testing.T) {
	const scrollback = 4 << 10
	h := newTestHub(t, HubOptions{ScrollbackBytes: scrollback})
	_, _, ownerOut := attach(t, h, AttachRequest{TermID: "t", ClientID: "owner", Role: RoleOwner,
		Command: shell(`i=0; while :; do i=$((i+1)); echo $i; done`)})
	// Join once the scrollback has wrapped, while output is still flowing.
	ownerOut.waitForText(t, "\r\n3000\r\n")
	_, g, viewerOut := attach(t, h, AttachRequest{TermID: "t", ClientID: "late", Role: RoleReadOnly})
	if g.Created {
		t.Fatal("the late viewer started a new terminal; the program ended early")
	}
	// Stop at a break in the sequence too; the check below reports it.
	viewerOut.waitFor(t, "20000 numbers past the replay", func(out string) bool {
		first, last, err := numberedLines(out)
		return err == nil && last >= first+20000 || err != nil && !errors.Is(err, errNoLines)
	})
	if err := h.Close(); err != nil {
		t.Fatalf("close hub: %v", err)
	}

	// The replay is a prefix of the viewer's stream and live output follows
	// it, so one unbroken count across the whole stream, with the replay
	// ending well inside it, rules out a gap or a repeat at the seam.
	out := viewerOut.output()
	first, last, err := numberedLines(out)
	if err != nil {
		t.Fatalf("late viewer's stream is not continuous: %v", err)
	}
	if g.ReplayBytes == 0 || g.ReplayBytes > scrollback {
		t.Fatalf("replay of %d bytes; want some, at most the %d byte scrollback", g.ReplayBytes, scrollback)
	}
	if _, replayLast, err := numberedLines(out[:g.ReplayBytes]); err != nil || replayLast >= last {
		t.Errorf("replay ends at %d (%v); the stream goes on to %d", replayLast, err, last)
	}
	if first <= 1 {
		t.Errorf("replay starts at %d; the wrapped scrollback should have lost the start", first)
	}
	if ownerFirst, _, err := numberedLines(ownerOut.output()); err != nil || ownerFirst != 1 {
		t.Errorf("owner's stream starts at %d, %v; want a continuous count from 1", ownerFirst, err)
	}
}

func TestResizeReachesProgram(t *testing.T) {
	tests := []struct {
		name string
		// first attaches and creates the terminal; second joins it.
		first, second AttachRequest
		resize        [2]uint16 // cols, rows the owner resizes to; zero for none
		want          string    // `stty size` after the joins and resize
	}{
		{
			name:   "owner resizes",
			first:  AttachRequest{ClientID: "owner", Role: RoleOwner, Cols: 100, Rows: 30},
			second: AttachRequest{ClientID: "viewer", Role: RoleReadOnly, Cols: 50, Rows: 10},
			resize: [2]uint16{132, 43},
			want:   "43 132",
		},
		{
			name:   "owner joining sizes the terminal",
			first:  AttachRequest{ClientID: "viewer", Role: RoleReadOnly, Cols: 100, Rows: 30},
			second: AttachRequest{ClientID: "owner", Role: RoleOwner, Cols: 90, Rows: 20},
			want:   "20 90",
		},
		{
			name:   "viewer joining leaves the size alone",
			first:  AttachRequest{ClientID: "owner", Role: RoleOwner, Cols: 100, Rows: 30},
			second: AttachRequest{ClientID: "viewer", Role: RoleReadOnly, Cols: 50, Rows: 10},
			want:   "30 100",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newTestHub(t, HubOptions{})
			tt.first.TermID, tt.second.TermID = "t", "t"
			tt.first.Command = shell(`stty -echo; stty size; while read l; do echo "size:$(stty size)"; done`)
			a, _, aOut := attach(t, h, tt.first)
			aOut.waitForText(t, fmt.Sprintf("%d %d\r\n", tt.first.Rows, tt.first.Cols))
			b, g, _ := attach(t, h, tt.second)
			owner := a
			if b.Role() == RoleOwner {
				owner = b
			}
			if tt.resize != [2]uint16{} {
				if err := owner.Resize(tt.resize[0], tt.resize[1]); err != nil {
					t.Fatalf("resize: %v", err)
				}
			} else if got := fmt.Sprintf("%d %d", g.Rows, g.Cols); got != tt.want {
				t.Errorf("grant says %s, want %s", got, tt.want)
			}
			input(t, owner, "\n")
			aOut.waitForText(t, "size:"+tt.want+"\r\n")
		})
	}
}

func TestResizeRejectsEmptySize(t *testing.T) {
	h := newTestHub(t, HubOptions{})
	owner, _, _ := attach(t, h, AttachRequest{TermID: "t", ClientID: "owner", Role: RoleOwner, Command: []string{"cat"}})
	for _, size := range [][2]uint16{{0, 24}, {80, 0}} {
		if err := owner.Resize(size[0], size[1]); err == nil {
			t.Errorf("resize to %dx%d succeeded", size[0], size[1])
		}
	}
}

func TestExitReachesEveryClientOnce(t *testing.T) {
	tests := []struct {
		name   string
		script string
		code   int
		signal string
	}{
		{"success", "exit 0", 0, ""},
		{"failure", "exit 3", 3, ""},
		{"killed", "kill -TERM $$", -1, "SIGTERM"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newTestHub(t, HubOptions{})
			owner, _, ownerOut := attach(t, h, AttachRequest{TermID: "t", ClientID: "owner", Role: RoleOwner,
				Command: shell("read go; " + tt.script)})
			viewer, _, viewerOut := attach(t, h, AttachRequest{TermID: "t", ClientID: "viewer"})
			_, _, secondOwnerOut := attach(t, h, AttachRequest{TermID: "t", ClientID: "would-be-owner", Role: RoleOwner})
			input(t, owner, "\n")
			for name, r := range map[string]*recorder{"owner": ownerOut, "viewer": viewerOut, "downgraded owner": secondOwnerOut} {
				r.checkExit(t, name, tt.code, tt.signal)
			}
			// Exit is delivered after the terminal is gone.
			if n := h.Terminals(); n != 0 {
				t.Errorf("%d terminals after exit, want 0", n)
			}
			if err := owner.Input([]byte("x")); !errors.Is(err, ErrDetached) {
				t.Errorf("input after exit: got %v, want ErrDetached", err)
			}
			owner.Close()
			viewer.Close()
			ownerOut.checkExit(t, "owner after Close", tt.code, tt.signal)
		})
	}
}

func TestTerminalIDStartsAfreshAfterExit(t *testing.T) {
	h := newTestHub(t, HubOptions{})
	_, g1, r1 := attach(t, h, AttachRequest{TermID: "t", ClientID: "a", Role: RoleOwner, Command: shell("echo one")})
	r1.checkExit(t, "first run", 0, "")
	_, g2, r2 := attach(t, h, AttachRequest{TermID: "t", ClientID: "a", Role: RoleOwner, Command: shell("echo two")})
	r2.checkExit(t, "second run", 0, "")
	if !g2.Created || g2.Pid == g1.Pid {
		t.Errorf("second attach got %+v after %+v; want a new program", g2, g1)
	}
	if out := r2.output(); out != "two\r\n" {
		t.Errorf("second run's client saw %q; want only the new program's output", out)
	}
}

func TestCloseEndsEveryStream(t *testing.T) {
	h := NewHub(HubOptions{})
	t.Cleanup(func() { h.Close() }) // if the test stops early; Close is idempotent
	_, _, a := attach(t, h, AttachRequest{TermID: "one", ClientID: "a", Role: RoleOwner, Command: []string{"cat"}})
	_, _, b := attach(t, h, AttachRequest{TermID: "one", ClientID: "b"})
	_, _, c := attach(t, h, AttachRequest{TermID: "two", ClientID: "c", Role: RoleOwner, Command: []string{"cat"}})
	if err := h.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	for name, r := range map[string]*recorder{"a": a, "b": b, "c": c} {
		r.checkClosed(t, name, ErrHubClosed)
	}
	if h.Terminals() != 0 || h.Active() {
		t.Errorf("after close: %d terminals, active %v", h.Terminals(), h.Active())
	}
}
