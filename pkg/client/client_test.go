package client

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/corral-dev/corral/pkg/api"
	"github.com/corral-dev/corral/pkg/command"
	"github.com/corral-dev/corral/pkg/wire"
)

func serveFixed(t *testing.T, status int, contentType, body string) *Client {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if got := r.Header.Get("Authorization"); got != "Bearer tok" {
			t.Errorf("Authorization = %q", got)
		}
		w.Header().Set("Content-Type", contentType)
		w.WriteHeader(status)
		io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	c, err := New(Options{BaseURL: srv.URL, Token: "tok"})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestFailuresComeBackAsTypedErrors(t *testing.T) {
	tests := []struct {
		name   string
		status int
		body   string
		want   error
		msg    string
	}{
		{"supervisor error body", 502, `{"ok":false,"error":{"message":"runner for session x exited with code 3","code":"runner_crashed","statusCode":502,"detail":{"exitCode":3,"stderr":["boom"]}}}`,
			wire.ErrRunnerCrashed, "runner for session x exited with code 3"},
		{"plain 404", 404, "404 page not found", wire.ErrNotFound, "supervisor answered 404: 404 page not found"},
		{"plain 401", 401, "no", wire.ErrUnauthorized, "supervisor answered 401: no"},
		{"plain 500", 500, "oops", wire.ErrInternal, "supervisor answered 500: oops"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := serveFixed(t, tc.status, "application/json", tc.body)
			_, err := c.Session(context.Background(), "x")
			var we *wire.Error
			if !errors.Is(err, tc.want) || !errors.As(err, &we) || we.Message != tc.msg || api.StatusFor(we.Code) != tc.status {
				t.Fatalf("err = %#v, want %v %q", err, tc.want, tc.msg)
			}
		})
	}
	c := serveFixed(t, 502, "application/json", tests[0].body)
	_, err := c.Command(context.Background(), "x", command.Send{Text: "t"})
	var we *wire.Error
	if !errors.As(err, &we) || we.Detail == nil || we.Detail.ExitCode != 3 || we.Detail.Stderr[0] != "boom" {
		t.Fatalf("crash detail lost: %#v", err)
	}
}

func TestRefusedCommandIsAnError(t *testing.T) {
	c := serveFixed(t, 409, "application/json", `{"ok":false,"error":{"message":"busy","code":"conflict","statusCode":409}}`)
	if _, err := c.Command(context.Background(), "x", command.ForkSession{}); !errors.Is(err, wire.ErrConflict) {
		t.Fatalf("err = %v", err)
	}
}

func TestEventStream(t *testing.T) {
	tests := []struct {
		name  string
		body  string
		lines int
		end   error
	}{
		{"ends after replay", "{\"seq\":1}\n\n{\"seq\":2}\n", 2, io.EOF},
		{"ends with the supervisor's reason", "{\"seq\":1}\n{\"ok\":false,\"error\":{\"message\":\"session x was deleted\",\"code\":\"not_found\",\"statusCode\":404}}\n", 1, wire.ErrNotFound},
		{"cut mid-line", "{\"seq\":1}\n{\"seq\":2,\"ty", 1, io.ErrUnexpectedEOF},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := serveFixed(t, 200, "application/x-ndjson", tc.body)
			st, err := c.Events(context.Background(), "x", EventsOptions{From: 1})
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			n := 0
			for {
				_, err := st.Next()
				if err != nil {
					if !errors.Is(err, tc.end) {
						t.Fatalf("ended with %v, want %v", err, tc.end)
					}
					break
				}
				n++
			}
			if n != tc.lines {
				t.Fatalf("%d lines, want %d", n, tc.lines)
			}
		})
	}
}

func TestStateDir(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("CORRAL_STATE", "")
	t.Setenv("XDG_STATE_HOME", "")
	check := func(flag, want string) {
		t.Helper()
		if got, err := StateDir(flag); err != nil || got != want {
			t.Fatalf("StateDir(%q) = %q %v, want %q", flag, got, err, want)
		}
	}
	check("", filepath.Join(home, ".local", "state", "corral"))
	t.Setenv("XDG_STATE_HOME", "/xdg")
	check("", "/xdg/corral")
	t.Setenv("CORRAL_STATE", "/corral")
	check("", "/corral")
	check("/flag", "/flag")
}

func TestNewNeedsAnAddress(t *testing.T) {
	for _, o := range []Options{{}, {BaseURL: "ftp://x"}, {BaseURL: "http://"}, {BaseURL: "::"}} {
		if _, err := New(o); err == nil {
			t.Errorf("New(%+v) accepted", o)
		}
	}
}

func TestUnreachableSupervisorIsUnavailable(t *testing.T) {
	c, err := ForState(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Health(context.Background()); !errors.Is(err, wire.ErrUnavailable) {
		t.Fatalf("err = %v", err)
	}
}
