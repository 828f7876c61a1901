package daemon

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/corral-dev/corral/pkg/client"
	"github.com/corral-dev/corral/pkg/wire"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// get does GET path through dial and returns the status and body.
func get(t *testing.T, dial func(ctx context.Context, _, _ string) (net.Conn, error), path, token string) (int, string) {
	t.Helper()
	tr := &http.Transport{DialContext: dial}
	defer tr.CloseIdleConnections()
	// A loopback name: the TCP listener refuses a Host that does not name
	// the supervisor (webauth).
	req, _ := http.NewRequest("GET", "http://localhost"+path, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := (&http.Client{Transport: tr, Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

func dialer(network, addr string) func(ctx context.Context, _, _ string) (net.Conn, error) {
	return func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, network, addr)
	}
}

func TestMetricsAreServedOnEveryListenerBehindItsAuth(t *testing.T) {
	state := t.TempDir()
	where := serve(t, state, func(c *Config) {
		c.Listen = "127.0.0.1:0"
		c.MetricsListen = "127.0.0.1:0"
	})
	c, _ := client.ForState(state)
	if _, err := c.CreateSession(context.Background(), wire.Spec{Engine: "script"}); err != nil {
		t.Fatal(err)
	}
	token, err := ReadToken(filepath.Join(state, TokenName))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name       string
		dial       func(ctx context.Context, _, _ string) (net.Conn, error)
		path       string
		token      string
		wantStatus int
		wantBody   string
	}{
		{"socket", dialer("unix", where.Socket), "/metrics", "", 200, `corral_sessions{state="idle"} 1`},
		{"tcp without token", dialer("tcp", where.TCPAddr), "/metrics", "", 401, "bearer token"},
		{"tcp with token", dialer("tcp", where.TCPAddr), "/metrics", token, 200, "corral_live_runners 1"},
		{"metrics listener", dialer("tcp", where.MetricsAddr), "/metrics", "", 200, "corral_max_live_sessions 64"},
		{"metrics listener serves nothing else", dialer("tcp", where.MetricsAddr), "/v1/sessions", "", 404, ""},
	} {
		status, body := get(t, tc.dial, tc.path, tc.token)
		if status != tc.wantStatus || !strings.Contains(body, tc.wantBody) {
			t.Errorf("%s: %d, want %d with %q in:\n%.2000s", tc.name, status, tc.wantStatus, tc.wantBody, body)
		}
	}
}

func TestMetricsListenIsLoopbackOnly(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", "[::]:0", "192.0.2.1:9100", ":9100", "nonsense"} {
		err := Run(context.Background(), Config{StateDir: t.TempDir(), RunnerPath: os.Args[0], MetricsListen: addr})
		if err == nil || !strings.Contains(err.Error(), "--metrics-listen") {
			t.Errorf("--metrics-listen %s: %v", addr, err)
		}
	}
}

func TestHealthReportsTheBuildAndReadiness(t *testing.T) {
	state := t.TempDir()
	serve(t, state, nil)
	c, _ := client.ForState(state)
	h, err := c.Health(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !h.Ready || len(h.NotReady) > 0 || h.Version == "" || !strings.HasPrefix(h.Go, "go") {
		t.Fatalf("health %+v: want ready with a version and a Go version", h)
	}
}

// notifySocket listens as a service manager would and returns what the
// supervisor tells it, one datagram at a time.
func notifySocket(t *testing.T) <-chan string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "notify")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("NOTIFY_SOCKET", path)
	out := make(chan string, 16)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(out)
		buf := make([]byte, 4096)
		for {
			n, err := conn.Read(buf)
			if err != nil {
				return
			}
			out <- string(buf[:n])
		}
	}()
	t.Cleanup(func() { conn.Close(); wg.Wait() })
	return out
}

func next(t *testing.T, notes <-chan string) string {
	t.Helper()
	select {
	case n := <-notes:
		return n
	case <-time.After(30 * time.Second):
		t.Fatal("the supervisor told the service manager nothing")
		return ""
	}
}

