// Package sdnotify speaks systemd's notify protocol: a service started
// with Type=notify tells the service manager it is ready, reloading or
// stopping, and pings its watchdog, each by one datagram of newline-
// separated VAR=value assignments to the unix socket named by
// $NOTIFY_SOCKET (a path, or an abstract socket when it starts with '@').
// Outside systemd (no $NOTIFY_SOCKET) every call does nothing.
package sdnotify

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"
)

// The states a supervisor sends.
const (
	Ready     = "READY=1"
	Reloading = "RELOADING=1"
	Stopping  = "STOPPING=1"
	Watchdog  = "WATCHDOG=1"
)

// Notifier sends notifications to one socket.
type Notifier struct {
	addr     *net.UnixAddr // nil: not under a service manager
	watchdog time.Duration
}

// FromEnv returns the notifier $NOTIFY_SOCKET names, or one that does
// nothing when it is unset, with the watchdog interval $WATCHDOG_USEC
// asks for. It removes those variables from the environment, so that no
// child process (a runner, an agent, its commands) can speak for the
// service. A value that is neither an absolute path nor an abstract name
// is an error, as is a watchdog interval that is not a number.
func FromEnv() (*Notifier, error) {
	socket := os.Getenv("NOTIFY_SOCKET")
	watchdog, werr := watchdogInterval()
	for _, v := range []string{"NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID"} {
		os.Unsetenv(v)
	}
	n, err := New(socket)
	if err != nil {
		return nil, err
	}
	if werr != nil {
		return n, werr
	}
	n.watchdog = watchdog
	return n, nil
}

// WatchdogInterval is how often the watchdog must be pinged (half what
// the service manager set, so a ping is never late); 0 without a watchdog.
func (n *Notifier) WatchdogInterval() time.Duration {
	if !n.Enabled() {
		return 0
	}
	return n.watchdog
}

// New returns a notifier for socket (as $NOTIFY_SOCKET spells it); an
// empty socket gives one that does nothing.
func New(socket string) (*Notifier, error) {
	switch {
	case socket == "":
		return &Notifier{}, nil
	case socket[0] == '@':
		// Abstract namespace: a leading NUL byte instead of the '@'.
		return &Notifier{addr: &net.UnixAddr{Name: "\x00" + socket[1:], Net: "unixgram"}}, nil
	case socket[0] == '/':
		return &Notifier{addr: &net.UnixAddr{Name: socket, Net: "unixgram"}}, nil
	}
	return nil, fmt.Errorf("NOTIFY_SOCKET %q is neither an absolute path nor an abstract socket (@name)", socket)
}

// Enabled reports whether a service manager listens.
func (n *Notifier) Enabled() bool { return n != nil && n.addr != nil }

// Notify sends the given assignments in one datagram.
func (n *Notifier) Notify(states ...string) error {
	if !n.Enabled() || len(states) == 0 {
		return nil
	}
	for _, s := range states {
		if !strings.Contains(s, "=") || strings.Contains(s, "\n") {
			return fmt.Errorf("sd_notify: %q is not one VAR=value assignment", s)
		}
	}
	conn, err := net.DialUnix("unixgram", nil, n.addr)
	if err != nil {
		return fmt.Errorf("sd_notify: %w", err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte(strings.Join(states, "\n") + "\n")); err != nil {
		return fmt.Errorf("sd_notify: %w", err)
	}
	return nil
}

// Reload sends RELOADING=1 with the monotonic time systemd's
// Type=notify-reload asks for; call Notify(Ready) once the reload is done.
func (n *Notifier) Reload() error {
	return n.Notify(Reloading, "MONOTONIC_USEC="+strconv.FormatInt(monotonicUsec(), 10))
}

// watchdogInterval reads half of $WATCHDOG_USEC; 0 when there is no
// watchdog for this process ($WATCHDOG_PID names another).
func watchdogInterval() (time.Duration, error) {
	raw := os.Getenv("WATCHDOG_USEC")
	if raw == "" {
		return 0, nil
	}
	if pid := os.Getenv("WATCHDOG_PID"); pid != "" && pid != strconv.Itoa(os.Getpid()) {
		return 0, nil
	}
	usec, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || usec <= 0 {
		return 0, errors.New("WATCHDOG_USEC is not a positive number of microseconds")
	}
	return time.Duration(usec) * time.Microsecond / 2, nil
}
