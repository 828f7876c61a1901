package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/corral-dev/corral/internal/supervisor"
	"github.com/corral-dev/corral/internal/supervisor/webauth"
	"github.com/corral-dev/corral/internal/testrunner"
	"github.com/corral-dev/corral/pkg/api"
	"github.com/corral-dev/corral/pkg/wire"
	"go.uber.org/goleak"
	"go.uber.org/zap/zaptest"
)

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// dialTerm opens a terminal WebSocket on base (an http:// URL).
func dialTerm(t *testing.T, base, path string, hdr http.Header) (*websocket.Conn, *http.Response, error) {
	t.Helper()
	c, resp, err := websocket.Dial(testCtx(t), base+path, &websocket.DialOptions{HTTPHeader: hdr})
	if c != nil {
		t.Cleanup(func() { c.CloseNow() })
	}
	return c, resp, err
}

// nextFrame reads one frame; text frames are decoded.
func nextFrame(t *testing.T, c *websocket.Conn) (out []byte, f api.TermFrame) {
	t.Helper()
	typ, p, err := c.Read(testCtx(t))
	if err != nil {
		t.Fatalf("read frame: %v", err)
	}
	if typ == websocket.MessageBinary {
		return p, f
	}
	if err := json.Unmarshal(p, &f); err != nil || f.Type == "" {
		t.Fatalf("text frame %q: %v", p, err)
	}
	return nil, f
}

// wantFrame reads frames, skipping output, until one of type typ.
func wantFrame(t *testing.T, c *websocket.Conn, typ string) api.TermFrame {
	t.Helper()
	_, f := outputUntil(t, c, typ)
	return f
}

// outputUntil reads frames until one of type typ and returns it with the
// output read before it.
func outputUntil(t *testing.T, c *websocket.Conn, typ string) ([]byte, api.TermFrame) {
	t.Helper()
	var all []byte
	for {
		out, f := nextFrame(t, c)
		if out != nil {
			all = append(all, out...)
			continue
		}
		if f.Type != typ {
			t.Fatalf("got a %+v frame, want %s", f, typ)
		}
		return all, f
	}
}

// wantClosed reads until the connection ends and returns its close status.
func wantClosed(t *testing.T, c *websocket.Conn) websocket.StatusCode {
	t.Helper()
	for {
		_, _, err := c.Read(testCtx(t))
		if err != nil {
			return websocket.CloseStatus(err)
		}
	}
}

func send(t *testing.T, c *websocket.Conn, typ websocket.MessageType, p string) {
	t.Helper()
	if err := c.Write(testCtx(t), typ, []byte(p)); err != nil {
		t.Fatalf("write: %v", err)
	}
}

func TestTerminalRefusesBadRequestsBeforeOpening(t *testing.T) {
	f := newScriptFixture(t, "")
	id := f.create()
	upgrade := []string{"Connection", "Upgrade", "Upgrade", "websocket", "Sec-WebSocket-Version", "13",
		"Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="}
	noVersion := upgrade[:4]
	badKey := append(upgrade[:6:6], "Sec-WebSocket-Key", "c2hvcnQ=")
	tests := []struct {
		name, path string
		hdr        []string
		status     int
		says       string
	}{
		{"bad terminal id", "/v1/sessions/" + id + "/terminals/a%20b", upgrade, 400, "terminal id"},
		{"terminal id too long", "/v1/sessions/" + id + "/terminals/" + strings.Repeat("t", 65), upgrade, 400, "terminal id"},
		{"unknown role", "/v1/sessions/" + id + "/terminals/main?role=admin", upgrade, 400, "role="},
		{"zero cols", "/v1/sessions/" + id + "/terminals/main?cols=0", upgrade, 400, "cols="},
		{"rows too large", "/v1/sessions/" + id + "/terminals/main?rows=70000", upgrade, 400, "rows="},
		{"empty program", "/v1/sessions/" + id + "/terminals/main?command=&command=x", upgrade, 400, "program name"},
		{"not a WebSocket", "/v1/sessions/" + id + "/terminals/main", nil, http.StatusUpgradeRequired, "WebSocket"},
		{"no WebSocket version", "/v1/sessions/" + id + "/terminals/main", noVersion, 400, "Sec-WebSocket-Version"},
		{"bad WebSocket key", "/v1/sessions/" + id + "/terminals/main", badKey, 400, "Sec-WebSocket-Key"},
		{"unknown session", "/v1/sessions/000000000000/terminals/main", upgrade, 404, "000000000000"},
		{"wrong method", "/v1/sessions/" + id + "/terminals/main", nil, http.StatusMethodNotAllowed, "not allowed"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			method := "GET"
			if tc.status == http.StatusMethodNotAllowed {
				method = "POST"
			}
			code, raw := f.do(method, tc.path, "", tc.hdr...)
			if code != tc.status {
				t.Fatalf("status %d, want %d: %s", code, tc.status, raw)
			}
			if e := errorOf(t, code, raw); !strings.Contains(e.Message, tc.says) {
				t.Fatalf("error %q does not say %q", e.Message, tc.says)
			}
		})
	}
}

