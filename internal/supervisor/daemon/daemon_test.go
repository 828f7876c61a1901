package daemon

import (
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/corral-dev/corral/internal/testenv"
	"github.com/corral-dev/corral/internal/testrunner"
	"github.com/corral-dev/corral/pkg/client"
	"github.com/corral-dev/corral/pkg/command"
	"github.com/corral-dev/corral/pkg/wire"
	"go.uber.org/goleak"
	"go.uber.org/zap/zaptest"
)

func TestMain(m *testing.M) {
	if state := os.Getenv(floodEnv); state != "" {
		os.Exit(floodDaemon(state))
	}
	// The test binary caught SIGHUP it did not send, now and then, in
	// full runs beside other packages (its death then reads "signal:
	// hangup"); the source is not found yet. Held here, such a signal
	// cannot kill the binary between two daemons' own handlers. The
	// reload tests check each daemon's handling by what it does (its
	// notifications, its log), not by surviving.
	signal.Notify(make(chan os.Signal, 1), syscall.SIGHUP)
	testenv.PlainShell()
	code := m.Run()
	testrunner.Remove()
	os.Exit(code)
}

// serve runs a daemon on state until the test ends and returns where it
// listens.
func serve(t *testing.T, state string, tweak func(*Config)) Listening {
	t.Helper()
	runner := testrunner.Path(t)
	ignore := goleak.IgnoreCurrent()
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan Listening, 1)
	done := make(chan error, 1)
	cfg := Config{StateDir: state, RunnerPath: runner, Logger: zaptest.NewLogger(t),
		Ready: func(l Listening) { ready <- l }}
	if tweak != nil {
		tweak(&cfg)
	}
	go func() { done <- Run(ctx, cfg) }()
	var where Listening
	select {
	case where = <-ready:
	case err := <-done:
		cancel()
		t.Fatalf("daemon did not start: %v", err)
	}
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("daemon: %v", err)
		}
		http.DefaultTransport.(*http.Transport).CloseIdleConnections()
		if err := goleak.Find(ignore); err != nil {
			t.Error(err)
		}
	})
	return where
}

func TestServesOwnerOnlySocketAndStopsRunnersOnExit(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state")
	ctx := context.Background()
	var pid int
	t.Run("serve", func(t *testing.T) {
		where := serve(t, state, nil)
		fi, err := os.Stat(where.Socket)
		if err != nil || fi.Mode().Perm() != 0o600 || fi.Mode().Type() != os.ModeSocket {
			t.Fatalf("socket %v %v", fi.Mode(), err)
		}
		if fi, _ := os.Stat(state); fi.Mode().Perm() != 0o700 {
			t.Fatalf("state folder mode %v", fi.Mode())
		}
		c, err := client.ForState(state)
		if err != nil {
			t.Fatal(err)
		}
		s, err := c.CreateSession(ctx, wire.Spec{Engine: "script"})
		if err != nil {
			t.Fatal(err)
		}
		raw, err := os.ReadFile(filepath.Join(state, "sessions", s.ID, "runner.pid"))
		if err != nil {
			t.Fatal(err)
		}
		if pid, err = strconv.Atoi(strings.TrimSpace(string(raw))); err != nil {
			t.Fatal(err)
		}
	})
	// The daemon is gone: its runner and its socket with it.
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Fatalf("runner %d outlived the daemon: %v", pid, err)
	}
	if _, err := os.Lstat(filepath.Join(state, SocketName)); !os.IsNotExist(err) {
		t.Fatalf("socket left behind: %v", err)
	}
}

