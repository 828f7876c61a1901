package term

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestHubOptionsDefaults(t *testing.T) {
	tests := []struct {
		name        string
		opts        HubOptions
		wantCommand []string
	}{
		{"user's shell", HubOptions{Env: []string{"SHELL=/bin/zsh"}}, []string{"/bin/zsh"}},
		{"last SHELL wins", HubOptions{Env: []string{"SHELL=/bin/zsh", "SHELL=/bin/fish"}}, []string{"/bin/fish"}},
		{"no shell", HubOptions{Env: []string{"HOME=/"}}, []string{"/bin/sh"}},
		{"empty shell", HubOptions{Env: []string{"SHELL="}}, []string{"/bin/sh"}},
		{"explicit command", HubOptions{Env: []string{"SHELL=/bin/zsh"}, Command: []string{"top"}}, []string{"top"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.opts.withDefaults()
			if !slices.Equal(got.Command, tt.wantCommand) {
				t.Errorf("command %q, want %q", got.Command, tt.wantCommand)
			}
			if got.ScrollbackBytes != DefaultScrollbackBytes || got.ClientBufferBytes != DefaultClientBufferBytes ||
				got.KillGrace != DefaultKillGrace || got.InputTimeout != DefaultInputTimeout || got.Logger == nil {
				t.Errorf("zero options not defaulted: %+v", got)
			}
		})
	}
	negative := HubOptions{ScrollbackBytes: -1, ClientBufferBytes: -1, KillGrace: -1, InputTimeout: -1}.withDefaults()
	if negative.ScrollbackBytes != DefaultScrollbackBytes || negative.ClientBufferBytes != DefaultClientBufferBytes ||
		negative.KillGrace != DefaultKillGrace || negative.InputTimeout != DefaultInputTimeout {
		t.Errorf("negative options not defaulted: %+v", negative)
	}
}

func TestTerminalEnv(t *testing.T) {
	tests := []struct {
		name        string
		base, extra []string
		want        []string
	}{
		{"adds TERM", []string{"A=1"}, []string{"B=2"}, []string{"A=1", "B=2", "TERM=" + DefaultTERM}},
		{"keeps the runner's TERM", []string{"TERM=screen"}, nil, []string{"TERM=screen"}},
		{"keeps the request's TERM", []string{"A=1"}, []string{"TERM=vt100"}, []string{"A=1", "TERM=vt100"}},
		{"TERM prefix is not TERM", []string{"TERMINFO=/x"}, nil, []string{"TERMINFO=/x", "TERM=" + DefaultTERM}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := terminalEnv(tt.base, tt.extra); !slices.Equal(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestRequestShapesTheProgram(t *testing.T) {
	dir := t.TempDir()
	h := newTestHub(t, HubOptions{Env: append(os.Environ(), "FOO=runner", "TERM=")})
	_, _, r := attach(t, h, AttachRequest{TermID: "t", ClientID: "c", Role: RoleOwner, Cwd: dir,
		Env: []string{"FOO=request", "TERM=vt100"}, Command: shell(`echo "foo=$FOO term=$TERM dir=$(pwd)"`)})
	r.checkExit(t, "program", 0, "")
	resolved, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	if want := "foo=request term=vt100 dir=" + resolved + "\r\n"; r.output() != want {
		t.Errorf("program printed %q, want %q", r.output(), want)
	}
}

func TestDefaultCommandRunsInDefaultDir(t *testing.T) {
	dir := t.TempDir()
	h := newTestHub(t, HubOptions{Dir: dir, Env: append(os.Environ(), "SHELL=/bin/sh")})
	c, g, r := attach(t, h, AttachRequest{TermID: "t", ClientID: "c", Role: RoleOwner})
	if !g.Created {
		t.Fatalf("grant %+v", g)
	}
	input(t, c, "echo \"in $(pwd) as $0\"; exit 5\n")
	r.checkExit(t, "shell", 5, "")
	resolved, _ := filepath.EvalSymlinks(dir)
	if want := "in " + resolved + " as /bin/sh\r\n"; !strings.Contains(r.output(), want) {
		t.Errorf("shell printed %q, want it to contain %q", r.output(), want)
	}
}

func TestInputToStalledProgramFailsInsteadOfBlocking(t *testing.T) {
	h := newTestHub(t, HubOptions{InputTimeout: 100 * time.Millisecond})
	c, _, r := attach(t, h, AttachRequest{TermID: "t", ClientID: "c", Role: RoleOwner,
		Command: shell("stty raw -echo; echo ready; exec sleep 1000")})
	r.waitForText(t, "ready")
	// Far more than the terminal's input queue holds, and nobody reads it.
	err := c.Input(make([]byte, 1<<20))
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("input to a program that never reads: got %v, want a deadline error", err)
	}
}

// sizeRecorder remembers the largest Data it was given.
type sizeRecorder struct {
	*recorder
	largest int
}

func (s *sizeRecorder) Data(p []byte) error {
	s.largest = max(s.largest, len(p))
	return s.recorder.Data(p)
}

func TestReplayArrivesInBoundedPieces(t *testing.T) {
	const printed = 3 * MaxDataBytes // several pieces, less than the scrollback
	h := newTestHub(t, HubOptions{})
	owner, _, ownerOut := attach(t, h, AttachRequest{TermID: "t", ClientID: "owner", Role: RoleOwner,
		Command: shell(fmt.Sprintf(`head -c %d /dev/zero | tr '\0' x; echo; echo END; read l; echo bye`, printed))})
	want := ownerOut.waitForText(t, "END\r\n")
	if len(want) < printed {
		t.Fatalf("owner saw %d bytes, the program printed at least %d", len(want), printed)
	}
	late := &sizeRecorder{recorder: newRecorder()}
	_, g, err := h.Attach(context.Background(), AttachRequest{TermID: "t", ClientID: "late"}, late)
	if err != nil {
		t.Fatal(err)
	}
	if g.ReplayBytes != len(want) {
		t.Errorf("grant promises %d bytes of replay; the program had printed %d", g.ReplayBytes, len(want))
	}
	input(t, owner, "\n")
	late.checkExit(t, "late viewer", 0, "")
	if got := late.output(); got != ownerOut.output() {
		t.Errorf("late viewer saw %d bytes, owner %d", len(got), len(ownerOut.output()))
	}
	if late.largest > MaxDataBytes {
		t.Errorf("a Data call carried %d bytes, more than MaxDataBytes", late.largest)
	}
}