func TestTerminalStreamsOutputAndEndsWithTheExit(t *testing.T) {
	f := newScriptFixture(t, "")
	id := f.create()
	c, _, err := dialTerm(t, f.srv.URL, "/v1/sessions/"+id+"/terminals/main?role=owner&cols=100&rows=30", nil)
	if err != nil {
		t.Fatal(err)
	}
	opened := wantFrame(t, c, api.FrameOpened)
	if opened.Role != api.RoleOwner || opened.TermID != "main" || !strings.HasPrefix(opened.ClientID, "ws-") || opened.Cols != 100 || opened.Rows != 30 {
		t.Fatalf("opened %+v", opened)
	}
	send(t, c, websocket.MessageText, `{"type":"resize","cols":90,"rows":20}`)
	// The user's shell runs the line. Every echo of the line (the
	// terminal's, the shell's) says "echo marker"; the command's own
	// output is a "marker" more.
	send(t, c, websocket.MessageBinary, "echo marker; exit 3\n")
	out, ex := outputUntil(t, c, api.FrameExit)
	if got := string(out); strings.Count(got, "marker") <= strings.Count(got, "echo marker") {
		t.Errorf("output %q has no line of the command's output", out)
	}
	if ex.ExitCode == nil || *ex.ExitCode != 3 || ex.Signal != "" {
		t.Fatalf("exit frame %+v, want status 3", ex)
	}
	if st := wantClosed(t, c); st != websocket.StatusNormalClosure {
		t.Fatalf("close status %v, want normal closure", st)
	}
}

func TestTerminalBadControlFramesAreRefusedAndTheStreamGoesOn(t *testing.T) {
	f := newScriptFixture(t, "")
	id := f.create()
	c, _, err := dialTerm(t, f.srv.URL, "/v1/sessions/"+id+"/terminals/main?role=owner", nil)
	if err != nil {
		t.Fatal(err)
	}
	wantFrame(t, c, api.FrameOpened)
	for _, bad := range []string{`not json`, `{}`, `{"type":"dance"}`, `{"type":"resize","cols":0,"rows":10}`, `{"type":"resize","cols":80,"rows":70000}`} {
		send(t, c, websocket.MessageText, bad)
		e := wantFrame(t, c, api.FrameError)
		if e.Fatal || e.Code != wire.CodeBadRequest || e.Message == "" {
			t.Fatalf("%s: error frame %+v, want a non-fatal bad_request", bad, e)
		}
	}
	send(t, c, websocket.MessageBinary, "exit\n")
	wantFrame(t, c, api.FrameExit)
}

func TestTerminalRunnerCrashEndsEveryStreamWithAnError(t *testing.T) {
	f := newScriptFixture(t, testrunner.CrashOnSend)
	id := f.create()
	var conns []*websocket.Conn
	for _, client := range []string{"one", "two"} {
		c, _, err := dialTerm(t, f.srv.URL, "/v1/sessions/"+id+"/terminals/main?role=owner", nil)
		if err != nil {
			t.Fatalf("%s: %v", client, err)
		}
		wantFrame(t, c, api.FrameOpened)
		conns = append(conns, c)
	}
	// The runner dies when a send arrives.
	code, _ := f.do("POST", "/v1/sessions/"+id+"/commands", `{"cmd":"send","text":"boom"}`)
	if code == http.StatusOK {
		t.Fatal("the send survived the crash")
	}
	for i, c := range conns {
		e := wantFrame(t, c, api.FrameError)
		if !e.Fatal || e.Code != wire.CodeRunnerCrashed {
			t.Fatalf("client %d: error frame %+v, want a fatal runner_crashed", i, e)
		}
		if st := wantClosed(t, c); st != websocket.StatusInternalError {
			t.Fatalf("client %d: close status %v, want internal error", i, st)
		}
	}
}

