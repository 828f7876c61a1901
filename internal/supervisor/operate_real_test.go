package supervisor

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestRealSIGHUPReloadsTheSettingsFileAndLogsAreJSON runs the supervisor
// binary with --config and --log-format json, lowers max-live in the file,
// sends SIGHUP, and checks the cap took effect without a restart, that the
// metrics show it, and that every line of the log (runners' included) is
// one JSON object.
func TestRealSIGHUPReloadsTheSettingsFileAndLogsAreJSON(t *testing.T) {
	conf := filepath.Join(t.TempDir(), "supervisor.conf")
	if err := os.WriteFile(conf, []byte("# test settings\nmax-live = 3\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	d := startDaemon(t, "--config", conf, "--log-format", "json")
	pid := d.cmd.Process.Pid
	for range 2 {
		d.create(t)
	}
	if h, err := d.c.Health(ctxT(t)); err != nil || h.LiveSessions != 2 {
		t.Fatalf("health %+v %v, want 2 live sessions", h, err)
	}
	if err := os.WriteFile(conf, []byte("max-live = 1\nidle-ttl = 1h\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return strings.Contains(d.log(), `"msg":"settings reloaded"`) })
	if h, err := d.c.Health(ctxT(t)); err != nil || h.LiveSessions != 1 {
		t.Fatalf("after the reload: %+v %v, want 1 live session", h, err)
	}
	if err := syscall.Kill(pid, 0); err != nil {
		t.Fatalf("the supervisor died of SIGHUP: %v", err)
	}
	if body := scrapeSocket(t, d.state); !strings.Contains(body, "corral_max_live_sessions 1\n") {
		t.Errorf("metrics do not show the reloaded cap:\n%.3000s", body)
	}
	var sawRestart, sawRunner bool
	sc := bufio.NewScanner(strings.NewReader(d.log()))
	for sc.Scan() {
		var entry map[string]any
		if err := json.Unmarshal(sc.Bytes(), &entry); err != nil {
			t.Fatalf("log line is not JSON: %q", sc.Text())
		}
		if entry["msg"] == "a changed setting takes effect only at a restart" && entry["setting"] == "idle-ttl" {
			sawRestart = true
		}
		if line, _ := entry["line"].(string); entry["logger"] == "runner" && strings.Contains(line, "runner wrapper: starting pid") {
			sawRunner = true
		}
	}
	if !sawRestart {
		t.Error("a changed idle-ttl was not logged as needing a restart")
	}
	if !sawRunner {
		t.Error("the runners' stderr did not reach the log")
	}
}

// scrapeSocket gets /metrics over the state folder's socket.
func scrapeSocket(t *testing.T, state string) string {
	t.Helper()
	tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", filepath.Join(state, "supervisor.sock"))
	}}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Get("http://supervisor/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("GET /metrics: %s %s", resp.Status, body)
	}
	return string(body)
}
