package supervisor

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/coder/websocket"
	"github.com/corral-dev/corral/pkg/api"
	"github.com/corral-dev/corral/pkg/client"
)

// tcpAddr is the TCP address a daemon started with --listen logged.
func (d *termDaemon) tcpAddr() string {
	d.tb.Helper()
	m := regexp.MustCompile(`"tcp": "([^"]+)"`).FindStringSubmatch(d.logText())
	if m == nil || m[1] == "" {
		d.tb.Fatalf("no TCP address in the log:\n%s", d.logText())
	}
	return m[1]
}

// TestRefusedTerminalRequestsRunNothing is finding 4 of issue 18: a
// terminal WebSocket request that is refused — another origin, another
// Host, no credential, a handshake the upgrade would fail — is refused with
// the JSON error before the terminal's program starts.
func TestRefusedTerminalRequestsRunNothing(t *testing.T) {
	d := startTermDaemon(t, "--listen", "127.0.0.1:0")
	id := d.newSession()
	addr := d.tcpAddr()
	raw, err := os.ReadFile(filepath.Join(d.state, "token"))
	if err != nil {
		t.Fatal(err)
	}
	bearer := "Bearer " + strings.TrimSpace(string(raw))
	q := url.Values{"role": {"owner"}, "command": shell("echo REFUSED-RAN; exec cat")}
	path := "/v1/sessions/" + id + "/terminals/probe?" + q.Encode()
	handshake := []string{"Connection", "Upgrade", "Upgrade", "websocket", "Sec-WebSocket-Version", "13", "Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="}
	tests := []struct {
		name string
		hdr  []string
		code int
	}{
		{"another origin", append([]string{"Authorization", bearer, "Origin", "http://evil.example"}, handshake...), 403},
		{"another host", append([]string{"Authorization", bearer, "Host", "evil.example:" + strings.Split(addr, ":")[1]}, handshake...), 403},
		{"no credential", handshake, 401},
		{"a wrong token", append([]string{"Authorization", "Bearer nope"}, handshake...), 401},
		{"an old WebSocket version", append([]string{"Authorization", bearer}, append(handshake[:4:4], "Sec-WebSocket-Version", "8", "Sec-WebSocket-Key", handshake[7])...), 400},
		{"no WebSocket key", append([]string{"Authorization", bearer}, handshake[:6]...), 400},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest("GET", "http://"+addr+path, nil)
			if err != nil {
				t.Fatal(err)
			}
			for i := 0; i+1 < len(tc.hdr); i += 2 {
				if tc.hdr[i] == "Host" {
					req.Host = tc.hdr[i+1]
				} else {
					req.Header.Set(tc.hdr[i], tc.hdr[i+1])
				}
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			var r api.ErrorReply
			if resp.StatusCode != tc.code || json.Unmarshal(body, &r) != nil || r.Error == nil || r.Error.StatusCode != tc.code {
				t.Fatalf("HTTP %d %s, want the JSON error %d", resp.StatusCode, body, tc.code)
			}
		})
	}
	// And the WebSocket client's own way: refused with the JSON error.
	_, resp, err := websocket.Dial(termCtx(t), "ws://"+addr+path, &websocket.DialOptions{
		HTTPHeader: http.Header{"Authorization": {bearer}, "Origin": {"http://evil.example"}}})
	if err == nil || resp == nil || resp.StatusCode != 403 {
		t.Fatalf("dial from another origin: %v %v", resp, err)
	}
	http.DefaultClient.CloseIdleConnections()

	// The terminal was never opened: the first attach starts its own
	// program, which says so.
	term := d.attach(id, client.TermOptions{TermID: "probe", Command: shell("echo FRESH-START; exec cat")})
	r, _ := record(term, 0, true)
	if got := r.waitOutput(t, `FRESH-START|REFUSED-RAN`); got != "FRESH-START" {
		t.Fatalf("a refused request ran the terminal's program: %q", r.output())
	}
}