func TestStaleSocketIsReplacedLiveOneRefused(t *testing.T) {
	state := t.TempDir()
	socket := filepath.Join(state, SocketName)
	// A socket file whose server died.
	ln, err := net.Listen("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	ln.Close()
	serve(t, state, nil)
	c, _ := client.ForState(state)
	if _, err := c.Health(context.Background()); err != nil {
		t.Fatalf("health over the replaced socket: %v", err)
	}

	// A second daemon on the same state is refused by the lock.
	err = Run(context.Background(), Config{StateDir: state, RunnerPath: os.Args[0]})
	if err == nil || !strings.Contains(err.Error(), "another supervisor") {
		t.Fatalf("second daemon: %v", err)
	}
	// Something else listening there is never removed.
	other := t.TempDir()
	oln, err := net.Listen("unix", filepath.Join(other, SocketName))
	if err != nil {
		t.Fatal(err)
	}
	defer oln.Close()
	if _, err := listenUnix(filepath.Join(other, SocketName)); err == nil || !strings.Contains(err.Error(), "already answers") {
		t.Fatalf("listen over a live socket: %v", err)
	}
	os.WriteFile(filepath.Join(other, "plain"), nil, 0o600)
	if _, err := listenUnix(filepath.Join(other, "plain")); err == nil || !strings.Contains(err.Error(), "not a socket") {
		t.Fatalf("listen over a plain file: %v", err)
	}
}

func TestTCPNeedsTheGeneratedToken(t *testing.T) {
	state := t.TempDir()
	where := serve(t, state, func(c *Config) { c.Listen = "127.0.0.1:0" })
	tokenFile := filepath.Join(state, TokenName)
	fi, err := os.Stat(tokenFile)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("token file: %v %v", fi, err)
	}
	token, err := ReadToken(tokenFile)
	if err != nil || len(token) != 64 {
		t.Fatalf("token %q: %v", token, err)
	}
	ctx := context.Background()
	for _, tc := range []struct {
		token string
		want  error
	}{{"", wire.ErrUnauthorized}, {"wrong", wire.ErrUnauthorized}, {token, nil}} {
		c, err := client.New(client.Options{BaseURL: "http://" + where.TCPAddr, Token: tc.token})
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.Health(ctx)
		if !errors.Is(err, tc.want) || (tc.want == nil && err != nil) {
			t.Fatalf("token %q: %v, want %v", tc.token, err, tc.want)
		}
	}
	// The unix socket needs none.
	c, _ := client.ForState(state)
	if _, err := c.Health(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestTokenFileMustBeOwnerOnly(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "tok")
	os.WriteFile(file, []byte("abc\n"), 0o644)
	if _, err := loadToken(dir, file); err == nil || !strings.Contains(err.Error(), "must be 0600") {
		t.Fatalf("world-readable token: %v", err)
	}
	os.Chmod(file, 0o600)
	if tok, err := loadToken(dir, file); err != nil || tok != "abc" {
		t.Fatalf("token %q %v", tok, err)
	}
	empty := filepath.Join(dir, "empty")
	os.WriteFile(empty, []byte("\n"), 0o600)
	if _, err := loadToken(dir, empty); err == nil {
		t.Fatal("empty token accepted")
	}
	// A generated token is kept across restarts.
	a, err := loadToken(dir, "")
	if err != nil {
		t.Fatal(err)
	}
	if b, err := loadToken(dir, ""); err != nil || a != b {
		t.Fatalf("token changed: %q %q %v", a, b, err)
	}
}

func TestCredentialsFileMustBeOwnerOnly(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "creds.json")
	os.WriteFile(file, []byte(`{"anthropic-api-key":"k"}`), 0o644)
	err := Run(context.Background(), Config{StateDir: filepath.Join(dir, "state"), RunnerPath: os.Args[0], CredentialsFile: file})
	if err == nil || !strings.Contains(err.Error(), "0600") {
		t.Fatalf("loose credentials file: %v", err)
	}
}

func TestFindRunner(t *testing.T) {
	if _, err := FindRunner(filepath.Join(t.TempDir(), "absent")); err == nil {
		t.Fatal("a missing --runner was accepted")
	}
	t.Setenv("PATH", t.TempDir())
	if _, err := FindRunner(""); err == nil || !strings.Contains(err.Error(), "--runner") {
		t.Fatalf("no runner anywhere: %v", err)
	}
	bin := t.TempDir()
	os.WriteFile(filepath.Join(bin, "runner"), []byte("#!/bin/sh\n"), 0o755)
	t.Setenv("PATH", bin)
	if got, err := FindRunner(""); err != nil || got != filepath.Join(bin, "runner") {
		t.Fatalf("runner on PATH: %q %v", got, err)
	}
}

// TestStateFolderOfALongPath serves on a state folder whose socket path is
// longer than a socket address holds (a deep home, a test's temporary
// folder): the supervisor must listen, and a client reach it, all the same.
func TestStateFolderOfALongPath(t *testing.T) {
	state := filepath.Join(t.TempDir(), strings.Repeat("a-long-folder-name/", 6), "state")
	if n := len(filepath.Join(state, SocketName)); n <= 108 {
		t.Fatalf("the socket path is %d bytes: not longer than a socket address", n)
	}
	where := serve(t, state, nil)
	c, err := client.ForState(state)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := c.Health(ctx); err != nil {
		t.Fatalf("health over %s: %v", where.Socket, err)
	}
	s, err := c.CreateSession(ctx, wire.Spec{Engine: "script"})
	if err != nil {
		t.Fatalf("a session under the long state folder: %v", err)
	}
	if _, err := c.Command(ctx, s.ID, command.Send{Text: "hello"}); err != nil {
		t.Fatalf("send: %v", err)
	}
}
