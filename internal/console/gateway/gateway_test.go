package gateway

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// upstream is a stand-in supervisor on a unix socket: it records what it
// was sent and echoes WebSocket messages.
type upstream struct {
	socket string
	mu     sync.Mutex
	seen   []*http.Request
}

func startUpstream(t *testing.T) *upstream {
	t.Helper()
	dir, err := os.MkdirTemp("", "gw")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	u := &upstream{socket: filepath.Join(dir, "s.sock")}
	ln, err := net.Listen("unix", u.socket)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/v1/health", func(w http.ResponseWriter, r *http.Request) {
		u.mu.Lock()
		u.seen = append(u.seen, r.Clone(context.Background()))
		u.mu.Unlock()
		io.WriteString(w, `{"ok":true}`)
	})
	mux.HandleFunc("/v1/echo", func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, nil) // checks Origin against Host
		if err != nil {
			return
		}
		defer c.CloseNow()
		typ, p, err := c.Read(r.Context())
		if err != nil {
			return
		}
		c.Write(r.Context(), typ, p)
		c.Close(websocket.StatusNormalClosure, "")
	})
	srv := &http.Server{Handler: mux}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return u
}

func (u *upstream) last(t *testing.T) *http.Request {
	t.Helper()
	u.mu.Lock()
	defer u.mu.Unlock()
	if len(u.seen) == 0 {
		t.Fatal("the upstream saw no request")
	}
	return u.seen[len(u.seen)-1]
}

// startGateway serves a gateway to up until the test ends.
func startGateway(t *testing.T, up Upstream) *Gateway {
	t.Helper()
	g, err := New(Config{Upstream: up})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- g.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return g
}

// browser is an HTTP client that keeps cookies and does not follow
// redirects, as the tests want to see them.
func browser(t *testing.T) *http.Client {
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	t.Cleanup(c.CloseIdleConnections)
	return c
}

func do(t *testing.T, c *http.Client, method, u string, hdr map[string]string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(method, u, nil)
	for k, v := range hdr {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(body)
}

func origin(g *Gateway) string { return "http://" + g.Addr().String() }

func TestSignInOnceThenEveryRequestIsForwarded(t *testing.T) {
	up := startUpstream(t)
	g := startGateway(t, Upstream{Socket: up.socket})
	b := browser(t)

	resp, body := do(t, b, "GET", origin(g)+"/v1/health", nil)
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(body, `"code":"unauthorized"`) {
		t.Fatalf("before sign-in: %d %s", resp.StatusCode, body)
	}
	resp, _ = do(t, b, "GET", g.URL("3f2a9c0d1e4b"), nil)
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/#/sessions/3f2a9c0d1e4b" {
		t.Fatalf("sign-in: %d, Location %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	cookie := resp.Header.Get("Set-Cookie")
	for _, want := range []string{"HttpOnly", "SameSite=Strict", "Path=/"} {
		if !strings.Contains(cookie, want) {
			t.Errorf("cookie %q lacks %s", cookie, want)
		}
	}
	resp, body = do(t, b, "GET", origin(g)+"/v1/health", nil)
	if resp.StatusCode != http.StatusOK || body != `{"ok":true}` {
		t.Fatalf("after sign-in: %d %s", resp.StatusCode, body)
	}
	got := up.last(t)
	if got.Header.Get("Cookie") != "" {
		t.Errorf("the console's cookie reached the supervisor: %q", got.Header.Get("Cookie"))
	}
	if got.Host != g.Addr().String() {
		t.Errorf("upstream Host %q, want the browser's %q", got.Host, g.Addr().String())
	}

	// The link works once: another browser cannot use it again.
	other := browser(t)
	resp, body = do(t, other, "GET", strings.Replace(g.URL(""), "127.0.0.1", "127.0.0.1", 1), nil)
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(body, "used already") {
		t.Fatalf("second use of the code: %d %s", resp.StatusCode, body)
	}
	// The browser signed in may open the link again.
	resp, _ = do(t, b, "GET", origin(g)+"/login?code=whatever", nil)
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("signed-in browser at /login: %d", resp.StatusCode)
	}
}

func TestRefusals(t *testing.T) {
	up := startUpstream(t)
	g := startGateway(t, Upstream{Socket: up.socket})
	b := browser(t)
	if resp, _ := do(t, b, "GET", origin(g)+"/login?code=0123", nil); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("wrong code: %d, want 403", resp.StatusCode)
	}
	if resp, _ := do(t, b, "GET", origin(g)+"/login?code=", nil); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("empty code: %d, want 403", resp.StatusCode)
	}
	if resp, _ := do(t, b, "GET", g.URL("")+"&session=../../etc", nil); resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("bad session id: %d, want 400", resp.StatusCode)
	}
	// A wrong code does not burn the right one.
	if resp, _ := do(t, b, "GET", g.URL(""), nil); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("right code after wrong ones: %d", resp.StatusCode)
	}
	cases := []struct {
		name   string
		hdr    map[string]string
		status int
	}{
		{"another host name (DNS rebinding)", map[string]string{"Host": "evil.example:" + g.port}, http.StatusMisdirectedRequest},
		{"another port", map[string]string{"Host": "127.0.0.1:1"}, http.StatusMisdirectedRequest},
		{"a page of another origin", map[string]string{"Origin": "http://evil.example"}, http.StatusForbidden},
		{"the same origin", map[string]string{"Origin": origin(g)}, http.StatusOK},
		// localhost names the listener too: the request passes the Host
		// check (a browser there has no cookie for 127.0.0.1, so it must
		// sign in).
		{"localhost names the listener too", map[string]string{"Host": "localhost:" + g.port, "Cookie": ""}, http.StatusUnauthorized},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if resp, body := do(t, b, "GET", origin(g)+"/v1/health", c.hdr); resp.StatusCode != c.status {
				t.Fatalf("status %d, want %d (%s)", resp.StatusCode, c.status, body)
			}
		})
	}
}

