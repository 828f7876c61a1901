package sdnotify

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// listen is a service manager's end: a datagram socket, path or abstract.
func listen(t *testing.T, name string) *net.UnixConn {
	t.Helper()
	addr := &net.UnixAddr{Name: name, Net: "unixgram"}
	if strings.HasPrefix(name, "@") {
		addr.Name = "\x00" + name[1:]
	}
	conn, err := net.ListenUnixgram("unixgram", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

func read(t *testing.T, conn *net.UnixConn) string {
	t.Helper()
	buf := make([]byte, 4096)
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	n, err := conn.Read(buf)
	if err != nil {
		t.Fatal(err)
	}
	return string(buf[:n])
}

func TestNotifySendsOneDatagramOfAssignments(t *testing.T) {
	path := filepath.Join(t.TempDir(), "notify.sock")
	abstract := "@corral-sdnotify-test-" + strconv.Itoa(os.Getpid())
	for _, socket := range []string{path, abstract} {
		t.Run(socket[:1], func(t *testing.T) {
			conn := listen(t, socket)
			t.Setenv("NOTIFY_SOCKET", socket)
			n, err := FromEnv()
			if err != nil || !n.Enabled() {
				t.Fatalf("FromEnv: %v enabled=%v", err, n.Enabled())
			}
			if err := n.Notify(Ready); err != nil {
				t.Fatal(err)
			}
			if got := read(t, conn); got != "READY=1\n" {
				t.Fatalf("datagram %q, want READY=1", got)
			}
			if err := n.Notify(Stopping, "STATUS=stopping runners"); err != nil {
				t.Fatal(err)
			}
			if got := read(t, conn); got != "STOPPING=1\nSTATUS=stopping runners\n" {
				t.Fatalf("datagram %q", got)
			}
			if err := n.Reload(); err != nil {
				t.Fatal(err)
			}
			got := read(t, conn)
			lines := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
			if len(lines) != 2 || lines[0] != Reloading || !strings.HasPrefix(lines[1], "MONOTONIC_USEC=") {
				t.Fatalf("reload datagram %q", got)
			}
			if usec, err := strconv.ParseInt(strings.TrimPrefix(lines[1], "MONOTONIC_USEC="), 10, 64); err != nil || usec <= 0 {
				t.Fatalf("MONOTONIC_USEC in %q: %v", got, err)
			}
		})
	}
}

func TestFromEnvKeepsTheSocketFromChildren(t *testing.T) {
	t.Setenv("NOTIFY_SOCKET", "@corral-env-test")
	t.Setenv("WATCHDOG_USEC", "1000000")
	t.Setenv("WATCHDOG_PID", strconv.Itoa(os.Getpid()))
	n, err := FromEnv()
	if err != nil || !n.Enabled() || n.WatchdogInterval() != 500*time.Millisecond {
		t.Fatalf("FromEnv: %v enabled=%v watchdog=%v", err, n.Enabled(), n.WatchdogInterval())
	}
	for _, v := range []string{"NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID"} {
		if val, ok := os.LookupEnv(v); ok {
			t.Errorf("%s=%q is still in the environment children inherit", v, val)
		}
	}
}

func TestNotifyOutsideSystemdDoesNothing(t *testing.T) {
	t.Setenv("NOTIFY_SOCKET", "")
	n, err := FromEnv()
	if err != nil || n.Enabled() {
		t.Fatalf("FromEnv without NOTIFY_SOCKET: %v enabled=%v", err, n.Enabled())
	}
	if err := n.Notify(Ready); err != nil {
		t.Fatal(err)
	}
}

func TestNotifyRefusesBadSocketsAndAssignments(t *testing.T) {
	if _, err := New("relative/path"); err == nil {
		t.Fatal("a relative NOTIFY_SOCKET was accepted")
	}
	n, err := New(filepath.Join(t.TempDir(), "nobody-listens"))
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Notify(Ready); err == nil {
		t.Fatal("a datagram to a socket nobody listens on reported success")
	}
	conn := listen(t, filepath.Join(t.TempDir(), "n.sock"))
	n, _ = New(conn.LocalAddr().String())
	for _, bad := range []string{"READY", "READY=1\nSTOPPING=1"} {
		if err := n.Notify(bad); err == nil {
			t.Fatalf("%q was sent", bad)
		}
	}
}

func TestWatchdogIntervalIsHalfTheManagersAndOnlyForThisProcess(t *testing.T) {
	for _, tc := range []struct {
		usec, pid string
		want      time.Duration
		err       bool
	}{
		{"", "", 0, false},
		{"30000000", "", 15 * time.Second, false},
		{"30000000", strconv.Itoa(os.Getpid()), 15 * time.Second, false},
		{"30000000", "1", 0, false},
		{"soon", "", 0, true},
		{"-5", "", 0, true},
	} {
		t.Setenv("NOTIFY_SOCKET", "@corral-watchdog-test")
		t.Setenv("WATCHDOG_USEC", tc.usec)
		t.Setenv("WATCHDOG_PID", tc.pid)
		n, err := FromEnv()
		got := n.WatchdogInterval()
		if got != tc.want || (err != nil) != tc.err {
			t.Errorf("WATCHDOG_USEC=%q WATCHDOG_PID=%q: %v, %v; want %v (error %v)", tc.usec, tc.pid, got, err, tc.want, tc.err)
		}
	}
}