func TestSIGHUPReloadsLevelAndMaxLiveAndTellsTheServiceManager(t *testing.T) {
	notes := notifySocket(t)
	level := zap.NewAtomicLevelAt(zapcore.InfoLevel)
	var mu sync.Mutex
	settings := Settings{LogLevel: zapcore.DebugLevel, MaxLive: 1}
	var loadErr error
	state := t.TempDir()
	serve(t, state, func(c *Config) {
		c.LogLevel = &level
		c.Reload = func() (Settings, error) {
			mu.Lock()
			defer mu.Unlock()
			return settings, loadErr
		}
	})
	if n := next(t, notes); n != "READY=1\nSTATUS=serving\n" {
		t.Fatalf("first notification %q, want READY=1", n)
	}
	if _, ok := os.LookupEnv("NOTIFY_SOCKET"); ok {
		t.Error("NOTIFY_SOCKET left for runners to inherit")
	}
	c, _ := client.ForState(state)
	ctx := context.Background()
	for range 3 {
		if _, err := c.CreateSession(ctx, wire.Spec{Engine: "script"}); err != nil {
			t.Fatal(err)
		}
	}
	reload := func() {
		t.Helper()
		if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
		if n := next(t, notes); !strings.HasPrefix(n, "RELOADING=1\nMONOTONIC_USEC=") {
			t.Fatalf("notification %q, want RELOADING=1", n)
		}
		if n := next(t, notes); n != "READY=1\n" {
			t.Fatalf("notification %q, want READY=1 once reloaded", n)
		}
	}
	reload()
	if level.Level() != zapcore.DebugLevel {
		t.Errorf("log level %v after reload, want debug", level.Level())
	}
	h, err := c.Health(ctx)
	if err != nil || h.LiveSessions != 1 {
		t.Fatalf("after reloading max-live 1: %d live sessions (%v), want 1", h.LiveSessions, err)
	}
	_, body := get(t, dialer("unix", filepath.Join(state, SocketName)), "/metrics", "")
	if !strings.Contains(body, "corral_max_live_sessions 1\n") {
		t.Errorf("metrics do not show the reloaded cap:\n%.3000s", body)
	}

	// Settings that cannot be read change nothing, and the supervisor
	// stays up.
	mu.Lock()
	settings, loadErr = Settings{LogLevel: zapcore.ErrorLevel, MaxLive: 50}, errors.New("bad file")
	mu.Unlock()
	reload()
	if level.Level() != zapcore.DebugLevel {
		t.Errorf("a failed reload changed the level to %v", level.Level())
	}
	if _, err := c.Health(ctx); err != nil {
		t.Fatalf("after a failed reload: %v", err)
	}
}

func TestSIGHUPWithoutConfigKeepsTheSupervisorUp(t *testing.T) {
	state := t.TempDir()
	notes := notifySocket(t)
	core, logs := observer.New(zapcore.WarnLevel)
	serve(t, state, func(c *Config) { c.Logger = zap.New(core) })
	next(t, notes)
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	// The supervisor read the signal, said there is nothing to reload,
	// and still answers.
	deadline := time.Now().Add(time.Minute)
	for logs.FilterMessageSnippet("nothing to reload").Len() == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("no word of the SIGHUP in the log: %v", logs.All())
		}
		time.Sleep(10 * time.Millisecond)
	}
	c, _ := client.ForState(state)
	if _, err := c.Health(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestWatchdogIsPingedWhileTheManagerAnswers(t *testing.T) {
	notes := notifySocket(t)
	t.Setenv("WATCHDOG_USEC", "200000") // a ping every 100 ms
	t.Setenv("WATCHDOG_PID", "")
	serve(t, t.TempDir(), nil)
	if n := next(t, notes); !strings.HasPrefix(n, "READY=1") {
		t.Fatalf("first notification %q", n)
	}
	for range 2 {
		if n := next(t, notes); n != "WATCHDOG=1\n" {
			t.Fatalf("notification %q, want WATCHDOG=1", n)
		}
	}
}