func TestWebSocketThroughTheGateway(t *testing.T) {
	up := startUpstream(t)
	g := startGateway(t, Upstream{Socket: up.socket})
	b := browser(t)
	do(t, b, "GET", g.URL(""), nil)
	u, _ := url.Parse(origin(g))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	hdr := http.Header{"Origin": {origin(g)}}
	for _, c := range b.Jar.Cookies(u) {
		hdr.Add("Cookie", c.String())
	}
	c, _, err := websocket.Dial(ctx, "ws://"+g.Addr().String()+"/v1/echo", &websocket.DialOptions{HTTPHeader: hdr})
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	if err := c.Write(ctx, websocket.MessageBinary, []byte("keys")); err != nil {
		t.Fatal(err)
	}
	_, p, err := c.Read(ctx)
	if err != nil || string(p) != "keys" {
		t.Fatalf("echo: %q, %v", p, err)
	}
	// Without the cookie the upgrade is refused.
	_, resp, err := websocket.Dial(ctx, "ws://"+g.Addr().String()+"/v1/echo", &websocket.DialOptions{HTTPHeader: http.Header{"Origin": {origin(g)}}})
	if err == nil || resp == nil || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("upgrade without the cookie: %v, %v", resp, err)
	}
}

func TestSupervisorDownIsUnavailable(t *testing.T) {
	g := startGateway(t, Upstream{Socket: filepath.Join(t.TempDir(), "gone.sock")})
	b := browser(t)
	do(t, b, "GET", g.URL(""), nil)
	resp, body := do(t, b, "GET", origin(g)+"/v1/health", nil)
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(body, `"code":"unavailable"`) {
		t.Fatalf("supervisor down: %d %s", resp.StatusCode, body)
	}
}

func TestTCPUpstreamGetsTheBearerToken(t *testing.T) {
	var got http.Header
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.Header.Clone()
		io.WriteString(w, `{"ok":true}`)
	})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	defer srv.Close()
	g := startGateway(t, Upstream{BaseURL: "http://" + ln.Addr().String(), Token: "s3cret"})
	b := browser(t)
	do(t, b, "GET", g.URL(""), nil)
	if resp, _ := do(t, b, "GET", origin(g)+"/v1/health", map[string]string{"Authorization": "Bearer forged"}); resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	if got.Get("Authorization") != "Bearer s3cret" {
		t.Errorf("Authorization %q, want the gateway's token", got.Get("Authorization"))
	}
}

func TestListenOnlyOnLoopback(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", "192.0.2.1:0", ":0"} {
		_, err := New(Config{Listen: addr, Upstream: Upstream{Socket: "/nonexistent"}})
		if !errors.Is(err, ErrNotLoopback) {
			t.Errorf("%s: %v, want ErrNotLoopback", addr, err)
		}
	}
}
