package client

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/corral-dev/corral/pkg/api"
	"github.com/corral-dev/corral/pkg/wire"
)

// frame is one frame a scripted server sends.
type frame struct {
	typ websocket.MessageType
	p   string
}

func text(p string) frame   { return frame{websocket.MessageText, p} }
func binary(p string) frame { return frame{websocket.MessageBinary, p} }

// scriptedTerminal serves one terminal WebSocket that sends frames, then
// records what the client sends until it closes.
func scriptedTerminal(t *testing.T, frames ...frame) (*Client, <-chan *http.Request, <-chan string) {
	t.Helper()
	reqs := make(chan *http.Request, 1)
	got := make(chan string, 16)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reqs <- r
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			t.Error(err)
			return
		}
		defer c.CloseNow()
		ctx := r.Context()
		for _, f := range frames {
			if err := c.Write(ctx, f.typ, []byte(f.p)); err != nil {
				return
			}
		}
		for {
			typ, p, err := c.Read(ctx)
			if err != nil {
				close(got)
				return
			}
			got <- typ.String() + ":" + string(p)
		}
	}))
	t.Cleanup(srv.Close)
	c, err := New(Options{BaseURL: srv.URL, Token: "tok"})
	if err != nil {
		t.Fatal(err)
	}
	return c, reqs, got
}

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestAttachTerminalSendsTheRequestAndReadsTheStream(t *testing.T) {
	c, reqs, _ := scriptedTerminal(t,
		text(`{"type":"opened","termId":"dev","clientId":"ws-1","role":"read-only","cols":100,"rows":30}`),
		binary("hello "),
		text(`{"type":"error","code":"conflict","message":"this client is read-only"}`),
		text(`{"type":"someday","x":1}`),
		binary("world"),
		text(`{"type":"exit","exitCode":3}`),
	)
	term, err := c.AttachTerminal(ctxFor(t), "s1", TermOptions{TermID: "dev", Cols: 100, Rows: 30, Command: []string{"sh", "-c", "echo hi"}})
	if err != nil {
		t.Fatal(err)
	}
	defer term.Close()
	r := <-reqs
	if r.URL.Path != "/v1/sessions/s1/terminals/dev" || r.Header.Get("Authorization") != "Bearer tok" {
		t.Fatalf("request %s %v", r.URL, r.Header)
	}
	want := url.Values{"role": {"owner"}, "cols": {"100"}, "rows": {"30"}, "command": {"sh", "-c", "echo hi"}}
	if r.URL.Query().Encode() != want.Encode() {
		t.Fatalf("query %q, want %q", r.URL.RawQuery, want.Encode())
	}
	if cols, rows := term.Size(); term.Role() != api.RoleReadOnly || term.TermID() != "dev" || term.ClientID() != "ws-1" || cols != 100 || rows != 30 {
		t.Fatalf("opened: role %s term %s client %s size %dx%d", term.Role(), term.TermID(), term.ClientID(), cols, rows)
	}
	var out strings.Builder
	var notices []string
	for {
		ev, err := term.Next(ctxFor(t))
		if err != nil {
			t.Fatalf("next: %v", err)
		}
		out.Write(ev.Output)
		if ev.Notice != nil {
			if !errors.Is(ev.Notice, wire.ErrConflict) {
				t.Fatalf("notice %+v", ev.Notice)
			}
			notices = append(notices, ev.Notice.Message)
		}
		if ev.Exit != nil {
			if ev.Exit.Code != 3 || ev.Exit.Signal != "" {
				t.Fatalf("exit %+v", ev.Exit)
			}
			break
		}
	}
	if out.String() != "hello world" || len(notices) != 1 {
		t.Fatalf("output %q, notices %q", out.String(), notices)
	}
	if _, err := term.Next(ctxFor(t)); !errors.Is(err, io.EOF) {
		t.Fatalf("after the exit: %v, want EOF", err)
	}
}

func TestTerminalInputAndResizeBecomeFrames(t *testing.T) {
	c, _, got := scriptedTerminal(t, text(`{"type":"opened","role":"owner","cols":80,"rows":24}`))
	term, err := c.AttachTerminal(ctxFor(t), "s1", TermOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := term.Input(ctxFor(t), []byte("ls\r")); err != nil {
		t.Fatal(err)
	}
	if err := term.Resize(ctxFor(t), 132, 43); err != nil {
		t.Fatal(err)
	}
	if err := term.Close(); err != nil {
		t.Fatal(err)
	}
	var frames []string
	for f := range got {
		frames = append(frames, f)
	}
	want := []string{"MessageBinary:ls\r", `MessageText:{"type":"resize","cols":132,"rows":43}`}
	if strings.Join(frames, "|") != strings.Join(want, "|") {
		t.Fatalf("frames %q, want %q", frames, want)
	}
}

func TestTerminalStreamFailuresAreTypedErrors(t *testing.T) {
	opened := text(`{"type":"opened","role":"owner"}`)
	tests := []struct {
		name   string
		frames []frame
		want   error
		says   string
	}{
		{"runner crash", []frame{opened, binary("x"), text(`{"type":"error","code":"runner_crashed","message":"runner was killed by signal SIGKILL","fatal":true}`)},
			wire.ErrRunnerCrashed, "SIGKILL"},
		{"cut as slow", []frame{opened, text(`{"type":"error","code":"timeout","message":"cut","fatal":true}`)}, wire.ErrTimeout, "cut"},
		{"closed without a word", []frame{opened}, wire.ErrUnavailable, "closed the terminal stream"},
		{"garbage text frame", []frame{opened, text(`{"type":`)}, wire.ErrProtocol, "terminal frame"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				c, err := websocket.Accept(w, r, nil)
				if err != nil {
					return
				}
				for _, f := range tc.frames {
					c.Write(r.Context(), f.typ, []byte(f.p))
				}
				c.Close(websocket.StatusGoingAway, "bye")
			}))
			defer srv.Close()
			c, err := New(Options{BaseURL: srv.URL})
			if err != nil {
				t.Fatal(err)
			}
			term, err := c.AttachTerminal(ctxFor(t), "s1", TermOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer term.Close()
			for {
				_, err = term.Next(ctxFor(t))
				if err != nil {
					break
				}
			}
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("err = %v, want %v saying %q", err, tc.want, tc.says)
			}
			if _, again := term.Next(ctxFor(t)); again != err {
				t.Fatalf("a second Next: %v", again)
			}
		})
	}
}

func TestAttachTerminalFailures(t *testing.T) {
	t.Run("refused before the upgrade", func(t *testing.T) {
		c := serveFixed(t, 404, "application/json", `{"ok":false,"error":{"message":"no session s1","code":"not_found","statusCode":404}}`)
		_, err := c.AttachTerminal(ctxFor(t), "s1", TermOptions{})
		if !errors.Is(err, wire.ErrNotFound) || err.Error() != "no session s1" {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("output before the opened frame", func(t *testing.T) {
		c, _, _ := scriptedTerminal(t, binary("x"))
		if _, err := c.AttachTerminal(ctxFor(t), "s1", TermOptions{}); !errors.Is(err, wire.ErrProtocol) {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("no supervisor", func(t *testing.T) {
		c, err := New(Options{Socket: filepath.Join(t.TempDir(), "none.sock")})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.AttachTerminal(ctxFor(t), "s1", TermOptions{}); !errors.Is(err, wire.ErrUnavailable) || !strings.Contains(err.Error(), "none.sock") {
			t.Fatalf("err = %v", err)
		}
	})
}
