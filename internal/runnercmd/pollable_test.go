package runnercmd

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"
)

// stdioProbeEnv makes the test binary a probe: it reports what
// pollableStdin made of its stdin, on stderr.
const stdioProbeEnv = "CORRAL_STDIO_PROBE"

func TestMain(m *testing.M) {
	if os.Getenv(stdioProbeEnv) != "" {
		// Only files the poller serves take deadlines.
		polled := pollableStdin().SetReadDeadline(time.Now().Add(time.Hour)) == nil
		fmt.Fprintf(os.Stderr, "polled=%v", polled)
		os.Exit(0)
	}
	if path := os.Getenv(dialEnv); path != "" {
		os.Exit(dialRunnerSocket(path))
	}
	os.Exit(m.Run())
}

// TestStdinIsPolledOnlyWhenAPipe runs the probe with stdin a pipe, as the
// supervisor starts a runner, and a terminal, as a person might, which
// must stay blocking: its open file is shared with the shell.
func TestStdinIsPolledOnlyWhenAPipe(t *testing.T) {
	cases := []struct {
		name       string
		onTerminal bool
		want       string
	}{
		{"pipe", false, "polled=true"},
		{"terminal", true, "polled=false"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(os.Args[0])
			cmd.Env = append(os.Environ(), stdioProbeEnv+"=1")
			var stderr strings.Builder
			cmd.Stderr = &stderr
			var tty *os.File
			if tc.onTerminal {
				ptmx, slave, err := pty.Open()
				if err != nil {
					t.Fatal(err)
				}
				defer ptmx.Close()
				defer slave.Close()
				cmd.Stdin, cmd.Stdout, tty = slave, slave, slave
			} else {
				cmd.Stdin = strings.NewReader("")
				cmd.Stdout = &strings.Builder{}
			}
			if err := cmd.Run(); err != nil {
				t.Fatalf("probe: %v: %s", err, stderr.String())
			}
			if got := stderr.String(); got != tc.want {
				t.Fatalf("probe says %q, want %q", got, tc.want)
			}
			if tty != nil {
				// Not through Fd, which would make the file blocking.
				raw, err := tty.SyscallConn()
				if err != nil {
					t.Fatal(err)
				}
				var flags int
				raw.Control(func(fd uintptr) { flags, err = unix.FcntlInt(fd, unix.F_GETFL, 0) })
				if err != nil || flags&unix.O_NONBLOCK != 0 {
					t.Fatalf("the terminal was left non-blocking (flags %#x, %v)", flags, err)
				}
			}
		})
	}
}