func TestTerminalNeedsTheBearerTokenOnTCP(t *testing.T) {
	f := newScriptFixture(t, "")
	id := f.create()
	auth, err := webauth.New(webauth.Config{Token: "s3cret"})
	if err != nil {
		t.Fatal(err)
	}
	guarded := httptest.NewUnstartedServer(nil)
	guarded.Config.Handler = auth.Guard(webauth.Listener{Addr: guarded.Listener.Addr().String()},
		New(FromManager(f.m), Options{Logger: zaptest.NewLogger(t), Auth: auth}))
	guarded.Start()
	defer guarded.Close()
	path := "/v1/sessions/" + id + "/terminals/main?role=owner"
	for _, token := range []string{"", "wrong"} {
		hdr := http.Header{}
		if token != "" {
			hdr.Set("Authorization", "Bearer "+token)
		}
		_, resp, err := dialTerm(t, guarded.URL, path, hdr)
		if err == nil || resp == nil || resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("token %q: dial err %v, response %v", token, err, resp)
		}
		raw, _ := io.ReadAll(resp.Body)
		if e := errorOf(t, resp.StatusCode, raw); e.Code != wire.CodeUnauthorized {
			t.Fatalf("token %q: %+v", token, e)
		}
	}
	// Another origin is refused before the terminal opens, with the JSON
	// error.
	_, resp, err := dialTerm(t, guarded.URL, path, http.Header{"Authorization": {"Bearer s3cret"}, "Origin": {"http://evil.example"}})
	if err == nil || resp == nil || resp.StatusCode != http.StatusForbidden {
		t.Fatalf("another origin: dial err %v, response %v", err, resp)
	}
	raw, _ := io.ReadAll(resp.Body)
	if e := errorOf(t, resp.StatusCode, raw); e.Code != wire.CodeForbidden {
		t.Fatalf("another origin: %+v", e)
	}
	c, _, err := dialTerm(t, guarded.URL, path, http.Header{"Authorization": {"Bearer s3cret"}})
	if err != nil {
		t.Fatal(err)
	}
	wantFrame(t, c, api.FrameOpened)
	send(t, c, websocket.MessageBinary, "exit\n")
	wantFrame(t, c, api.FrameExit)
	wantClosed(t, c)
}

func TestTerminalKeepsItsRunnerFromTheReaperUntilTheClientLeaves(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	m, err := supervisor.New(supervisor.Config{
		StateDir:   t.TempDir(),
		RunnerPath: testrunner.Path(t),
		// Every runner is past its idle time at once.
		IdleTTL: time.Nanosecond,
		Logger:  zaptest.NewLogger(t),
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(New(FromManager(m), Options{Logger: zaptest.NewLogger(t)}))
	t.Cleanup(func() {
		if err := m.Shutdown(context.Background()); err != nil {
			t.Error(err)
		}
		srv.Close()
		http.DefaultTransport.(*http.Transport).CloseIdleConnections()
		if err := goleak.Find(ignore); err != nil {
			t.Error(err)
		}
	})
	s, err := m.Create(testCtx(t), wire.Spec{Engine: "script", Scenario: testrunner.Scenario(t, echoScenario)})
	if err != nil {
		t.Fatal(err)
	}
	c, _, err := dialTerm(t, srv.URL, "/v1/sessions/"+s.ID+"/terminals/main?role=owner", nil)
	if err != nil {
		t.Fatal(err)
	}
	wantFrame(t, c, api.FrameOpened)
	if n := m.Reap(testCtx(t)); n != 0 || !m.Live(s.ID) {
		t.Fatalf("reaped %d runners with a terminal attached", n)
	}
	if err := c.Close(websocket.StatusNormalClosure, "bye"); err != nil {
		t.Fatal(err)
	}
	// The handler detaches the client after the close handshake.
	deadline := time.Now().Add(10 * time.Second)
	for m.Reap(testCtx(t)) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the runner is still held after its only terminal client left")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if m.Live(s.ID) {
		t.Fatal("reaped runner still live")
	}
}

func TestParseTermQuery(t *testing.T) {
	tests := []struct {
		query   string
		role    string
		cols    uint16
		command []string
		bad     bool
	}{
		{query: "", role: api.RoleReadOnly},
		{query: "role=owner&cols=120&rows=40", role: api.RoleOwner, cols: 120},
		{query: "role=read-only&command=sh&command=-c&command=echo+hi", role: api.RoleReadOnly, command: []string{"sh", "-c", "echo hi"}},
		{query: "role=Owner", bad: true},
		{query: "cols=-1", bad: true},
		{query: "cols=65536", bad: true},
		{query: "rows=ten", bad: true},
		{query: "command=", bad: true},
	}
	for _, tc := range tests {
		t.Run(tc.query, func(t *testing.T) {
			v, _ := url.ParseQuery(tc.query)
			q, err := parseTermQuery(v)
			if tc.bad {
				if !errors.Is(err, wire.ErrBadRequest) {
					t.Fatalf("err = %v, want bad_request", err)
				}
				return
			}
			if err != nil || q.Role != tc.role || q.Cols != tc.cols || strings.Join(q.Command, "|") != strings.Join(tc.command, "|") {
				t.Fatalf("got %+v, %v", q, err)
			}
		})
	}
}
